
Õ
noinstrmainÃ
main-
p0	parameter€:jit(noinstr)/p0˜&
aadd€ :jit(noinstr)/a˜*
bmultiply€@:jit(noinstr)/b˜4
ttuple"€ "€@:jit(noinstr)/t˜(d0‰
	€  


€€ 
€€ ¹`

€€ € (J€€€€J
€€J€€J€€"(

"i10
"i11
	"i11
	
"i10
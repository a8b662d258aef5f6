
Ú
danglingmainÇ
main.
p0	parameter€:jit(dangling)/p0˜'
aadd€ :jit(dangling)/a˜+
bmultiply€@:jit(dangling)/b˜5
ttuple"€ "€@:jit(dangling)/t˜(d0¦
	€  


€€ 

€€ 

€€ € (J€€#€€J
€€J€€J€€Jç"A

"i10
	‰"i777
"i11(«
"i11
	
"i10
	"i11
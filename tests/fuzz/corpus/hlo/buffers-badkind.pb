
Õ
badkindmainÃ
main-
p0	parameter€:jit(badkind)/p0˜&
aadd€ :jit(badkind)/a˜*
bmultiply€@:jit(badkind)/b˜4
ttuple"€ "€@:jit(badkind)/t˜(d0t
	€  


€€ 

€€ 

€€ € (J€€€€J
€€J€€J€€"

"i10
	
"i10

Ë
twicemain»
main+
p0	parameter€:jit(twice)/p0˜$
aadd€ :jit(twice)/a˜(
bmultiply€@:jit(twice)/b˜2
ttuple"€ "€@:jit(twice)/t˜(d0
	€  


€€ 

€€ 

€€ € (J€€€€J
€€J€€J€€"

"i10
	
"i10
	
"i10

Ð
nofreemain¿
main,
p0	parameter€:jit(nofree)/p0˜%
aadd€ :jit(nofree)/a˜)
bmultiply€@:jit(nofree)/b˜3
ttuple"€ "€@:jit(nofree)/t˜(d0{
	€  


€€ 

€€ 

€€ € (J€€€€J
€€J€€J€€"

"i10
"i11
"i12
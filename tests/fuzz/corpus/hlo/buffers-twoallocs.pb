
ß
	twoallocsmainË
main/
p0	parameter€:jit(twoallocs)/p0˜(
aadd€ :jit(twoallocs)/a˜,
bmultiply€@:jit(twoallocs)/b˜6
ttuple"€ "€@:jit(twoallocs)/t˜(d0†
	€  


€€ 

€€ 

€€ € (J€€€€J
€€J€€J€€"&

"i10
"i1
	
"i10
"i1
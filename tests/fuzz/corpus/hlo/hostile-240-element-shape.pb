
§
hostilemainC
fused
p0	parameter˜
negnegate˜¢(
0M
main
x	parameter
€€@€€@˜"
fusionfusion˜¢²
(0(0
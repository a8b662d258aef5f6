
¦
hostilemainG
fused
p0	parameter˜
negnegate˜¢²
(
0H
main
x	parameter˜"
fusionfusion˜¢²
(0(0

¢
hostilenopeC
fused
p0	parameter˜
negnegate˜¢(
0H
main
x	parameter˜"
fusionfusion˜¢²
(0(0

®
hostilemainC
fused
p0	parameter˜
negnegate˜¢(
0T
main
x	parameter˜.
fusionfusion˜¢²
şÿÿÿÿÿÿÿÿ(0(0

¬
hostilemainC
fused
p0	parameter˜
negnegate˜¢(
0R
main"
x	parameterûÿÿÿÿÿÿÿÿ˜"
fusionfusion˜¢²
(0(0
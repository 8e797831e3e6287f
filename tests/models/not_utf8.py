model = 1
ÿþ

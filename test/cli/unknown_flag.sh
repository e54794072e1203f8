# a mistyped flag exits 2 with a suggestion
$PR check --bach-size 3 net.pbtxt

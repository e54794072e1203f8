# a mistyped command exits 2 with a suggestion
$PR trian net.pbtxt

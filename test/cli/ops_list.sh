# ops lists the registry; ops TYPE prints an OpProto; a typo gets a suggestion
$PR ops | head -n 5
$PR ops mean
$PR ops meen

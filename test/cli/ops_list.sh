# ops lists the registry; ops TYPE prints an OpProto; a typo gets a suggestion
$PR ops | grep -E '^(fc|mean|relu) '
$PR ops mean
$PR ops meen

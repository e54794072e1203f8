# fmt points at the offending token, with a suggestion for misspelled fields
printf 'name: "n"\nop {\n  type: "fc"\n  inptus: "x"\n}\n' > a.pbtxt
$PR fmt a.pbtxt; echo "exit $?"
printf 'name: "n\n' > b.pbtxt
$PR fmt b.pbtxt; echo "exit $?"
printf 'op { type: "fc" ' > c.pbtxt
$PR fmt c.pbtxt; echo "exit $?"
$PR fmt missing.pbtxt

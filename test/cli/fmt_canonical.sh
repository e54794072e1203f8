# fmt prints a NetDesc canonically (field order, indentation) and round-trips
$PR fmt $ROOT/test/cli/data/tiny.pbtxt > a.pbtxt
cat a.pbtxt
$PR fmt a.pbtxt | cmp - a.pbtxt && echo "round trip: identical"

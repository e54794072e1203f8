# a net with a block: fmt round-trips it (text, and binary as protoc encodes
# it); check stops at the BLOCK attribute no op takes yet; --set reaches
# into the block by name and index
B=$ROOT/test/cli/data/blocks.pbtxt
$PR fmt $B > a.pbtxt
sed -n '/^block {/,$p' a.pbtxt
$PR fmt a.pbtxt | cmp - a.pbtxt && echo "round trip: identical"
$PR fmt --binary a.pbtxt > a.bin
protoc --encode=paddle.NetDesc -I $ROOT/proto $ROOT/proto/paddle.proto < a.pbtxt | cmp - a.bin && echo "same bytes as protoc"
# the binary encoding has no place for comments: the same text without them
grep -v '^ *#' a.pbtxt > nc.pbtxt
$PR fmt --from-binary a.bin | $PR fmt - | cmp - nc.pbtxt && echo "binary round trip: identical (but the comments)"
$PR check $B; echo "exit $?"
$PR train $B --set 'block[cell].op[3].type=tahn'; echo "exit $?"
$PR train $B --set 'block[cell].var[x_t].shape=-1'; echo "exit $?"

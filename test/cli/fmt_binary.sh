# --binary writes what protoc --encode writes; --from-binary reads it back
$PR fmt --binary $ROOT/test/cli/data/tiny.pbtxt > a.bin
protoc --encode=paddle.NetDesc -I $ROOT/proto $ROOT/proto/paddle.proto < $ROOT/test/cli/data/tiny.pbtxt > b.bin
cmp a.bin b.bin && echo "same bytes as protoc"
$PR fmt --from-binary a.bin | $PR fmt - | head -n 3
$PR fmt --type paddle.Nope a.bin

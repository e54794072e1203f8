# fmt reads any ONNX model as onnx.ModelProto (Debian's onnx.proto, compiled
# in), the same bytes as protoc --decode would print, and writes it back
T=/usr/share/libonnx-testdata/data/node/test_gemm_alpha/model.onnx
$PR fmt --type onnx.ModelProto --from-binary $T > a.txt
protoc --decode=onnx.ModelProto -I /usr/include/onnx /usr/include/onnx/onnx.proto < $T > b.txt
cmp a.txt b.txt && echo "same text as protoc --decode"
$PR fmt --type onnx.ModelProto --binary a.txt | cmp - $T && echo "same bytes as the file"
head -n 14 a.txt
$PR fmt --type onnx.TensorProto --from-binary /usr/share/libonnx-testdata/data/node/test_gemm_alpha/test_data_set_0/input_0.pb | head -n 6

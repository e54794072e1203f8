# import: an ONNX Gemm (alpha, transposes, bias) becomes our ops; a constant
# weight with a vector bias becomes fc with its parameters; infer runs the
# result with the parameter directory as it is
T=/usr/share/libonnx-testdata/data
$PR import $T/node/test_gemm_all_attributes/model.onnx -o gemm.pbtxt --params-out gp
grep -v '^#' gemm.pbtxt
$PR import $T/pytorch-converted/test_Linear/model.onnx -o linear.pbtxt --params-out lp
grep -v '^# imported' linear.pbtxt | cut -c1-150
ls lp
$PR check linear.pbtxt | head -n 8

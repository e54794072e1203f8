# onnx_conformance.sh — ONNX's own backend test data (Debian's
# libonnx-testdata: data/node, data/pytorch-converted, data/pytorch-operator,
# data/simple) through the importer, by build/test/onnx_conformance: every
# model whose every node (and variant) we claim is imported, fed its
# input_*.pb and compared with its output_*.pb (rtol 1e-3, atol 1e-7); the
# others are skipped naming the unsupported op or variant. Fails on any
# failure, and when the counts differ from those recorded here (and in
# docs/onnx.md), so a claimed test that turns into a skip is noticed too.
# Skipped (exit 77) where libonnx-testdata is not installed.
set -u
EXPECT="261 passed, 0 failed, 811 skipped (54 with inputs folded as constants)"
DATA=$(dpkg -L libonnx-testdata 2>/dev/null | grep '/data/node$' | head -n 1)
[ -n "$DATA" ] && [ -d "$DATA" ] || { echo "skipped: libonnx-testdata is not installed"; exit 77; }
DATA=$(dirname "$DATA")
"$BUILD/test/onnx_conformance" "$DATA/node" "$DATA/pytorch-converted" "$DATA/pytorch-operator" "$DATA/simple" >conf.out
rc=$?
grep -E '^(fail|skip)' conf.out
tail -n 2 conf.out
[ "$rc" -eq 0 ] || { echo "FAIL: onnx_conformance exit $rc"; exit 1; }
got=$(tail -n 2 conf.out | head -n 1)
[ "$got" = "$EXPECT" ] || { echo "FAIL: counts changed: got \"$got\", recorded \"$EXPECT\""; exit 1; }
echo "ok: $got"

# ops_doc_fresh.sh — docs/ops.md must be exactly `paddle-run ops --markdown`;
# regenerate it with `make docs`.
"$PR" ops --markdown > ops.md || exit 1
if ! cmp -s ops.md "$ROOT/docs/ops.md"; then
  echo "docs/ops.md is stale: run \`make docs\`"; diff "$ROOT/docs/ops.md" ops.md | head -n 20; exit 1
fi

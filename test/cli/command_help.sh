# every command answers --help with exit 0
for c in train test plot infer check desc fmt ops gradcheck time; do $PR $c --help >/dev/null || echo "$c --help failed"; done
$PR fmt --help

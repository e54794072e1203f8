# time lists every op of the training step with its pass; --json is one object
$PR time $ROOT/test/cli/data/tiny.pbtxt --iterations 3 --threads 1 | awk '$1 ~ /^[0-9]+$/ { print $1, $2, $3 }'
$PR time $ROOT/test/cli/data/tiny.pbtxt --iterations 2 --json | /usr/bin/python3 -c 'import json, sys; d = json.load(sys.stdin); print(len(d["ops"]), d["batch"], sorted(d)[:4])'
$PR time $ROOT/test/cli/data/tiny.pbtxt --device tpu

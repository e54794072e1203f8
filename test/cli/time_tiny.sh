# time lists every op of the training step with its pass; --json is one object
$PR time $ROOT/test/cli/data/tiny.pbtxt --iterations 3 --threads 1 | awk '$1 ~ /^[0-9]+$/ { print $1, $2, $3 }'
$PR time $ROOT/test/cli/data/tiny.pbtxt --iterations 2 --json | /usr/bin/python3 -c 'import json, sys; d = json.load(sys.stdin); print(len(d["ops"]), d["batch"], sorted(d)[:4])'
$PR time $ROOT/test/cli/data/tiny.pbtxt --device tpu
# the products' own profile: 2 fc forward, 2 dW, 1 dX (the input needs none), a share of the step in (0, 1]
$PR time $ROOT/test/cli/data/tiny.pbtxt --iterations 5 --json | /usr/bin/python3 -c 'import json, sys; p = json.load(sys.stdin)["products"]; print("products a step:", p["calls"], "in parts:", p["calls_in_parts"], "share in (0,1]:", 0 < p["share"] <= 1, "GFLOP/s > 0:", p["gflops"] > 0)'

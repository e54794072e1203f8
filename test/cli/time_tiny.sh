# time lists every op of the training step by its output (an update op by its
# parameter) with its pass; --json is one object
$PR time $ROOT/test/cli/data/tiny.pbtxt --iterations 3 --threads 1 | awk '$1 ~ /^[0-9]+$/ { print $1, $2, $3, $4 }'
$PR time $ROOT/test/cli/data/tiny.pbtxt --iterations 2 --json | /usr/bin/python3 -c 'import json, sys; d = json.load(sys.stdin); print(len(d["ops"]), d["batch"], sorted(d)[:4])'
$PR time $ROOT/test/cli/data/tiny.pbtxt --device tpu
# the products' own profile: 2 fc forward, 2 dW, 1 dX (the input needs none), a share of the step in (0, 1]
$PR time $ROOT/test/cli/data/tiny.pbtxt --iterations 5 --json | /usr/bin/python3 -c 'import json, sys; p = json.load(sys.stdin)["products"]; print("products a step:", p["calls"], "in parts:", p["calls_in_parts"], "share in (0,1]:", 0 < p["share"] <= 1, "GFLOP/s > 0:", p["gflops"] > 0)'
# with data files: each timed step reads a new batch of random rows, and that reading is timed apart
/usr/bin/python3 -c 'import numpy as np; np.save("x.npy", np.arange(40, dtype=np.float32).reshape(10, 4) / 40); np.save("y.npy", (np.arange(10) % 2).reshape(10, 1))'
$PR time $ROOT/test/cli/data/tiny.pbtxt --iterations 5 --batch-size 4 --data x=x.npy --data y=y.npy --json | /usr/bin/python3 -c 'import json, sys; d = json.load(sys.stdin)["data"]; print("data ms > 0:", d["ms"] > 0, "share in (0,1):", 0 < d["share"] < 1)'
$PR time $ROOT/test/cli/data/tiny.pbtxt --iterations 5 --batch-size 4 --data x=x.npy --data y=y.npy | grep -c '^data: .* ms a step (median) reading a batch of random rows, .*% of data and ops$'
# the per-step totals add up: the products' mean time lies inside the ops' mean step
$PR time $ROOT/test/cli/data/tiny.pbtxt --iterations 5 --json | /usr/bin/python3 -c 'import json, sys; d = json.load(sys.stdin); print("products inside the mean step:", 0 < d["products"]["ms"] <= d["step_mean_ms"], "names:", [o["name"] for o in d["ops"][9:]])'

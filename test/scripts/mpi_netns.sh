#!/bin/sh
# mpi_netns.sh — two ranks on two "machines": two network namespaces joined
# by a veth pair, Open MPI over TCP only (btl tcp,self; oob tcp), mpirun in
# the first reaching the second through a launcher that enters its namespace
# (instead of ssh). The parameters equal one process's on one host (float64,
# relative error <= 1e-6), with the gradients summed by MPI's allreduce. Skips only where namespaces cannot be made.
set -eu
. "$ROOT/test/mpi/env.sh"
mpi_available || exit 77
A=pdA$$ B=pdB$$ VA=pdva$$ VB=pdvb$$
cleanup() {
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
}
trap cleanup EXIT
if ! ip netns add "$A" 2>/dev/null || ! ip netns add "$B" 2>/dev/null; then
  echo "skipped: cannot create network namespaces (needs root and CAP_SYS_ADMIN)"
  exit 77
fi
ip link add "$VA" type veth peer name "$VB"
ip link set "$VA" netns "$A"
ip link set "$VB" netns "$B"
ip -n "$A" addr add 10.77.0.1/24 dev "$VA"
ip -n "$B" addr add 10.77.0.2/24 dev "$VB"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set "$VA" up
ip -n "$B" link set "$VB" up

# the launcher: mpirun calls it as `agent [options] HOST COMMAND...`
cat >agent.sh <<AGENT
#!/bin/sh
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
case \$host in 10.77.0.1) ns=$A ;; 10.77.0.2) ns=$B ;; *) echo "agent: unknown host \$host" >&2; exit 1 ;; esac
echo "\$host \$ns" >>"$PWD/agent.log"
exec ip netns exec \$ns sh -c "\$*"
AGENT
chmod +x agent.sh

"$PYTHON" - <<'PY'
import numpy as np
rng = np.random.default_rng(7)
x = rng.normal(size=(150, 5)); w = rng.normal(size=(5, 1))
np.save("x.npy", x); np.save("y.npy", x @ w + 0.1 * rng.normal(size=(150, 1)))
open("net.pbtxt", "w").write("""
name: "line64"
var { name: "x" shape: [-1, 5] dtype: FLOAT64 }
var { name: "y" shape: [-1, 1] dtype: FLOAT64 }
var { name: "w" dtype: FLOAT64 } var { name: "b" dtype: FLOAT64 }
op { type: "fc" inputs: ["x", "w", "b"] outputs: "p" attrs { key: "size" value { i: 1 } } }
op { type: "mse" inputs: ["p", "y"] outputs: "loss" }
train { loss: "loss" batch_size: 25 epochs: 3 seed: 2 optimizer { type: "momentum" lr: 0.05 momentum: 0.9 }
        data { var: "x" file: "x.npy" } data { var: "y" file: "y.npy" } }
""")
PY

"$PR" train net.pbtxt --save one 2>one.log
ip netns exec "$A" timeout 60 mpirun --host 10.77.0.1:1,10.77.0.2:1 -np 2 \
  --mca plm_rsh_agent "$PWD/agent.sh" --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 \
  --mca oob_tcp_if_include 10.77.0.0/24 "$PR" train net.pbtxt --save two --log two.jsonl --comm-timeout 20 \
  >two.log 2>&1 || {
  cat two.log
  exit 1
}
cat two.log
grep -q "10.77.0.2 $B" agent.log || { echo "rank 1 was not launched in namespace $B"; exit 1; }
# two machines: the gradients go through MPI's allreduce, not shared memory
head -n 1 two.jsonl
grep -q '"allreduce":"mpi (the ranks run on more than one machine)"' two.jsonl || {
  echo "two hosts, yet not MPI's allreduce"
  exit 1
}
"$PYTHON" - <<'PY'
import glob, os, numpy as np
def params(d):
    ck = os.path.realpath(d + "/latest")
    return {os.path.basename(f): np.load(f) for f in glob.glob(ck + "/*.npy")}
a, b = params("one"), params("two")
assert a.keys() == b.keys() and a, (a.keys(), b.keys())
e = max(float(np.max(np.abs(a[k] - b[k]))) / max(float(np.max(np.abs(a[k]))), 1e-30) for k in a)
print(f"two hosts over TCP vs one process: parameters rel err {e:.2e}")
assert e <= 1e-6
PY

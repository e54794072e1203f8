# gzip_bomb.py — a gzip data file whose header is honest but huge (issue
# 18.11): [25000000, 4] float32, 400 MB of (mostly) zeros in 2.9 MB. What the
# header says (rows against the other data files, row shape against the net)
# is checked before anything is inflated: exit 2 at once, no memory spent on
# it (peak RSS far below 400 MB) and nothing written into the decoded-data
# cache. Then the cache's cap: PADDLE_RUN_CACHE_MAX keeps a copy out that
# would not fit, and makes room by removing the oldest copy; and its margin:
# no copy that would leave its file system under 1 GiB free.
import glob, os, re, subprocess, sys, time, zlib
import numpy as np

PR = os.environ["PR"]
cache = os.path.abspath("cache")
env = dict(os.environ, PADDLE_RUN_CACHE=cache)
failures = []

rng = np.random.default_rng(11)
np.save("y.npy", rng.integers(0, 2, (32, 1)).astype(np.int64))
open("net.pbtxt", "w").write("""
var { name: "x" shape: [-1, 4] }
var { name: "y" shape: [-1, 1] dtype: INT64 }
op { type: "fc" inputs: ["x", "w1", "b1"] outputs: "logits" attrs { key: "size" value { i: 2 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg" }
train { loss: "avg" batch_size: 8 iterations: 1 optimizer { type: "sgd" lr: 0.01 } data { var: "y" file: "y.npy" } }
""")


def bomb(path, rows, cols):
    """A one-member gzip .npy of rows x cols float32: 1 MiB of random bytes
    (so the file is large enough to be cached), then zeros."""
    header = np.lib.format.header_data_from_array_1_0(np.zeros((1, cols), np.float32))
    header["shape"] = (rows, cols)
    import io

    h = io.BytesIO()
    np.lib.format.write_array_header_1_0(h, header)
    c = zlib.compressobj(1, zlib.DEFLATED, 31)
    parts = [c.compress(h.getvalue()), c.compress(rng.bytes(1 << 20))]
    left, zeros = rows * cols * 4 - (1 << 20), bytes(1 << 22)
    while left > 0:
        parts.append(c.compress(zeros[: min(left, len(zeros))]))
        left -= len(zeros)
    parts.append(c.flush())
    open(path, "wb").write(b"".join(parts))
    return sum(map(len, parts))


def run(args, extra_env=None):
    """Runs paddle-run; returns exit code, output, seconds, peak RSS in MB."""
    t = time.time()
    p = subprocess.Popen([PR] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=dict(env, **(extra_env or {})))
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, out, time.time() - t, ru.ru_maxrss / 1024


def cached():
    return sorted(glob.glob(os.path.join(cache, "*")))


size = bomb("bomb.npy.gz", 25_000_000, 4)
print(f"bomb.npy.gz: {size} bytes, header [25000000, 4] float32 (400 MB)")
cases = [
    ("rows", "bomb.npy.gz", "bomb.npy.gz has 25000000 rows but y.npy has 32; data files of one net must agree"),
]
bomb("bomb5.npy.gz", 25_000_000, 5)
cases.append(("shape", "bomb5.npy.gz",
               'bomb5.npy.gz: rows have shape [5], but variable "x" wants rows of shape [4]'))
for label, f, want in cases:
    rc, out, secs, rss = run(["train", "net.pbtxt", "--data", f"x={f}"])
    print(f"{label}: exit {rc} in {secs:.2f} s, peak RSS {rss:.0f} MB, cache {cached()}")
    if rc != 2 or want not in out:
        failures.append(f"{label}: expected exit 2 and '{want}', got exit {rc}:\n{out[-800:]}")
    if rss > 100:
        failures.append(f"{label}: peak RSS {rss:.0f} MB: the 400 MB the header promises were inflated")
    if cached():
        failures.append(f"{label}: the cache holds {cached()} after a refused file")
    if secs > 5:
        failures.append(f"{label}: {secs:.1f} s to refuse a header")

# The cap. x.npy.gz and x2.npy.gz: 3.2 MB each decoded, ~2.9 MB gzip'd.
for name in ("x.npy.gz", "x2.npy.gz"):
    np.save("tmp.npy", rng.normal(size=(200000, 4)).astype(np.float32))
    open(name, "wb").write(zlib.compress(open("tmp.npy", "rb").read(), 1, wbits=31))
    assert os.path.getsize(name) >= 1 << 20, (name, os.path.getsize(name))
np.save("y.npy", rng.integers(0, 2, (200000, 1)).astype(np.int64))

rc, out, _, _ = run(["train", "net.pbtxt", "--data", "x=x.npy.gz"], {"PADDLE_RUN_CACHE_MAX": "1M"})
if rc != 0 or cached():
    failures.append(f"cap 1M: exit {rc}, cache {cached()} (a 3.2 MB copy must not be kept):\n{out[-500:]}")
rc, out, _, _ = run(["train", "net.pbtxt", "--data", "x=x.npy.gz"], {"PADDLE_RUN_CACHE_MAX": "4M"})
first = cached()
if rc != 0 or len(first) != 1:
    failures.append(f"cap 4M: exit {rc}, cache {first} (the copy of x.npy.gz fits):\n{out[-500:]}")
rc, out, _, _ = run(["train", "net.pbtxt", "--data", "x=x2.npy.gz"], {"PADDLE_RUN_CACHE_MAX": "4M"})
second = cached()
if rc != 0 or len(second) != 1 or second == first:
    failures.append(f"cap 4M, a second file: exit {rc}, cache {first} -> {second} (the older copy must make room)")
ino = "%x" % os.stat("x2.npy.gz").st_ino
if second and not re.search(rf"-{ino}\.data$", second[0]):
    failures.append(f"the copy kept is {second[0]}, not x2.npy.gz's (inode {ino})")
print(f"cap: 1M keeps none; 4M keeps {[os.path.basename(p) for p in first]}, "
      f"then {[os.path.basename(p) for p in second]}")

# The free-disk margin: a cache on a 64 MB file system (a tmpfs in a mount
# namespace of its own; where that cannot be made, this part is skipped)
# keeps no copy, since it would leave less than 1 GiB free.
small = os.path.abspath("small")
os.mkdir(small)
probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=64m tmpfs {small}"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
if probe.returncode != 0:
    print(f"margin: not checked (cannot mount a tmpfs here: {probe.stdout.strip()[:100]})")
else:
    r = subprocess.run(["unshare", "-m", "sh", "-c",
                        f'mount -t tmpfs -o size=64m tmpfs {small} && PADDLE_RUN_CACHE={small}/cache "$0" train '
                        f'net.pbtxt --data x=x.npy.gz && ls -A {small}/cache', PR],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    if r.returncode != 0 or ".data" in r.stdout.split("finished:")[-1]:
        failures.append(f"margin: exit {r.returncode}; a copy was kept on a 64 MB file system:\n{r.stdout[-500:]}")
    else:
        print("margin: a 64 MB file system keeps no copy")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("gzip_bomb: refused from the header alone; the cache stays under its cap")

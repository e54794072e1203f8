#!/usr/bin/env python3
"""bench.py — paddle-run's benchmarks, run by `make bench` through
bench/run.sh after it compiled the C drivers (bench/*.c) into BUILD/bench.
Measures the machine's float32 FMA peak per core, text-format parsing
against protoc, per-op dispatch, start-up, fashion_mlp training (optionally
against PyTorch), the BLIS GEMM limit, inference and fashion_cnn training
(with Adam and with momentum SGD) against PyTorch, and a tiny net's training
step against PyTorch's; every figure is the median of at least 5 runs (3
for the CNN, whose runs are long), shown with its min and max, throughputs
also as a share of the peak. PyTorch runs in every configuration of
PEER_CONFIGS (threading variables, kernel sets, layouts), each shown, and
ratios are taken against the best.
Wherever ours is compared with PyTorch, both start from the same parameters
with the same batches in the same order, and their losses must agree to 1e-4
relative or the bench fails (exit 1; the report goes to
bench/out/RESULTS.failed.md). A "Targets" table lists issue 6's targets. Prints a table and writes bench/RESULTS.md; with --only it
writes bench/out/RESULTS.only.md instead, or with --merge puts the sections it
ran into bench/RESULTS.md in place of their old figures, keeping the rest.
    bench.py --build BUILD [--torch STATUS] [--quick | --smoke] [--only SECTIONS [--merge]]"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

import lm_variants

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NET = "netdescs/fashion_mlp.pbtxt"
CNN = "netdescs/fashion_cnn.pbtxt"
CNN3 = "netdescs/fashion_cnn3.pbtxt"
DATA = "/usr/share/datasets/fashion-mnist/"
PY = "/usr/bin/python3"


# ---- helpers ------------------------------------------------------------------

def sh(cmd, tries=3, env=None):
    """Runs cmd (a list), returns stdout; stops the benchmark when it fails
    `tries` times in a row. (Retried because on a shared machine a run can be
    killed from outside, e.g. by someone's `pkill -f paddle-run`.)"""
    for attempt in range(tries):
        p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, **env) if env else None)
        if p.returncode == 0:
            return p.stdout
        sys.stderr.write(f"bench: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}\n")
        if attempt + 1 < tries:
            sys.stderr.write("bench: retrying\n")
            RETRIES.append(" ".join(cmd[:8]))
    sys.exit(1)


def timings(out):
    """The per-run figures a bench driver (bench/*.c) printed: its lines that are not `#` comments."""
    return [float(l) for l in out.splitlines() if l and not l.startswith("#")]


RETRIES = []
PEER_SEEN = set()  # what PyTorch's processes reported, for the notes
LOSS_FAIL = []  # loss-agreement checks that failed: the run is not the same computation


def quiet_out(cmd):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip()
    except OSError:
        return ""


class Stat:
    """Median, min and max of a list of samples."""

    def __init__(self, xs):
        xs = [x for x in xs if x is not None]
        self.n = len(xs)
        self.med = statistics.median(xs) if xs else float("nan")
        self.lo = min(xs) if xs else float("nan")
        self.hi = max(xs) if xs else float("nan")

    def fmt(self, spec):
        return f"{self.med:{spec}} ({self.lo:{spec}} – {self.hi:{spec}})"


def cpu_pressure():
    """/proc/pressure/cpu 'some avg10' (share of the last 10 s in which some task waited for a CPU)."""
    try:
        with open("/proc/pressure/cpu") as f:
            return float(re.search(r"avg10=([\d.]+)", f.readline()).group(1))
    except (OSError, AttributeError):
        return None


def stall_us():
    """/proc/pressure/cpu 'some total': microseconds in which some task waited for a CPU, since boot."""
    try:
        with open("/proc/pressure/cpu") as f:
            return int(re.search(r"total=(\d+)", f.readline()).group(1))
    except (OSError, AttributeError):
        return None


class StallMeter:
    """Share of wall time in which some task waited for a CPU, over an interval."""

    def __init__(self):
        self.t, self.s = time.time(), stall_us()

    def share(self):
        s = stall_us()
        if s is None or self.s is None:
            return None
        return (s - self.s) / 1e6 / max(time.time() - self.t, 1e-9) * 100


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return None


def _blocks(lines):
    """Splits markdown lines at its `## ` headings: [(heading or None, lines)]."""
    out = [(None, [])]
    for line in lines:
        if line.startswith("## "):
            out.append((line, [line]))
        else:
            out[-1][1].append(line)
    return out


def _merge_items(old, new, pattern):
    """Replaces the numbered items (lines matching pattern, group 1 the section number) of old that new has,
    adds new's other items, and keeps them in section order; old's other lines stay where they were."""
    num = lambda line: int(re.match(pattern, line).group(1))  # noqa: E731
    new_items = [l for l in new if re.match(pattern, l)]
    old_pos = [i for i, l in enumerate(old) if re.match(pattern, l)]
    if not old_pos:
        return new
    nums = {num(l) for l in new_items}
    items = [l for l in old[old_pos[0]:old_pos[-1] + 1] if re.match(pattern, l) and num(l) not in nums]
    items = sorted(items + new_items, key=num)  # stable: a section's rows keep their order
    return old[:old_pos[0]] + items + old[old_pos[-1] + 1:]


def merge_results(path, new_lines, env, sections):
    """Puts the sections of new_lines (a report of a --only run) into the RESULTS.md at path in place of their
    old figures; the other sections' figures, the header and the notes stay. Falls back to writing new_lines
    when there is no old file."""
    try:
        with open(path) as f:
            old_lines = f.read().split("\n")
    except OSError:
        old_lines = []
    if not old_lines or not old_lines[0].startswith("# paddle-run benchmarks"):
        return new_lines
    new = dict((h, ls) for h, ls in _blocks(new_lines))
    row, item = r"\| (\d+)\. ", r"(\d+)\. "
    label = {int(re.match(row, l).group(1)): l.split("|")[1].strip()
             for l in new.get("## Results", []) if re.match(row, l)}
    nums = sorted(label)
    out = []
    seen = set()
    for head, ls in _blocks(old_lines):
        seen.add(head)
        if head is None:
            ours = next((l for l in new[None] if l.startswith("| PyTorch |")), None)
            ls = [ours if l.startswith("| PyTorch | not used") and ours and "not used" not in ours else l
                  for l in ls]
        elif head == "## Results" or head.startswith("## Load on the machine") or head == "## Targets":
            ls = _merge_items(ls, new.get(head, []), row)
        elif head.startswith("## How each figure"):
            ls = _merge_items(ls, [l for l in new.get(head, []) if re.match(item, l) and
                                   int(re.match(item, l).group(1)) in nums], item)
        elif head == "## Notes":
            ls = [l for l in ls if not (re.match(r"- (\d+)\. ", l) and int(re.match(r"- (\d+)\. ", l).group(1))
                                        in nums)]
            while ls and not ls[-1].strip():
                ls.pop()
            if len(ls) == 1:
                ls.append("")
        elif head in new:
            ls = new[head]
        out += ls
        if head == "## Results" and "## Targets" not in (h for h, _ in _blocks(old_lines)) and "## Targets" in new:
            out += new["## Targets"]
    # the machine too: sessions run on different CPUs, and the table at the top names only its own run's
    kernels = re.search(r"kernels '([^']+)'", env.get("paddle", ""))
    machine = f"{env['cpu']}, {env['cores']} cores{', BLIS kernels ' + repr(kernels.group(1)) if kernels else ''}"
    added = [f"- {label[n]}: measured by a separate run (`BENCH_ONLY={sections} BENCH_MERGE=1 make bench`) on "
             f"{env['date']} on {machine}, commit {env['commit']}{' + local changes' if env['dirty'] else ''}; "
             "the other sections' figures come from the run dated in the table at the top." for n in nums]
    added += [l for l in new.get("## Notes", []) if l.startswith("- ") and l not in out]
    if added:
        if "## Notes" not in seen:
            while out and not out[-1].strip():
                out.pop()
            out += ["", "## Notes", ""]
        out += added + [""]
    return out


# ---- the peer, PyTorch, in every configuration tried ------------------------------

# Debian's PyTorch multiplies matrices with BLIS (its OpenMP flavour), and torch.set_num_threads(N) does not
# thread BLIS: its products stay on one core unless BLIS_NUM_THREADS or OMP_NUM_THREADS is set too, before torch
# is imported. So every peer figure is measured in each of these configurations, one compare_torch.py --serve
# process per environment, and compared against the best at each thread count. Each entry: key, label,
# environment ({n}: the thread count), in-process knobs (compare_torch.KNOBS), the sections it applies to (None:
# all), whether it needs AVX-512, the fewest threads it applies at. Tried and left out: OMP_WAIT_POLICY=active
# and GOMP_SPINCOUNT=infinite (longer spinning than GOMP's default, which already spans the gaps between a
# step's parallel regions), GOMP_SPINCOUNT=0 (what passive does), convolutions without oneDNN
# (torch.backends.mkldnn.enabled = False: about half the speed in a trial), set_num_interop_threads (eager
# training and inference never use the inter-op pool; compare_torch.py sets it to 1).
PEER_CONFIGS = [
    ("alone", "set_num_threads(N) alone", {}, (), None, False, 1),
    ("blis", "+ BLIS_NUM_THREADS=N", {"BLIS_NUM_THREADS": "{n}"}, (), None, False, 1),
    ("omp", "+ OMP_NUM_THREADS=N", {"OMP_NUM_THREADS": "{n}"}, (), None, False, 1),
    ("both", "+ BLIS_NUM_THREADS=N OMP_NUM_THREADS=N", {"BLIS_NUM_THREADS": "{n}", "OMP_NUM_THREADS": "{n}"}, (),
     None, False, 1),
    # ATen's own kernels (elementwise, softmax, the optimizer's updates) in AVX-512 rather than the AVX2 it
    # picks by default; BLIS and oneDNN choose for themselves either way
    ("avx512", "+ both + ATEN_CPU_CAPABILITY=avx512", {"BLIS_NUM_THREADS": "{n}", "OMP_NUM_THREADS": "{n}",
                                                       "ATEN_CPU_CAPABILITY": "avx512"}, (), None, True, 1),
    # OpenMP workers that sleep at once instead of spinning: on 2 cores shared with anything else, spinning
    # workers take the core the other thread needs
    ("passive", "+ both + OMP_WAIT_POLICY=passive", {"BLIS_NUM_THREADS": "{n}", "OMP_NUM_THREADS": "{n}",
                                                     "OMP_WAIT_POLICY": "passive"}, (), None, False, 2),
    # the CNN with model and input in channels-last (NHWC), the layout oneDNN's convolutions work in
    ("nhwc", "+ both, channels_last", {"BLIS_NUM_THREADS": "{n}", "OMP_NUM_THREADS": "{n}"}, ("channels_last",),
     {"cnn"}, False, 1),
    # batch-1 inference under torch.inference_mode() rather than torch.no_grad()
    ("infmode", "+ both, inference_mode", {"BLIS_NUM_THREADS": "{n}", "OMP_NUM_THREADS": "{n}"},
     ("inference_mode",), {"infer"}, False, 1),
]
# variables cleared from the peer's environment before each configuration adds its own, so that `alone` is
# set_num_threads alone whatever the bench was started with
PEER_ENV = ("BLIS_NUM_THREADS", "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "ATEN_CPU_CAPABILITY",
            "OMP_PROC_BIND", "DNNL_MAX_CPU_ISA", "MKL_NUM_THREADS", "BLIS_JC_NT", "BLIS_IC_NT", "BLIS_JR_NT",
            "BLIS_IR_NT")


class Peer:
    """compare_torch.py --serve processes, one per environment (started on first use, kept for the section),
    and the configurations of a section. A new comparison (the recurrent nets, say) needs only its model in
    compare_torch.py and a loop over configs() calling train() / ask(): every configuration comes with it."""

    def __init__(self, section):
        self.section = section
        self.procs = {}
        self.version = None
        self.seen = {}  # config key -> what its process reported (environment, ATen's kernels)
        self.failed = None

    @staticmethod
    def configs(t, section):
        """The configurations for `section` at t threads: dicts with key, label, env, knobs. BENCH_PEER=key,...
        narrows them (e.g. for a quick look)."""
        want = os.environ.get("BENCH_PEER")
        want = set(want.split(",")) if want else None
        avx512 = "avx512f" in quiet_out(["grep", "-m1", "-o", "avx512f", "/proc/cpuinfo"])
        out = []
        for key, label, env, knobs, sections, needs512, min_t in PEER_CONFIGS:
            if ((sections and section not in sections) or (needs512 and not avx512) or t < min_t or
                    (want and key not in want)):
                continue
            out.append({"key": key, "label": label.replace("=N", f"={t}").replace("(N)", f"({t})"), "knobs": list(knobs),
                        "env": {k: v.format(n=t) for k, v in env.items()}})
        return out

    def _proc(self, cfg):
        env_key = tuple(sorted(cfg["env"].items()))
        if env_key in self.procs:
            return self.procs[env_key]
        env = {k: v for k, v in os.environ.items() if k not in PEER_ENV}
        env.update(cfg["env"])
        p = subprocess.Popen([PY, "bench/compare_torch.py", "--serve"], cwd=ROOT, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
        line = p.stdout.readline()
        if not line:
            self.failed = "compare_torch.py did not start"
            p = None
        else:
            ready = json.loads(line)
            self.version = ready.get("torch")
            self.seen[env_key] = ready
        self.procs[env_key] = p
        return p

    def ask(self, cfg, req):
        """One request to the configuration's process, the knobs added: its answer, or None."""
        p = self._proc(cfg)
        if p is None:
            return None
        try:
            p.stdin.write(json.dumps(dict(req, knobs=cfg["knobs"])) + "\n")
            p.stdin.flush()
            return json.loads(p.stdout.readline())
        except (OSError, ValueError):
            sys.stderr.write(f"bench: compare_torch.py ({cfg['label']}) stopped answering\n")
            self.failed = "compare_torch.py stopped answering"
            self.procs[tuple(sorted(cfg["env"].items()))] = None
            return None

    def train(self, cfg, b, t, iters, every, model="mlp", params=None, dropout=0.5, optimizer="adam"):
        """(examples/s, {step: mean loss of the interval ending there}) of one training run, or (None, {})."""
        res = self.ask(cfg, {"batch": b, "threads": t, "iterations": iters, "warmup": every, "model": model,
                             "params": params, "shuffle": params is None, "dropout": dropout,
                             "optimizer": optimizer})
        if not res or "examples_per_sec" not in res:
            return None, {}
        return res["examples_per_sec"], {o["step"]: o["loss"] for o in res.get("losses", [])}

    def describe(self):
        """What the processes saw, one entry per environment, for the notes."""
        return [f"{', '.join(f'{k}={v}' for k, v in r.get('env', {}).items()) or 'no threading variables'}: ATen "
                f"kernels {r.get('capability')}" for r in self.seen.values()]

    def close(self):
        for p in self.procs.values():
            if p:
                p.stdin.close()
                p.wait()
        self.procs = {}


def product_flops(macs, first_has_dx=False):
    """FLOPs per example of the matrix products of a training step, from the multiply-adds per example of
    each layer's forward product (first layer first): forward, the weights' gradient and the input's gradient
    for every layer, except the first layer's input gradient (its input is data: nothing asks for it)."""
    return sum(2 * m * 3 for m in macs) - (0 if first_has_dx else 2 * macs[0])


def nudge_conv_biases(d, names, value=0.01):
    """Sets the biases NAME.b.npy in the parameter directory d to `value`. With the initializer's zero biases,
    the CNNs' pre-activations are exactly 0 over the images' blank background, where ReLU's gradient
    steps; Winograd F(4x4, 3x3) and F(4x4, 5x5) leave ~1e-9 there (their transforms' rounding), which opens
    the gate, and the biases' first gradients differ by up to ~25% of their largest from PyTorch's (the loss
    by 7e-5 at step 2 with Adam, 2e-3 by step 4). Away from the step, both sides compute the same (Adam: 2e-7
    to step 4)."""
    import numpy as np
    for n in names:
        b = np.load(os.path.join(d, f"{n}.b.npy"))
        np.save(os.path.join(d, f"{n}.b.npy"), np.full(b.shape, value, dtype=b.dtype))


# multiply-adds per example of each layer's product
MLP_MACS = [784 * 512, 512 * 256, 256 * 10]
CNN_MACS = [28 * 28 * 32 * 1 * 25, 14 * 14 * 64 * 32 * 25, 3136 * 256, 256 * 10]  # conv1, conv2, fc1, fc2
# c11, c12, c21, c22, fc1, fc2, as direct products (Winograd does fewer multiplications for the same work)
CNN3_MACS = [28 * 28 * 32 * 1 * 9, 28 * 28 * 32 * 32 * 9, 14 * 14 * 64 * 32 * 9, 14 * 14 * 64 * 64 * 9, 3136 * 256,
             256 * 10]
TINY_MACS = [16 * 16, 16 * 2]


class Bench:
    def __init__(self, args):
        self.a = args
        self.build = args.build
        self.bin = os.path.join(self.build, "paddle-run")
        self.drv = os.path.join(self.build, "bench")
        self.out = os.path.join(ROOT, "bench", "out")
        os.makedirs(self.out, exist_ok=True)
        # the decoded-data cache of every run here: the bench's own, not the user's (section 3 turns it off for
        # the first-run figure)
        os.environ.setdefault("PADDLE_RUN_CACHE", os.path.join(self.out, "cache"))
        self.runs = 5 if args.quick else 7
        self.train_runs = self.runs
        self.cnn_runs = 3  # each run of the CNN is 15-40 s; 3 keeps the section near 5 minutes
        self.rows = []        # (section, figure, value text, goal text)
        self.notes = []
        self.env = {}
        self.contention = []  # (section, cpu pressure, load) when each section started
        self.quiet_budget = 0 if args.quick else 60.0
        self.torch_version = None
        self.targets = []     # (section, target, achieved, met) for the Targets table
        if args.smoke:  # the machinery end to end in minutes; its figures mean nothing
            self.runs, self.cnn_runs, self.quiet_budget = 3, 1, 0

    # --- bookkeeping ---
    def row(self, section, figure, value, goal=""):
        self.rows.append((section, figure, value, goal))
        print(f"  {figure:<58} {value}  {goal}", flush=True)

    def wait_quiet(self):
        """Waits (a bounded time over the whole bench) for other work on the machine to calm down."""
        waited = 0.0
        while self.quiet_budget > 0:
            p = cpu_pressure()
            if p is None or p < 10:
                break
            time.sleep(2)
            waited += 2
            self.quiet_budget -= 2
        return waited

    def section(self, name):
        """Waits (a bounded time in all) for other work on the machine to calm down, and records the load."""
        waited = self.wait_quiet()
        self.end_section()
        p, l = cpu_pressure(), loadavg()
        self.contention.append([name, p, l, waited, None])
        self.meter = StallMeter()
        print(f"\n== {name}  (cpu pressure avg10 {p}%, load {l}{f', waited {waited:.0f} s' if waited else ''})",
              flush=True)

    def end_section(self):
        if self.contention and self.contention[-1][4] is None:
            self.contention[-1][4] = self.meter.share()

    def exec_times(self, n, cmd, stdin="-", stdout="/dev/null", env=None):
        """Wall seconds and peak RSS (KiB) of n runs of cmd, via bench_exec."""
        res = sh([os.path.join(self.drv, "bench_exec"), str(n), stdin, stdout, "--"] + cmd, env=env)
        out = [tuple(float(x) for x in line.split()) for line in res.splitlines() if line.strip()]
        return [t for t, _ in out], [r for _, r in out]

    # --- environment ---
    def environment(self):
        cpu = ""
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        cpu = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        lscpu = quiet_out(["lscpu"])
        m = re.search(r"Model name:\s*(.*)", lscpu)
        if m and m.group(1).strip() and m.group(1).strip() != cpu:
            cpu = f"{cpu} ({m.group(1).strip()})" if cpu else m.group(1).strip()
        fam = re.search(r"CPU family:\s*(\d+)", lscpu)
        mod = re.search(r"Model:\s*(\d+)", lscpu)
        if fam and mod:
            cpu += f", family {fam.group(1)} model {mod.group(1)}"
        if "avx512f" in quiet_out(["grep", "-m1", "-o", "avx512f", "/proc/cpuinfo"]):
            cpu += ", AVX-512"
        # the flavour the binary is linked with (the Makefile picks it by path)
        linked = re.search(r"libblis\.so\S* => (\S+)", quiet_out(["ldd", self.bin]))
        blis_variant = linked.group(1) if linked else ""
        self.env = {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cpu": cpu or platform.processor(),
            "cores": os.cpu_count(),
            "blis": quiet_out(["dpkg-query", "-W", "-f", "${Version}", "libblis4"]) or "unknown",
            "blis_variant": blis_variant or "unknown",
            "protoc": quiet_out(["protoc", "--version"]),
            "cc": quiet_out(["cc", "--version"]).splitlines()[0] if quiet_out(["cc", "--version"]) else "",
            "paddle": "; ".join(quiet_out([self.bin, "--version"]).splitlines()),  # one table cell
            "commit": quiet_out(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]),
            "dirty": bool(quiet_out(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"])),
            "kernel": platform.release(),
        }

    # --- 1. parsing ---
    def parse(self):
        self.section("1. text-format parse")
        big = os.path.join(self.out, "big.pbtxt")
        nops = sh([PY, "bench/gen_netdesc.py", big, "10"]).strip()
        size = os.path.getsize(big)
        mb = size / 1e6
        res = sh([os.path.join(self.drv, "bench_parse"), big, str(self.runs)])
        lines = [l.split() for l in res.splitlines() if l and not l.startswith("#")]
        ours_nomap = Stat([mb / float(a) for a, _ in lines])
        ours_map = Stat([mb / float(b) for _, b in lines])
        proto = ["protoc", "--encode=paddle.NetDesc", "-I", "proto", "proto/paddle.proto"]
        empty = os.path.join(self.out, "empty.pbtxt")
        open(empty, "w").close()
        # alternate full and empty runs so drift hits both alike
        full_t, empty_t = [], []
        for _ in range(self.runs):
            full_t += self.exec_times(1, proto, stdin=big)[0]
            empty_t += self.exec_times(1, proto, stdin=empty)[0]
        start = statistics.median(empty_t)
        theirs_raw = Stat([mb / t for t in full_t])
        theirs_cor = Stat([mb / (t - start) for t in full_t if t > start])
        # same bytes out? (our parse + protobuf-c pack against protoc's encoder)
        ours_bin = os.path.join(self.out, "big.ours.bin")
        theirs_bin = os.path.join(self.out, "big.protoc.bin")
        self.exec_times(1, [self.bin, "fmt", big, "--binary"], stdout=ours_bin)
        self.exec_times(1, proto, stdin=big, stdout=theirs_bin)
        same = open(ours_bin, "rb").read() == open(theirs_bin, "rb").read()
        S = "1. parse"
        self.row(S, f"input: generated NetDesc, {mb:.1f} MB, {nops} ops + {nops} vars", "")
        self.row(S, "ours, pd_text_parse, no source map (MB/s)", ours_nomap.fmt(".1f"))
        self.row(S, "ours, pd_text_parse with source map, as pd_net_load (MB/s)", ours_map.fmt(".1f"))
        self.row(S, "protoc --encode, whole process (MB/s)", theirs_raw.fmt(".1f"))
        self.row(S, f"protoc --encode, minus start-up {start * 1e3:.1f} ms (MB/s)", theirs_cor.fmt(".1f"))
        self.row(S, "ratio ours (with map) / protoc, whole process", f"{ours_map.med / theirs_raw.med:.2f}x",
                 "goal >= 2x")
        self.row(S, "ratio ours (with map) / protoc, start-up corrected", f"{ours_map.med / theirs_cor.med:.2f}x",
                 "goal >= 2x " + ("met" if ours_map.med / theirs_cor.med >= 2 else "NOT met"))
        self.targets.append((S, "text-format parse >= 2x libprotobuf's TextFormat (protoc, start-up corrected)",
                             f"{ours_map.med / theirs_cor.med:.2f}x", ours_map.med / theirs_cor.med >= 2))
        self.row(S, "ratio ours (no map) / protoc, start-up corrected", f"{ours_nomap.med / theirs_cor.med:.2f}x")
        self.row(S, "`paddle-run fmt --binary` bytes == `protoc --encode` bytes", "yes" if same else "NO")

    # --- 2. dispatch ---
    def dispatch(self):
        self.section("2. per-op dispatch")
        res = sh([os.path.join(self.drv, "bench_dispatch"), "1000", str(self.runs)])
        lines = [[float(x) for x in l.split()] for l in res.splitlines() if l and not l.startswith("#")]
        runner = Stat([l[0] for l in lines])
        kernel = Stat([l[1] for l in lines])
        inline = Stat([l[2] for l in lines])
        over = Stat([l[0] - l[1] for l in lines])
        build = {}
        for n in (1000, 4000):
            ms = []
            for _ in range(5):
                head = sh([os.path.join(self.drv, "bench_dispatch"), str(n), "0"]).splitlines()[0]
                ms.append(float(re.search(r"build_ms ([\d.]+)", head).group(1)))
            build[n] = Stat(ms)
        S = "2. dispatch"
        self.row(S, "chain of 1000 `scale` ops on [1], pd_runner_run (ns/op)", runner.fmt(".1f"),
                 "goal < 1000 ns " + ("met" if runner.med < 1000 else "NOT met"))
        self.row(S, "the same kernels called directly, no runner (ns/op)", kernel.fmt(".1f"))
        self.row(S, "bare arithmetic of 1 element, for scale (ns/op)", inline.fmt(".1f"))
        self.row(S, "runner overhead = runner - direct kernel (ns/op)", over.fmt(".1f"))
        self.row(S, "building the net: 1000 ops (ms, pd_net_from_text + kernels)", build[1000].fmt(".1f"))
        self.row(S, "building the net: 4000 ops (ms)", build[4000].fmt(".1f"),
                 f"{build[4000].med / build[1000].med:.1f}x for 4x the ops")

    # --- 3. start-up ---
    def startup(self):
        self.section("3. start-up")
        import numpy as np  # /usr/bin/python3 has it (a test dependency)
        params = os.path.join(self.out, "params")
        shutil.rmtree(params, ignore_errors=True)
        sh([self.bin, "train", NET, "--iterations", "1", "--save", params])
        one = os.path.join(self.out, "one_row.npy")
        np.save(one, np.zeros((1, 28, 28), dtype=np.uint8))
        px = os.path.join(self.out, "px256.npy")
        lb = os.path.join(self.out, "lb256.npy")
        rng = np.random.default_rng(1)
        np.save(px, rng.integers(0, 256, (256, 28, 28), dtype=np.uint8))
        np.save(lb, rng.integers(0, 10, (256, 1), dtype=np.int64))
        self.params = params
        n = self.runs
        ver = Stat(self.exec_times(n, [self.bin, "--version"])[0])
        chk = Stat(self.exec_times(n, [self.bin, "check", NET])[0])
        inf = Stat(self.exec_times(n, [self.bin, "infer", NET, "--params", params, "--data", f"pixels={one}",
                                       "--fetch", f"prob={self.out}/one_prob.npy"])[0])
        inf_p = Stat(self.exec_times(n, [self.bin, "infer", NET, "--params", params, "--data", f"pixels={one}",
                                         "--fetch", f"prob={self.out}/one_prob.npy"],
                                     env={"OMP_WAIT_POLICY": "passive"})[0])
        log = os.path.join(self.out, "startup.jsonl")
        tr_gz, first_gz = [], []
        small = ["--data", f"pixels={px}", "--data", f"label={lb}", "--eval-data", f"pixels={px}",
                 "--eval-data", f"label={lb}"]
        # the same net without its train.data / eval_data bindings: start-up without data loading
        nodata = os.path.join(self.out, "fashion_mlp_nodata.pbtxt")
        with open(os.path.join(ROOT, NET)) as f, open(nodata, "w") as g:
            g.writelines(l for l in f if "data {" not in l)
        tr_ovr, tr_bare, first_bare = [], [], []
        start_gz, start_bare, start_cold = [], [], []
        cold = {"PADDLE_RUN_CACHE": "off"}
        sh([self.bin, "train", NET, "--iterations", "1"])  # fills the decoded-data cache (if it is not already)
        for _ in range(n):
            tr_gz += self.exec_times(1, [self.bin, "train", NET, "--iterations", "1", "--log", log])[0]
            first_gz.append(self.first_elapsed(log))
            start_gz.append(self.startup_of(log))
            self.exec_times(1, [self.bin, "train", NET, "--iterations", "1", "--log", log], env=cold)
            start_cold.append(self.startup_of(log))
            tr_ovr += self.exec_times(1, [self.bin, "train", NET, "--iterations", "1", "--log", log] + small)[0]
            tr_bare += self.exec_times(1, [self.bin, "train", nodata, "--iterations", "1", "--log", log] + small)[0]
            first_bare.append(self.first_elapsed(log))
            start_bare.append(self.startup_of(log))
        S = "3. start-up"
        ms = lambda s: Stat([x * 1e3 for x in s])  # noqa: E731
        self.row(S, "`paddle-run --version` (process floor, ms)", self.msfmt(ver))
        self.row(S, "`check fashion_mlp.pbtxt` (ms)", self.msfmt(chk), self.goal(chk.med * 1e3 < 20, "< 20 ms"))
        self.row(S, "`infer` 1 row, --params DIR (ms)", self.msfmt(inf), self.goal(inf.med * 1e3 < 20, "< 20 ms"))
        self.row(S, "  the same with env OMP_WAIT_POLICY=passive (ms)", self.msfmt(inf_p))
        floor = ver.med  # exec, dynamic linking, exit: what comes before main() is in --version's time
        g = Stat(tr_gz)
        self.row(S, "`train --iterations 1`, shipped .gz data, whole process incl. final evaluation (ms)",
                 self.msfmt(g))
        sg = Stat([x + floor for x in start_gz])
        self.row(S, "  start-up to the first training step: log's `startup` (main() to step 1) + process floor, "
                    "decoded-data cache filled by an earlier run (ms)", self.msfmt(sg), self.goal(sg.med * 1e3 < 50, "< 50 ms"))
        sc = Stat([x + floor for x in start_cold])
        self.row(S, "  the same, first run (PADDLE_RUN_CACHE=off: 26 MB of gzip inflated to 47 MB before step 1; "
                    "ms)", self.msfmt(sc), self.goal(sc.med * 1e3 < 50, "< 50 ms"))
        self.row(S, "  of which the first step (log's elapsed at step 1, ms)", ms(first_gz).fmt(".1f"))
        self.row(S, "  the same with --data/--eval-data overriding to 256-row .npy (ms)", self.msfmt(Stat(tr_ovr)))
        g2 = Stat(tr_bare)
        self.row(S, "`train --iterations 1`, net without data bindings, 256-row .npy, whole process (ms)",
                 self.msfmt(g2))
        sb = Stat([x + floor for x in start_bare])
        self.row(S, "  start-up to the first training step, as above (ms)", self.msfmt(sb),
                 self.goal(sb.med * 1e3 < 50, "< 50 ms"))
        self.row(S, "  of which the first step (ms)", ms(first_bare).fmt(".1f"))
        self.targets.append((S, "start-up to the first training step < 50 ms (shipped .gz data, decoded-data "
                                "cache filled by an earlier run)", f"{sg.med * 1e3:.1f} ms", sg.med * 1e3 < 50))
        self.targets.append((S, "the same on a first run (cache off: 26 MB of gzip inflated to 55 MB, train and "
                                "eval, before the first step)", f"{sc.med * 1e3:.1f} ms", sc.med * 1e3 < 50))
        self.targets.append((S, "the same, net without data bindings, 256-row .npy", f"{sb.med * 1e3:.1f} ms",
                             sb.med * 1e3 < 50))

    @staticmethod
    def msfmt(s):
        return f"{s.med * 1e3:.1f} ({s.lo * 1e3:.1f} – {s.hi * 1e3:.1f})"

    @staticmethod
    def goal(ok, text):
        return f"goal {text} " + ("met" if ok else "NOT met")

    @staticmethod
    def log_first(log, rtype, key):
        """key of the first record of type rtype in a `train --log` file (None if there is none)"""
        with open(log) as f:
            for line in f:
                o = json.loads(line)
                if o.get("type") == rtype:
                    return o[key]
        return None

    @staticmethod
    def startup_of(log):
        """the log's start record: seconds from main() to the first step"""
        return Bench.log_first(log, "start", "startup")

    @staticmethod
    def first_elapsed(log):
        return Bench.log_first(log, "step", "elapsed")

    # --- 4. training (and PyTorch) ---
    def train_configs(self):
        if self.a.smoke:
            return [(64, 1, 40, 10), (64, 2, 40, 10), (256, 1, 20, 5), (256, 2, 20, 5)]
        if self.a.quick:
            return [(64, 1, 200, 50), (64, 2, 200, 50), (256, 1, 60, 15), (256, 2, 60, 15)]
        return [(64, 1, 400, 50), (64, 2, 400, 50), (256, 1, 120, 15), (256, 2, 120, 15)]

    def ours_train(self, b, t, iters, every, env=None, net=NET, tag="train", key=None, extra=()):
        log = os.path.join(self.out, f"{tag}_b{b}_t{t}.jsonl")
        meter = StallMeter()
        wall, rss = self.exec_times(1, [self.bin, "train", net, "--threads", str(t), "--batch-size", str(b),
                                        "--iterations", str(iters), "--log-every", str(every), "--log", log]
                                    + list(extra), env=env)
        steps = []
        with open(log) as f:
            for line in f:
                o = json.loads(line)
                if o.get("type") == "step":
                    steps.append(o)
        self.last_losses = {o["step"]: o.get("avg_loss") for o in steps}
        # steady state: everything after the first logged interval
        first, last = steps[0], steps[-1]
        ex = (last["step"] - first["step"]) * b
        self.stalls.setdefault(key or (b, t), []).append(meter.share())
        return ex / (last["elapsed"] - first["elapsed"]), rss[0], wall[0]

    # --- 0. the machine's peak ---
    def peak(self):
        """The float32 FMA peak per core (bench_peak: register-only FMA chains, AVX2 and AVX-512, 1 and 2
        threads at once), which the throughput figures are shown against; and PyTorch's 1024^3 matmul in each
        peer configuration, which shows whether the environment threads BLIS."""
        self.section("0. machine peak")
        S = "0. peak"
        per = {}
        for line in sh([os.path.join(self.drv, "bench_peak"), str(self.runs)]).splitlines():
            if line and not line.startswith("#"):
                isa, t, g = line.split()
                per.setdefault((isa, int(t)), []).append(float(g))
        self.peak_gf = {}
        for (isa, t), v in sorted(per.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            st = Stat(v)
            self.row(S, f"float32 FMA peak per core, {isa}, {t} thread{'s' if t > 1 else ''} at once (GFLOP/s per "
                        "core; register-only FMA chains)", st.fmt(".1f"))
            self.peak_gf[t] = max(self.peak_gf.get(t, 0.0), st.hi)  # other work only slows a run: the best is the peak
        for t, g in sorted(self.peak_gf.items()):
            self.row(S, f"peak of {t} core{'s' if t > 1 else ''}: the better ISA's best run (GFLOP/s), the `% of "
                        f"peak` of {t}-thread figures", f"{g * t:.1f}")
        if not self.peak_gf:
            self.notes.append("0. peak: no FMA loop for this CPU; no figure is shown as a fraction of peak.")
        if self.a.torch != "yes":
            return
        for t in (1, 2):
            peer = Peer("peak")
            for cfg in Peer.configs(t, "peak"):
                res = [peer.ask(cfg, {"cmd": "gemm", "threads": t, "n": 1024}) for _ in range(3)]
                g = Stat([r["gflops"] for r in res if r])
                self.row(S, f"PyTorch 1024^3 float32 matmul (BLIS), {t} thread{'s' if t > 1 else ''}, {cfg['label']} "
                            "(GFLOP/s)", g.fmt(".1f") + self.of_peak(1, g.med * 1e9, t))
            peer.close()

    def of_peak(self, flops, rate, t):
        """`; N% of peak`: flops x rate against the FMA peak of t cores (empty when there is no peak)."""
        g = getattr(self, "peak_gf", {}).get(t)
        if not g or rate != rate:
            return ""
        return f"; {flops * rate / (g * t * 1e9) * 100:.1f}% of peak"

    def peer_rows(self, S, what, runs, cfgs, spec=".0f", scale=1.0, higher=True, flops=None, t=1):
        """Rows for one figure of PyTorch's in every configuration (runs: key -> per-repetition values), the
        best median marked; returns the best key."""
        med = {k: Stat(v).med for k, v in runs.items() if Stat(v).n}
        if not med:
            return None
        best = (max if higher else min)(med, key=med.get)
        for cfg in cfgs:
            if cfg["key"] not in med:
                continue
            st = Stat([x * scale for x in runs[cfg["key"]] if x is not None])
            extra = self.of_peak(flops, st.med, t) if flops else ""
            self.row(S, f"PyTorch {self.torch_version} [{cfg['label']}], {what}", st.fmt(spec) + extra,
                     "best" if cfg["key"] == best else "")
        return best

    def peer_order(self, rep, cfgs):
        """ours and each configuration, the order reversed every other repetition (drift hits all alike)."""
        order = ["ours"] + [c["key"] for c in cfgs]
        return order if rep % 2 == 0 else order[::-1]

    def training(self):
        self.section("4. fashion_mlp training")
        use_torch = self.a.torch == "yes"
        peer = Peer("train") if use_torch else None
        cfgs = {t: Peer.configs(t, "train") for t in (1, 2)}
        passive = {c[:2]: [] for c in self.train_configs() if c[1] > 1}
        self.stalls = {}
        init = self.initial_params(NET, "mlp")
        same = ["--no-shuffle", "--params", init]
        torch_rss = []
        self.loss_check = getattr(self, "loss_check", {})
        ours = {c[:2]: [] for c in self.train_configs()}
        rss = {c[:2]: [] for c in self.train_configs()}
        theirs = {c[:2]: {cfg["key"]: [] for cfg in cfgs[c[1]]} for c in self.train_configs()}
        self.train_runs = self.runs if not use_torch else max(5, self.runs - 2)
        if self.a.smoke:
            self.train_runs = 2
        for rep in range(self.train_runs):
            for (b, t, iters, every) in self.train_configs():
                by_key = {c["key"]: c for c in cfgs[t]}
                peer_losses = []
                for who in self.peer_order(rep, cfgs[t] if use_torch else []):
                    if who == "ours":
                        r, m, _ = self.ours_train(b, t, iters, every, extra=same)
                        ours[(b, t)].append(r)
                        rss[(b, t)].append(m)
                        our_losses = self.last_losses
                    else:
                        r, losses = peer.train(by_key[who], b, t, iters, every, params=init)
                        theirs[(b, t)][who].append(r)
                        if r is not None:
                            peer_losses.append(losses)
                for losses in peer_losses:  # every configuration computes the same losses
                    self.compare_losses(("mlp", b, t), our_losses, losses, every)
                if use_torch and (b, t) == (64, 1):  # PyTorch's peak RSS: the same run as a process of its own
                    torch_rss.append(self.exec_times(1, [PY, "bench/compare_torch.py", "--threads", "1", "--batch",
                                                         str(b), "--iterations", str(iters), "--warmup", str(every),
                                                         "--params", init, "--no-shuffle"])[1][0])
                if (b, t) in passive:  # diagnostic: OpenMP workers that sleep instead of spinning
                    passive[(b, t)].append(self.ours_train(b, t, iters, every, env={"OMP_WAIT_POLICY": "passive"})[0])
            print(f"  run {rep + 1}: " + "  ".join(
                f"b{b}/t{t} {ours[(b, t)][-1]:.0f}" +
                (" (torch " + "/".join(f"{v[-1]:.0f}" for v in theirs[(b, t)].values() if v and v[-1]) + ")"
                 if use_torch else "") for (b, t, _, _) in self.train_configs()), flush=True)
        if peer:
            peer.close()
            self.torch_version = peer.version or self.torch_version
            if peer.failed:
                self.notes.append(f"4. training: PyTorch: {peer.failed}.")
        self.train_ours = {k: Stat(v) for k, v in ours.items()}
        S = "4. training"
        fl = product_flops(MLP_MACS)
        for (b, t, iters, every) in self.train_configs():
            s = self.train_ours[(b, t)]
            st = Stat(self.stalls.get((b, t), []))
            self.row(S, f"ours, batch {b}, {t} thread{'s' if t > 1 else ''} (examples/s)",
                     s.fmt(".0f") + self.of_peak(fl, s.med, t),
                     f"CPU stall {st.med:.0f}% ({st.lo:.0f} – {st.hi:.0f}) during these runs")
        for (b, t), v in passive.items():
            self.row(S, f"  ours, batch {b}, {t} threads, env OMP_WAIT_POLICY=passive (examples/s)", Stat(v).fmt(".0f"))
        for (b, t, iters, every) in self.train_configs():
            self.row(S, f"peak RSS, training at batch {b}, {t} thread{'s' if t > 1 else ''} (MiB)",
                     Stat([x / 1024 for x in rss[(b, t)]]).fmt(".1f"))
        if use_torch:
            best = {}
            for (b, t, iters, every) in self.train_configs():
                th = f"{t} thread{'s' if t > 1 else ''}"
                best[(b, t)] = k = self.peer_rows(S, f"batch {b}, {th} (examples/s)", theirs[(b, t)], cfgs[t],
                                                  flops=fl, t=t)
                if k is None:
                    continue
                ratio = Stat([o / p for o, p in zip(ours[(b, t)], theirs[(b, t)][k]) if o and p])
                self.row(S, f"  ratio ours / PyTorch's best configuration ({k}), batch {b}, {th} (paired runs)",
                         ratio.fmt(".2f"))
            rt = Stat([x / 1024 for x in torch_rss])
            ro = Stat([x / 1024 for x in rss[(64, 1)]])
            self.row(S, "PyTorch peak RSS, the same training run (batch 64, 1 thread) as a process (MiB)",
                     rt.fmt(".1f"))
            r = Stat([x / y for x, y in zip(rss[(64, 1)], torch_rss)])
            self.row(S, "  ratio peak RSS ours / PyTorch, batch 64, 1 thread (paired runs)", r.fmt(".3f"),
                     self.goal(r.med <= 0.25, "<= 1/4"))
            self.targets.append((S, "peak RSS of a training run <= 1/4 of PyTorch's (batch 64, 1 thread)",
                                 f"{ro.med:.1f} / {rt.med:.1f} MiB = {r.med:.3f}", r.med <= 0.25))
            for bb in (64, 256):
                if best.get((bb, 1)) is None or best.get((bb, 2)) is None:
                    continue
                p1 = theirs[(bb, 1)][best[(bb, 1)]]
                r1 = Stat([x / y for x, y in zip(ours[(bb, 1)], p1) if x and y])
                self.targets.append((S, f"examples/s >= 1.05x PyTorch's best configuration on 1 thread (batch {bb})",
                                     f"{r1.med:.2f}x", r1.med >= 1.05))
                # PyTorch's best over both thread counts and every configuration, by median, paired per repetition
                t_best = max((1, 2), key=lambda t: Stat(theirs[(bb, t)][best[(bb, t)]]).med)
                pb = theirs[(bb, t_best)][best[(bb, t_best)]]
                r2 = Stat([x / y for x, y in zip(ours[(bb, 2)], pb) if x and y])
                self.row(S, f"  ratio ours 2 threads / PyTorch's best of 1 and 2 threads and every configuration "
                            f"({t_best} thread{'s' if t_best > 1 else ''}, {best[(bb, t_best)]}), batch {bb} "
                            "(paired runs)", r2.fmt(".2f"), self.goal(r2.med >= 1.4, ">= 1.4x"))
                self.targets.append((S, f"examples/s on 2 threads >= 1.4x PyTorch's best thread setting and "
                                        f"configuration (batch {bb})", f"{r2.med:.2f}x", r2.med >= 1.4))
            for (b, t, iters, every) in self.train_configs():
                self.loss_rows(S, ("mlp", b, t), f"batch {b}, {t} thread{'s' if t > 1 else ''}", every, iters)
            PEER_SEEN.update(peer.describe())
        else:
            self.notes.append(f"PyTorch comparison skipped: {self.a.torch_reason or self.a.torch}.")
        self.train_iters = {c[:2]: c[2:] for c in self.train_configs()}

    # --- 9. data-parallel training on MPI ---
    def dist(self):
        """fashion_mlp, one thread per rank: one process at batch 256 against `mpirun -np 2` at the same global
        batch (each rank 128 rows: the same steps in less time) and at twice it (each rank 256 rows, as the one
        process: twice the examples a step; the issue's "N ranks equal one process with an N-times larger
        batch"); examples/s over the logged intervals after the first (none holds an epoch's end), and the
        share of rank 0's step time spent in collectives (the log's comm_seconds, waiting for the other rank
        included)."""
        S = "9. MPI data parallel"
        self.section(S)
        if not shutil.which("mpirun") or "libmpi" not in quiet_out(["ldd", self.bin]):
            self.notes.append("MPI section skipped: mpirun missing or paddle-run built without MPI.")
            return
        # the bench runs as root on the test machines; Open MPI refuses that unless told
        env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
               "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
        b, every = 256, 15
        # steps: under one epoch of the 60000 training rows at each global batch (an epoch's end evaluates)
        runs = {"one": (1, b, 60 if self.a.quick else 120), "half": (1, b // 2, 60 if self.a.quick else 120),
                "same": (2, b, 60 if self.a.quick else 120),
                "twice": (2, 2 * b, 60 if self.a.quick else 105)}
        rates = {k: [] for k in runs}
        comm = {k: [] for k in runs}
        how = set()
        for rep in range(self.runs):
            for key, (n, gb, iters) in runs.items():
                log = os.path.join(self.out, f"dist_{key}.jsonl")
                cmd = [self.bin, "train", NET, "--threads", "1", "--batch-size", str(gb), "--iterations", str(iters),
                       "--log-every", str(every), "--log", log]
                if n > 1:
                    cmd = ["mpirun", "-np", str(n), "--bind-to", "none"] + cmd
                sh(cmd, env=env)
                lines = list(map(json.loads, open(log)))
                steps = [o for o in lines if o.get("type") == "step"]
                first, last = steps[0], steps[-1]
                dt = last["elapsed"] - first["elapsed"]
                rates[key].append((last["step"] - first["step"]) * gb / dt)
                if n > 1:
                    comm[key].append(100 * (last["comm_seconds"] - first["comm_seconds"]) / dt)
                    how.add(lines[0].get("allreduce", "?"))
            print(f"  run {rep + 1}: 1 rank {rates['one'][-1]:.0f}, 2 ranks {rates['same'][-1]:.0f} "
                  f"(comm {comm['same'][-1]:.0f}%), 2 ranks at twice the batch {rates['twice'][-1]:.0f} ex/s "
                  f"(comm {comm['twice'][-1]:.0f}%)", flush=True)
        s1 = Stat(rates["one"])
        self.row(S, f"1 process, batch {b}, 1 thread (examples/s)", s1.fmt(".0f"))
        self.row(S, "the gradients' allreduce", ", ".join(sorted(how)))
        speed = None
        for key, label in (("same", f"global batch {b} (each rank {b // 2} rows)"),
                           ("twice", f"global batch {2 * b} (each rank {b} rows, as the one process)")):
            sp = Stat([y / x for x, y in zip(rates["one"], rates[key])])
            speed = speed or sp
            self.row(S, f"mpirun -np 2, {label}, 1 thread each (examples/s)", Stat(rates[key]).fmt(".0f"))
            self.row(S, "  speed-up 2 ranks / 1 (paired runs)", sp.fmt(".2f"), self.goal(sp.med >= 1.8, ">= 1.8x"))
            self.row(S, "  share of rank 0's step time in the allreduce (%)", Stat(comm[key]).fmt(".0f"))
            if key == "same":  # a rank's own work at 128 rows (the whole update included), with no partner
                half = Stat([2 * y / x for x, y in zip(rates["one"], rates["half"])])
                self.row(S, f"  bound without communication: 1 process at batch {b // 2}, 2 x its examples/s / "
                            f"the one at {b}", half.fmt(".2f"),
                         f"ours reach {sp.med / half.med:.0%} of it")
        # What the machine allows: the same 8 products at a rank's 128 rows, bare BLIS on one thread, as one
        # process alone and as two processes at once (what two ranks do, minus everything else). Two cores
        # that slow each other down bound the 2-rank speed-up at 2 x (alone / together).
        g = os.path.join(self.drv, "bench_gemm")
        bound = []
        for rep in range(self.runs):
            alone = statistics.median(timings(sh([g, "1", str(b // 2), "5"])))
            ps = [subprocess.Popen([g, "1", str(b // 2), "5"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
                  for _ in range(2)]
            together = statistics.mean(statistics.median(timings(p.communicate()[0])) for p in ps)
            bound.append(2 * alone / together)
        bd = Stat(bound)
        self.row(S, f"  bound from the machine: bare BLIS, the step's products at {b // 2} rows, two 1-thread "
                    "processes at once against one alone: 2 x (alone / together)", bd.fmt(".2f"),
                 f"2 ranks cannot beat this; ours reach {speed.med / bd.med:.0%} of it")

    def initial_params(self, net, tag, extra=()):
        """A directory of the parameters our initializer gives `net` (seed 1), as .npy files, for ours
        (--params) and PyTorch to start from: `train --iterations 0 --save` (no step), without the optimizer's
        state files. Both sides load these same files."""
        ck = os.path.join(self.out, f"init_{tag}.ckpt")
        d = os.path.join(self.out, f"init_{tag}")
        shutil.rmtree(ck, ignore_errors=True)
        shutil.rmtree(d, ignore_errors=True)
        sh([self.bin, "train", net, "--iterations", "0", "--save", ck] + list(extra))
        os.makedirs(d)
        src = os.path.join(ck, "latest")
        for name in os.listdir(src):
            if name.endswith(".npy") and "@" not in name:
                shutil.copy(os.path.join(src, name), d)
        return d

    LOSS_TOL = 1e-4

    def compare_losses(self, key, ours, theirs, every):
        """Records, for one pair of runs, the relative difference of the mean loss of the first logged
        interval (steps 1..every: the check) and of the last one (shown only)."""
        rel = lambda s: (abs(ours[s] - theirs[s]) / abs(theirs[s])  # noqa: E731
                         if ours.get(s) is not None and theirs.get(s) else float("inf"))
        last = max(theirs) if theirs else every
        self.loss_check.setdefault(key, []).append((rel(every), rel(last), ours.get(every), theirs.get(every)))

    def loss_verdict(self, S, label, worst, failure):
        """The row of a loss-agreement check; a difference over LOSS_TOL marks the run as failed."""
        ok = worst <= self.LOSS_TOL
        if not ok:
            LOSS_FAIL.append(failure)
            sys.stderr.write(f"bench: LOSS MISMATCH {failure}\n")
        self.row(S, label, f"{worst:.1e}", f"must be <= {self.LOSS_TOL:g}: {'agrees' if ok else 'DOES NOT AGREE'}")

    def loss_rows(self, S, key, tag, every, iters):
        """The loss-agreement rows for key; a difference over LOSS_TOL marks the run as failed."""
        v = self.loss_check.get(key, [])
        if not v:
            return
        worst = max(x[0] for x in v)
        self.loss_verdict(S, f"  same computation: mean loss of steps 1-{every}, {tag}, ours vs PyTorch (rel. diff, "
                             f"worst of {len(v)} pairs)", worst,
                          f"{tag}: mean loss of steps 1-{every}, ours {v[0][2]} vs PyTorch {v[0][3]}, "
                          f"relative difference {worst:.2e} > {self.LOSS_TOL:g}")
        self.row(S, f"    the same for steps {iters - (iters - 1) % every}-{iters} (shown, not checked)",
                 f"{max(x[1] for x in v):.1e}")

    # --- 5. GEMM limit ---
    def gemm(self):
        self.section("5. GEMM-bound limit")
        chk = sh([self.bin, "check", NET])
        m = re.search(r"forward ([\d.]+) ([kMG]?)", chk)
        fwd = float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}[m.group(2)] if m else float("nan")
        S = "5. GEMM limit"
        self.row(S, "forward FLOPs per example (`paddle-run check`)", f"{fwd / 1e6:.2f} M")
        self.row(S, "matrix-product FLOPs per example of a training step: X·W and dW for 3 layers, dX for layers "
                    "2 and 3 (none for the first layer: its input is data)", f"{product_flops(MLP_MACS) / 1e6:.2f} M")
        for (b, t, _, _) in self.train_configs():
            tag = f"batch {b}, {t} thread{'s' if t > 1 else ''}"
            res = sh([os.path.join(self.drv, "bench_gemm"), str(t), str(b), str(self.runs)])
            fl = float(re.search(r"flops_per_step (\d+)", res).group(1))
            if t > 1:
                # BLIS 0.9 starts its threads in every call, and on some machines a new thread waits for the
                # scheduler's next tick on the caller's core: its own threading can be many times slower than
                # one-thread products split on a pool of running threads (what pd_gemm does). The limit is
                # what BLIS can do on T cores: the faster of the two.
                own = timings(res)
                res_pd = sh([os.path.join(self.drv, "bench_gemm"), str(t), str(b), str(self.runs), "pd"])
                pool = timings(res_pd)
                g_own, g_pool = Stat([fl / x * 1e-9 for x in own]), Stat([fl / x * 1e-9 for x in pool])
                self.row(S, f"BLIS sgemm with its own threads, this step's 8 products, {tag} (GFLOP/s)",
                         g_own.fmt(".1f") + self.of_peak(1, g_own.med * 1e9, t))
                self.row(S, f"one-thread BLIS products split on our worker pool (pd_gemm), {tag} (GFLOP/s)",
                         g_pool.fmt(".1f") + self.of_peak(1, g_pool.med * 1e9, t))
                if statistics.median(pool) < statistics.median(own):
                    res = res_pd
            shapes = [l[len("# shape "):] for l in res.splitlines() if l.startswith("# shape")]
            ts = timings(res)
            gf = Stat([fl / x * 1e-9 for x in ts])
            lim = Stat([b / x for x in ts])
            ours = self.train_ours[(b, t)].med if hasattr(self, "train_ours") else float("nan")
            self.row(S, f"BLIS sgemm, this step's 8 products, {tag} (GFLOP/s{', the faster of the two' if t > 1 else ''})",
                     gf.fmt(".1f") + self.of_peak(1, gf.med * 1e9, t))
            self.row(S, f"  GEMM-bound limit, {tag} (examples/s; {fl / b / 1e6:.2f} MFLOP/ex)",
                     lim.fmt(".0f") + self.of_peak(fl / b, lim.med, t))
            self.row(S, f"  ours as a fraction of the GEMM-bound limit, {tag}", f"{ours / lim.med * 100:.0f}%")
            if b == 256 and ours == ours:  # needs section 4's figure from the same run
                need = 0.9 if t == 1 else 0.8
                self.targets.append((S, f"fashion_mlp training >= {need:.0%} of the GEMM-bound limit, {tag}",
                                     f"{ours / lim.med * 100:.0f}% ({ours:.0f} of {lim.med:.0f} examples/s)",
                                     ours / lim.med >= need))
            # the products as the runner calls them in a training step (`paddle-run time`, timed around
            # each pd_gemm call), against the bare-BLIS figure just measured on the same shapes
            prof = []
            for _ in range(self.runs):
                o = json.loads(sh([self.bin, "time", NET, "--json", "--batch-size", str(b), "--threads", str(t),
                                   "--iterations", "20", "--warmup", "50"]))
                prof.append(o["products"])
            pg, ps = Stat([p["gflops"] for p in prof]), Stat([100 * p["share"] for p in prof])
            warm = fl / float(re.search(r"shapes_warm_seconds ([\d.e-]+)", res).group(1)) * 1e-9
            self.row(S, f"BLIS sgemm, the same 8 products each repeated warm in cache, {tag} (GFLOP/s, "
                        "from the per-shape medians)", f"{warm:.1f}" + self.of_peak(1, warm * 1e9, t))
            self.row(S, f"our matrix-product path in a training step (`paddle-run time`; with fc's bias and "
                        f"activation, applied per block as each product's epilogue), {tag} (GFLOP/s)",
                     pg.fmt(".1f") + self.of_peak(1, pg.med * 1e9, t))
            bare = max(warm, gf.med)
            ratio = pg.med / bare
            self.row(S, f"  ratio ours / bare BLIS on the same shapes (the faster of the two above), {tag}",
                     f"{ratio:.3f}", self.goal(ratio >= 0.95, "within 5% of bare BLIS"))
            self.row(S, f"share of the step's op time inside matrix products, {tag} (%)", ps.fmt(".1f"),
                     self.goal(ps.med >= 85, ">= 85%") if b == 256 else "")
            if b == 256:
                self.targets.append((S, f"our matrix-product path within 5% of bare BLIS on the same shapes, {tag}",
                                     f"{ratio:.3f}x ({pg.med:.1f} vs {bare:.1f} GFLOP/s)", ratio >= 0.95))
                self.targets.append((S, f">= 85% of step time inside matrix products, {tag}", f"{ps.med:.1f}%",
                                     ps.med >= 85))
            self.gemm_shapes = getattr(self, "gemm_shapes", {})
            self.gemm_shapes[(b, t)] = shapes

    # --- 6. inference ---
    def infer(self):
        self.section("6. fashion_mlp inference")
        S = "6. infer"
        use_torch = self.a.torch == "yes"
        peer = Peer("infer") if use_torch else None
        for t in (1, 2):
            cfgs = Peer.configs(t, "infer") if use_torch else []
            by_key = {c["key"]: c for c in cfgs}
            ts, theirs = [], {c["key"]: [] for c in cfgs}
            for rep in range(3 if self.a.smoke else max(self.runs, 9)):  # alternating, as in 4
                for who in self.peer_order(rep, cfgs):
                    if who == "ours":
                        res = sh([os.path.join(self.drv, "bench_infer"), NET, self.params, "pixels", "prob", str(t),
                                  "1", "1"])
                        ts += timings(res)
                    else:
                        r = peer.ask(by_key[who], {"cmd": "infer", "threads": t, "batch": 1, "runs": 1,
                                                   "params": os.path.join(self.params, "latest")})
                        theirs[who].append(r["seconds_per_batch"][0] if r else None)
            th = f"{t} thread{'s' if t > 1 else ''}"
            self.row(S, f"in-process, batch 1, {th}: latency (µs)", Stat([x * 1e6 for x in ts]).fmt(".1f"))
            if use_torch:
                self.torch_version = peer.version or self.torch_version
                k = self.peer_rows(S, f"the same net and parameters, batch 1, {th}, torch.no_grad() unless stated: "
                                      "latency (µs)", theirs, cfgs, spec=".1f", scale=1e6, higher=False)
                if k is None:
                    continue
                r = Stat([y / x for x, y in zip(ts, theirs[k]) if x and y])
                self.row(S, f"  ratio PyTorch's best configuration ({k}) latency / ours, batch 1, {th} (paired runs)",
                         r.fmt(".2f"), self.goal(r.med >= 3, ">= 3x lower latency"))
                self.targets.append((S, f"batch-1 inference >= 3x lower latency than PyTorch's best configuration "
                                        f"({th})", f"{r.med:.2f}x", r.med >= 3))
        if peer:
            peer.close()
            PEER_SEEN.update(peer.describe())
        for t in (1, 2):
            res = sh([os.path.join(self.drv, "bench_infer"), NET, self.params, "pixels", "prob", str(t), "256",
                      str(self.runs)])
            ts = timings(res)
            st = Stat([256 / x for x in ts])
            self.row(S, f"in-process, batch 256, {t} thread{'s' if t > 1 else ''}: throughput (rows/s)",
                     st.fmt(".0f") + self.of_peak(2 * sum(MLP_MACS), st.med, t))
        # whole process: 10000 test images from the .gz, batch 256
        rows = 10000
        for t in (1, 2):
            wall, _ = self.exec_times(self.runs, [self.bin, "infer", NET, "--params", self.params, "--threads", str(t),
                                                  "--data", f"pixels={DATA}t10k-images-idx3-ubyte.gz",
                                                  "--fetch", f"prob={self.out}/t10k_prob.npy"])
            self.row(S, f"`paddle-run infer` process, 10000 rows (.gz), batch 256, {t} thread{'s' if t > 1 else ''}"
                        " (rows/s)", Stat([rows / x for x in wall]).fmt(".0f"))

    # --- 7. fashion_cnn training (and PyTorch) ---
    # --- 10. GPU ---
    def gpu(self):
        """fashion_mlp training on the GPU against PyTorch eager on the same GPU (batch 64/256/1024), the CUDA
        graph on and off, and a large SGEMM through our fc kernel against cuBLAS alone. Skips without a GPU."""
        self.section("10. GPU")
        S = "10. GPU"
        probe = subprocess.run([self.bin, "check", os.path.join(ROOT, "netdescs", "fit_a_line.pbtxt"), "--device",
                                "gpu"], capture_output=True, text=True)
        if probe.returncode != 0:
            why = (probe.stderr.strip().splitlines() or ["?"])[-1]
            # as test/gpu/gpu_env: only "no GPU here" (exit 2) is a skip; a GPU that is there but unusable,
            # or PADDLE_RUN_GPU_REQUIRED=1 (GPU CI), stops the benchmark
            none = probe.returncode == 2 and ("no CUDA device found" in why or "built without CUDA" in why)
            if not none or os.environ.get("PADDLE_RUN_GPU_REQUIRED") == "1":
                raise SystemExit(f"bench: 10. GPU: the GPU cannot be used (exit {probe.returncode}): {why}")
            self.row(S, "GPU figures", "skipped: no GPU")
            self.notes.append(f"10. GPU: skipped, no GPU on this machine ({why}); the GPU figures are still owed.")
            return
        dev = re.search(r"gpu: (.*)", probe.stdout)
        drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True) if shutil.which("nvidia-smi") else None
        driver = drv.stdout.strip().splitlines()[0] if drv and drv.returncode == 0 and drv.stdout.strip() else "?"
        self.row(S, "device", f"{dev.group(1) if dev else '?'}, driver {driver}")
        # (net name, file, batches, iterations, warm-up steps, compare_torch_gpu.py's --net or None, CUDA graph
        # settings): the CNN's steps are ~10x the MLP's; the fused lstm op against cuDNN's LSTM, and the same cell
        # hand-written in a step block (issue 20's 1.5x bound; blocks run without CUDA graphs, and PyTorch has no
        # counterpart)
        q = self.a.quick
        runs = [("fashion_mlp", NET, (64, 256, 1024), 300 if q else 1200, 50 if q else 200, "mlp", (True, False)),
                ("fashion_cnn", CNN, (64,), 150 if q else 600, 30 if q else 100, "cnn", (True, False)),
                ("fashion_lstm_fused", "netdescs/fashion_lstm_fused.pbtxt", (64,), 150 if q else 600, 30 if q else 100,
                 "lstm", (True, False)),
                ("fashion_lstm", "netdescs/fashion_lstm.pbtxt", (64,), 100 if q else 300, 20 if q else 50, None,
                 (False,))]
        for name, path, batches, iters, warm, peer, graphs in runs:
            for b in batches:
                for graph in graphs:
                    rates = []
                    for _ in range(3):
                        log = os.path.join(self.out, f"gpu-{b}.jsonl")
                        cmd = [self.bin, "train", os.path.join(ROOT, path), "--device", "gpu", "--batch-size", str(b),
                               "--iterations", str(iters), "--log-every", str(warm), "--log", log]
                        if not graph:
                            cmd.append("--no-cuda-graph")
                        sh(cmd)
                        steps = [json.loads(l) for l in open(log) if '"type":"step"' in l]
                        rates.append(statistics.median(x["examples_per_sec"] for x in steps[1:]))
                    goal = "goal: >= PyTorch eager at 256" if name == "fashion_mlp" and b == 256 and graph else ""
                    self.row(S, f"{name} training, batch {b}, CUDA graph {'on' if graph else 'off'} (examples/s)",
                             Stat(rates).fmt(".0f"), goal)
                if peer is None:
                    continue
                res = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "compare_torch_gpu.py"), "--net",
                                      peer, "--batch", str(b), "--iterations", str(iters), "--warmup", str(warm)],
                                     capture_output=True, text=True)
                try:
                    t = json.loads(res.stdout.strip().splitlines()[-1])
                except (ValueError, IndexError):
                    t = {"skipped": (res.stderr.strip().splitlines() or ["failed"])[-1]}
                self.row(S, f"  PyTorch eager, same GPU, batch {b} (examples/s)",
                         f"{t['examples_per_sec']:.0f}" if "examples_per_sec" in t else f"skipped: {t['skipped']}")
        res = sh([os.path.join(self.drv, "bench_gemm_gpu"), "4096", "8192"])
        for l in res.splitlines():
            if l.startswith("{"):
                g = json.loads(l)
                self.row(S, f"SGEMM {g['m']}^3 through our fc kernel (TFLOP/s)", f"{g['ours_tflops']:.2f}",
                         "goal: within 5% of cuBLAS")
                self.row(S, "  cuBLAS alone, same buffers (TFLOP/s)", f"{g['cublas_tflops']:.2f}")
            elif l.startswith("skipped"):
                self.row(S, "SGEMM", l)

    def cnn_config(self):
        """(batch, iterations, log interval): the file's batch of 64; the first interval is warm-up. At
        ~1000 examples/s a run of ours takes ~20 s; PyTorch's one-thread runs ~1.5x longer."""
        if self.a.smoke:
            return (64, 20, 5)
        return (64, 150, 25) if self.a.quick else (64, 300, 50)

    # (name, file, compare_torch.py's model, multiply-adds per example of each product)
    CNN_NETS = (("fashion_cnn", CNN, "cnn", CNN_MACS), ("fashion_cnn3", CNN3, "cnn3", CNN3_MACS))

    def cnn(self):
        """fashion_cnn and fashion_cnn3 (3x3 layers: Winograd on our side) training against PyTorch, each with
        the shipped net's Adam and again with momentum SGD on both sides (a variant of the net), so that neither
        optimizer's cost decides the ratio."""
        self.section("7. fashion_cnn training")
        self.cnn_ours = {}
        for name, path, model, macs in self.CNN_NETS:
            # the shipped net without its eval_data bindings, so no evaluation pass is timed, and with
            # dropout_prob 0 (the op still runs), so that ours and PyTorch's compute the same losses (random
            # masks would differ)
            net = os.path.join(self.out, f"{name}_noeval.pbtxt")
            mom = os.path.join(self.out, f"{name}_momentum_noeval.pbtxt")
            adam_line = 'type: "adam" lr: 0.002'
            with open(os.path.join(ROOT, path)) as f:
                text = "".join(l for l in f if "eval_data" not in l)
            nodrop = text.replace('key: "dropout_prob" value { f: 0.5 }', 'key: "dropout_prob" value { f: 0.0 }')
            if nodrop == text or adam_line not in nodrop:
                sys.stderr.write(f"bench: {path} has no `dropout_prob ... f: 0.5` to set to 0 or no `{adam_line}`\n")
                sys.exit(1)
            with open(net, "w") as g:
                g.write(nodrop)
            with open(mom, "w") as g:  # as compare_torch.py's --optimizer momentum: lr 0.01, momentum 0.9
                g.write(nodrop.replace(adam_line, 'type: "momentum" lr: 0.01 momentum: 0.9'))
            init = self.initial_params(net, model)  # the same layers, so the same parameters serve both
            nudge_conv_biases(init, ("c11", "c12", "c21", "c22") if model == "cnn3" else ("conv1", "conv2"))
            for opt, p in (("adam", net), ("momentum", mom)):
                self.cnn_one(opt, p, init, name, model, macs)

    def cnn_one(self, opt, net, init, name="fashion_cnn", model="cnn", macs=CNN_MACS):
        S = "7. CNN"
        on = "Adam" if opt == "adam" else "momentum SGD"
        b, iters, every = self.cnn_config()
        self.loss_check = getattr(self, "loss_check", {})
        use_torch = self.a.torch == "yes"
        peer = Peer("cnn") if use_torch else None
        self.stalls = getattr(self, "stalls", {})
        threads = (1, 2)
        cfgs = {t: Peer.configs(t, "cnn") if use_torch else [] for t in threads}
        ours = {t: [] for t in threads}
        rss = {t: [] for t in threads}
        theirs = {t: {c["key"]: [] for c in cfgs[t]} for t in threads}
        for rep in range(self.cnn_runs):
            if rep:
                self.contention[-1][3] += self.wait_quiet()  # what is left of the bench's budget
            for t in threads:
                by_key = {c["key"]: c for c in cfgs[t]}
                peer_losses = []
                for who in self.peer_order(rep + t - 1, cfgs[t]):
                    if who == "ours":
                        r, m, _ = self.ours_train(b, t, iters, every, net=net, tag=f"{model}_{opt}",
                                                  key=(model, opt, t), extra=["--no-shuffle", "--params", init])
                        ours[t].append(r)
                        rss[t].append(m)
                        our_losses = self.last_losses
                    else:
                        meter = StallMeter()
                        r, losses = peer.train(by_key[who], b, t, iters, every, model=model, params=init,
                                               dropout=0.0, optimizer=opt)
                        theirs[t][who].append(r)
                        self.stalls.setdefault((model, opt + "-torch", t), []).append(meter.share())
                        if r is not None:
                            peer_losses.append(losses)
                for losses in peer_losses:
                    self.compare_losses((model, opt, t), our_losses, losses, every)
            print(f"  {name} run {rep + 1} ({on}): " + "  ".join(
                f"t{t} {ours[t][-1]:.0f}" + (" (torch " + "/".join(f"{v[-1]:.0f}" for v in theirs[t].values()
                                                                   if v and v[-1]) + ")" if use_torch else "")
                for t in threads), flush=True)
        # the same computation, step by step: Adam divides each gradient by its own running size, so a
        # parameter whose gradient is ~0 moves by about lr in a direction set by rounding; the two runs'
        # losses then drift apart exponentially (measured here: x1.5 a step, 2e-7 at step 2, ~1e-3 by step
        # 25). So the check is each of the first SHORT steps' losses, in every configuration; the long runs'
        # intervals are shown.
        SHORT = 5
        short = {t: [] for t in threads}
        if use_torch:
            for t in threads:
                self.ours_train(b, t, SHORT, 1, net=net, tag=f"{model}_{opt}_short", key=(model, opt + "_short", t),
                                extra=["--no-shuffle", "--params", init])
                mine = self.last_losses
                for cfg in cfgs[t]:
                    _, theirs_l = peer.train(cfg, b, t, SHORT, 1, model=model, params=init, dropout=0.0,
                                             optimizer=opt)
                    d = [abs(mine[k] - theirs_l[k]) / abs(theirs_l[k])
                         if mine.get(k) is not None and theirs_l.get(k) else float("inf") for k in range(1, SHORT + 1)]
                    short[t] = d if not short[t] else [max(x, y) for x, y in zip(short[t], d)]
            peer.close()
            self.torch_version = peer.version or self.torch_version

        def stall(key):
            st = Stat(self.stalls.get(key, []))
            return f"CPU stall {st.med:.0f}% ({st.lo:.0f} – {st.hi:.0f}) during these runs"

        th = lambda t: f"{t} thread{'s' if t > 1 else ''}"  # noqa: E731
        fl = product_flops(macs)
        o = {t: Stat(ours[t]) for t in threads}
        self.cnn_ours[(name, opt)] = o
        for t in threads:
            self.row(S, f"ours, {name} with {on}, batch {b}, {th(t)} (examples/s, {self.cnn_runs} runs)",
                     o[t].fmt(".0f") + self.of_peak(fl, o[t].med, t), stall((model, opt, t)))
        for t in threads:
            self.row(S, f"peak RSS, {name} training with {on}, batch {b}, {th(t)} (MiB)",
                     Stat([x / 1024 for x in rss[t]]).fmt(".1f"))
        self.row(S, f"  ours 2 threads / ours 1 thread, {name}, {on} (paired runs)",
                 Stat([x / y for x, y in zip(ours[2], ours[1])]).fmt(".2f"))
        if not use_torch:
            if opt == "adam" and model == "cnn":
                self.notes.append(f"7. CNN: PyTorch comparison skipped: {self.a.torch_reason or self.a.torch}.")
            return
        best = {}
        for t in threads:
            best[t] = self.peer_rows(S, f"the same net ({name}) with {on}, batch {b}, {th(t)} (examples/s)",
                                     theirs[t], cfgs[t], flops=fl, t=t)
        if best[1] is None or best[2] is None:
            return
        p = {t: Stat(theirs[t][best[t]]) for t in threads}
        r1 = Stat([x / y for x, y in zip(ours[1], theirs[1][best[1]]) if x and y])
        # issue 24's targets: each net >= 1.5x PyTorch at its best, on 1 thread and on 2, with either optimizer
        goal = 1.5
        self.row(S, f"ratio ours / PyTorch's best configuration ({best[1]}), {name}, {on}, 1 thread (paired runs)",
                 r1.fmt(".2f"), self.goal(r1.med >= goal, f">= {goal}x") +
                 f" (ratio of medians {o[1].med / p[1].med:.2f}x)")
        self.targets.append((S, f"{name} training with {on} >= {goal}x PyTorch's best, 1 thread", f"{r1.med:.2f}x",
                             r1.med >= goal))
        t_best = 2 if p[2].med >= p[1].med else 1
        r2 = Stat([x / y for x, y in zip(ours[2], theirs[t_best][best[t_best]]) if x and y])
        self.row(S, f"ratio ours 2 threads / PyTorch's best of 1 and 2 threads and every configuration ({th(t_best)}, "
                    f"{best[t_best]}), {name}, {on} (paired runs)", r2.fmt(".2f"),
                 self.goal(r2.med >= goal, f">= {goal}x") + f" (ratio of medians {o[2].med / p[t_best].med:.2f}x)")
        self.targets.append((S, f"{name} training with {on} on 2 threads >= {goal}x PyTorch's best of 1 and 2 "
                                "threads", f"{r2.med:.2f}x", r2.med >= goal))
        self.row(S, f"  ratio ours / PyTorch's best configuration ({best[2]}), {name}, {on}, 2 threads each "
                    "(paired runs)",
                 Stat([x / y for x, y in zip(ours[2], theirs[2][best[2]]) if x and y]).fmt(".2f"))
        for t in threads:
            worst = max(short[t])
            self.loss_verdict(S, f"  same computation, {name}, {on}: loss of each of steps 1-{SHORT}, batch {b}, "
                                 f"{th(t)}, ours vs PyTorch in every configuration (worst rel. diff; per step: "
                                 f"{', '.join(f'{x:.0e}' for x in short[t])})",
                              worst, f"{name} with {on}, {th(t)}: the loss of steps 1-{SHORT} differs from "
                                     f"PyTorch's by up to {worst:.2e} > {self.LOSS_TOL:g}")
            v = self.loss_check.get((model, opt, t), [])
            if v:
                self.row(S, f"    mean loss of steps 1-{every} and {iters - (iters - 1) % every}-{iters} of the long "
                            f"runs, {name}, {on} (shown, not checked)",
                         f"{max(x[0] for x in v):.1e}, {max(x[1] for x in v):.1e}")
        PEER_SEEN.update(peer.describe())

    # --- 8. tiny net (16-16-2, batch 1) ---
    def tiny(self):
        self.section("8. tiny net")
        S = "8. tiny net"
        import numpy as np
        rng = np.random.default_rng(1)
        x = rng.standard_normal((4096, 16)).astype(np.float32)
        xf, yf = os.path.join(self.out, "tiny_x.npy"), os.path.join(self.out, "tiny_label.npy")
        np.save(xf, x)
        np.save(yf, (x[:, 0] * x[:, 1] > 0).astype(np.int64).reshape(-1, 1))
        net = os.path.join(ROOT, "bench", "tiny.pbtxt")
        data = ["--data", f"x={xf}", "--data", f"label={yf}"]
        init = self.initial_params(net, "tiny", data)
        every = 1000
        ours_iters, torch_iters = (10000, 2000) if self.a.quick else (30000, 3000)
        if self.a.smoke:
            ours_iters, torch_iters = 3000, 2000
        use_torch = self.a.torch == "yes"
        peer = Peer("tiny") if use_torch else None
        cfgs = Peer.configs(1, "tiny") if use_torch else []
        by_key = {c["key"]: c for c in cfgs}
        self.loss_check = getattr(self, "loss_check", {})
        self.stalls = getattr(self, "stalls", {})
        ours, theirs = [], {c["key"]: [] for c in cfgs}
        for rep in range(2 if self.a.smoke else self.runs):
            peer_losses = []
            for who in self.peer_order(rep, cfgs):
                if who == "ours":
                    self.ours_train(1, 1, ours_iters, every, net=net, tag="tiny", key=("tiny", 1),
                                    extra=data + ["--no-shuffle", "--params", init])
                    # seconds per step from the logged rates (examples/s of each interval after the first)
                    log = os.path.join(self.out, "tiny_b1_t1.jsonl")
                    with open(log) as f:
                        st = [json.loads(l) for l in f if '"type":"step"' in l]
                    ours.append(sum(every / o["examples_per_sec"] for o in st[1:]) / (every * (len(st) - 1)))
                    our_losses = self.last_losses
                else:
                    res = peer.ask(by_key[who], {"batch": 1, "threads": 1, "iterations": torch_iters,
                                                 "warmup": every, "model": "tiny", "params": init,
                                                 "shuffle": False, "data": [xf, yf]})
                    theirs[who].append(res["seconds"] / res["steps"] if res else None)
                    if res:
                        peer_losses.append({o["step"]: o["loss"] for o in res["losses"]})
            for losses in peer_losses:
                self.compare_losses(("tiny",), our_losses, losses, every)
        if peer:
            peer.close()
            PEER_SEEN.update(peer.describe())
            self.torch_version = peer.version or self.torch_version
        o = Stat([v * 1e6 for v in ours])
        fl = product_flops(TINY_MACS)
        self.row(S, "ours, training step, 1 thread (µs; `paddle-run train` log)",
                 o.fmt(".2f") + self.of_peak(fl, 1e6 / o.med, 1))
        if not use_torch:
            self.notes.append(f"8. tiny net: PyTorch comparison skipped: {self.a.torch_reason or self.a.torch}.")
            return
        k = self.peer_rows(S, "full training step, 1 thread (µs)", theirs, cfgs, spec=".1f", scale=1e6, higher=False)
        if k is None:
            return
        r = Stat([y / x for x, y in zip(ours, theirs[k]) if x and y])
        self.row(S, f"ratio PyTorch's best configuration ({k}) step time / ours (paired runs; ours / theirs as time: "
                    f"{1 / r.med:.3f})", r.fmt(".1f"), self.goal(r.med >= 40, ">= 40x faster"))
        self.targets.append((S, "tiny-net (16-16-2, batch 1) training step >= 40x faster than PyTorch's best "
                                "configuration",
                             f"{r.med:.1f}x ({o.med:.2f} µs vs {Stat(theirs[k]).med * 1e6:.1f} µs)",
                             r.med >= 40))
        self.loss_rows(S, ("tiny",), "batch 1, 1 thread", every, torch_iters)

    # --- 9. recurrent nets ---
    def rnn(self):
        """fashion_lstm_fused and the char LM (LSTM 1x256, and its GRU 1x256 and LSTM 2x256 variants) training
        against PyTorch's nn.LSTM / nn.GRU in every peer configuration, paired runs interleaved, on 1 and 2 threads; the share of our step in matrix products
        (`paddle-run time`, the median of as many runs as a figure's); batch-1 sampling (`generate`) per byte against PyTorch's per-token step. Both sides
        start from the same parameter files and read the same batches (the char LM's windows and state resets
        as the text binding lays them out), so the mean loss of the first interval is checked as for the MLP
        (test/scripts/rnn_torch_f32.py checks every one of the first steps to 1e-5)."""
        self.section("9. recurrent nets")
        S = "9. recurrent nets"
        use_torch = self.a.torch == "yes"
        self.stalls = getattr(self, "stalls", {})
        lstm_net = os.path.join(self.out, "fashion_lstm_noeval.pbtxt")
        with open(os.path.join(ROOT, "netdescs/fashion_lstm_fused.pbtxt")) as f:
            text = "".join(l for l in f if "eval_data" not in l)
        with open(lstm_net, "w") as g:
            g.write(text)
        lm_net = os.path.join(ROOT, "netdescs/char_lm.pbtxt")
        # (label, net, torch model, batch, tokens per example, unit, iterations, log interval)
        iters = (24, 8) if self.a.smoke else (120, 20) if self.a.quick else (300, 50)
        nets = [("fashion_lstm_fused (LSTM 128, batch 64)", lstm_net, "fashion_lstm", 64, 1, "examples/s"),
                ("char LM (LSTM 1x256, batch 32, windows of 64)", lm_net, "char_lm", 32, 64, "tokens/s"),
                ("char LM, GRU (GRU 1x256, batch 32, windows of 64)", self.lm_variant(lm_net, "gru"), "char_lm_gru",
                 32, 64, "tokens/s"),
                ("char LM, 2 layers (LSTM 2x256, batch 32, windows of 64)", self.lm_variant(lm_net, "2layer"),
                 "char_lm_2layer", 32, 64, "tokens/s")]
        self.loss_check = getattr(self, "loss_check", {})
        for label, net, model, b, per, unit in nets:
            init = self.initial_params(net, model)
            same = ["--no-shuffle", "--params", init]
            for t in (1, 2):
                peer = Peer("rnn") if use_torch else None
                cfgs = Peer.configs(t, "rnn") if use_torch else []
                by_key = {c["key"]: c for c in cfgs}
                ours, theirs = [], {c["key"]: [] for c in cfgs}
                for rep in range(self.train_runs):
                    peer_losses = []
                    for who in self.peer_order(rep, cfgs):
                        if who == "ours":
                            ex, _, _ = self.ours_train(b, t, iters[0], iters[1], net=net, tag=f"rnn_{model}",
                                                       key=(model, t), extra=same)
                            ours.append(ex * per)
                            our_losses = self.last_losses
                        else:
                            ex, losses = peer.train(by_key[who], b, t, iters[0], iters[1], model=model, params=init)
                            theirs[who].append(ex * per if ex else None)
                            if ex:
                                peer_losses.append(losses)
                    for losses in peer_losses:
                        self.compare_losses((model, b, t), our_losses, losses, iters[1])
                if peer:
                    peer.close()
                    PEER_SEEN.update(peer.describe())
                    self.torch_version = peer.version or self.torch_version
                o = Stat(ours)
                th = f"{t} thread{'s' if t > 1 else ''}"
                self.row(S, f"ours, {label} training, {th} ({unit})", o.fmt(".0f"))
                if not use_torch:
                    continue
                self.loss_rows(S, (model, b, t), f"{model}, {th}", iters[1], iters[0])
                k = self.peer_rows(S, f"{label} training, {th} ({unit})", theirs, cfgs)
                if k is None:
                    continue
                r = Stat([x / y for x, y in zip(ours, theirs[k]) if x and y])
                goal = 1.4 if model.startswith("char_lm") else (1.5 if t == 1 else 1.3)
                self.row(S, f"ratio ours / PyTorch's best ({k}), {label}, {th} (paired runs)", r.fmt(".2f"),
                         self.goal(r.med >= goal, f">= {goal}x"))
                self.targets.append((S, f"{label} training >= {goal}x PyTorch's best, {th}", f"{r.med:.2f}x",
                                     r.med >= goal))
            # the share of the step in matrix products, from `paddle-run time` (its products profile): one
            # run's share is a ratio of means, which one slow step moves, so the median of several runs
            for t in (1, 2):
                shares = []
                for _ in range(self.runs):
                    out = sh([self.bin, "time", net, "--threads", str(t), "--iterations",
                              "5" if self.a.smoke else "20", "--json"])
                    try:
                        share = json.loads(out).get("products", {}).get("share")
                    except ValueError:
                        share = None
                    shares.append(share * 100 if share is not None else None)
                st = Stat(shares)
                if st.n:
                    th = f"{t} thread{'s' if t > 1 else ''}"
                    self.row(S, f"ours, {label}: share of the step's ops time in matrix products, {th} "
                                "(`paddle-run time`, %)", st.fmt(".1f"), self.goal(st.med >= 80, ">= 80 %"))
                    self.targets.append((S, f"{label}: matrix products >= 80 % of the step, {th}",
                                         f"{st.med:.1f} %", st.med >= 80))
        self.rnn_handwritten(S, lstm_net, iters)
        self.rnn_generate(S, lm_net, use_torch)

    def lm_variant(self, lm_net, kind):
        """char_lm.pbtxt's GRU or 2-layer variant (lm_variants.py), written into the output folder."""
        try:
            text = lm_variants.variant_text(open(lm_net).read(), kind)
        except ValueError as e:
            raise SystemExit(f"bench: {e}")
        path = os.path.join(self.out, f"char_lm_{kind}.pbtxt")
        with open(path, "w") as f:
            f.write(text)
        return path

    def rnn_handwritten(self, S, fused_net, iters):
        """Issue 20's bound: the same LSTM cell written out of ordinary ops in a step block (fashion_lstm, the
        `recurrent` op) against the fused `lstm` op (fashion_lstm_fused), training on the same shapes and
        batch, the two runs of a pair one after the other (the order alternating)."""
        hand_net = os.path.join(self.out, "fashion_lstm_hand_noeval.pbtxt")
        with open(os.path.join(ROOT, "netdescs/fashion_lstm.pbtxt")) as f:
            text = "".join(l for l in f if "eval_data" not in l)
        with open(hand_net, "w") as g:
            g.write(text)
        for t in (1, 2):
            rates = {"fused": [], "hand": []}
            for rep in range(self.train_runs):
                order = ("fused", "hand") if rep % 2 == 0 else ("hand", "fused")
                for who in order:
                    ex, _, _ = self.ours_train(64, t, iters[0], iters[1], net=fused_net if who == "fused" else hand_net,
                                               tag=f"rnn_{who}", key=(who, t))
                    rates[who].append(ex)
            th = f"{t} thread{'s' if t > 1 else ''}"
            self.row(S, f"ours, fashion_lstm (the cell hand-written in a step block) training, {th} (examples/s)",
                     Stat(rates["hand"]).fmt(".0f"))
            r = Stat([f / h for f, h in zip(rates["fused"], rates["hand"]) if f and h])
            self.row(S, f"ratio of step times, hand-written cell / fused lstm op (fused examples/s over hand-written), "
                        f"{th} (paired runs)", r.fmt(".2f"), self.goal(r.med <= 1.5, "<= 1.5x"))
            self.targets.append((S, f"hand-written LSTM cell <= 1.5x the fused lstm op's time, {th}",
                                 f"{r.med:.2f}x", r.med <= 1.5))

    def rnn_generate(self, S, net, use_torch):
        """µs per sampled byte of `paddle-run generate` on the char LM (the difference of a long and a short
        run, so start-up and the prime cancel) against PyTorch's per-token step at batch 1, on 1 and 2
        threads. At batch 1 a token's work is streaming the weights (1.5 MB) through one product each:
        a second core halves what each core reads, and each half stays in its core's L2."""
        ckpt = os.path.join(self.out, "char_lm_ckpt")
        shutil.rmtree(ckpt, ignore_errors=True)
        sh([self.bin, "train", net, "--iterations", "1", "--save", ckpt])
        short, long_ = (50, 550) if self.a.smoke else (200, 4200)
        peer = Peer("infer") if use_torch else None
        for t in (1, 2):
            ours = []
            for _ in range(self.runs):
                w = {}
                for n in (short, long_):
                    x, _ = self.exec_times(1, [self.bin, "generate", net, "--params", ckpt, "--prime", "The ",
                                               "--length", str(n), "--seed", "1", "--threads", str(t)])
                    w[n] = x[0]
                ours.append((w[long_] - w[short]) / (long_ - short) * 1e6)
            o = Stat(ours)
            self.row(S, f"ours, `generate` with the char LM, {t} thread{'s' if t > 1 else ''} (µs per byte)",
                     o.fmt(".1f"), self.goal(o.med <= 20, "<= 20 µs"))
            if not peer:
                continue
            cfgs = Peer.configs(t, "infer")
            theirs = {c["key"]: [] for c in cfgs}
            for _ in range(self.runs):
                for c in cfgs:
                    res = peer.ask(c, {"cmd": "generate", "threads": t, "tokens": 200 if self.a.smoke else 2000})
                    theirs[c["key"]].append(res["seconds_per_token"] * 1e6 if res else None)
            k = self.peer_rows(S, f"the char LM's step at batch 1 with sampling, {t} thread{'s' if t > 1 else ''} "
                               "(µs per token)", theirs, cfgs, spec=".1f", higher=False)
            if k is not None:
                r = Stat(theirs[k]).med / o.med
                self.row(S, f"ratio PyTorch's best ({k}) per-token time / ours, {t} thread{'s' if t > 1 else ''}",
                         f"{r:.1f}")
                self.targets.append((S, f"generate <= 20 µs per byte (char LM 1x256, {t} thread"
                                     f"{'s' if t > 1 else ''})", f"{o.med:.1f} µs", o.med <= 20))
        if peer:
            peer.close()

    # --- report ---
    def report(self, seconds):
        """The whole of RESULTS.md for this run, as lines."""
        e = self.env
        lines = ["# paddle-run benchmarks", "",
                 "Written by `make bench` (bench/run.sh, bench/bench.py); do not edit by hand. Every figure is "
                 f"the median of {self.runs} runs ({self.train_runs} for training, {self.cnn_runs} for CNN training, "
                 f"{self.runs} for the tiny net, "
                 f"5 for net build times, {max(self.runs, 9)} for batch-1 latency) with (min – max).", "",
                 "| | |", "|---|---|",
                 f"| date | {e['date']} |",
                 f"| CPU | {e['cpu']} |",
                 f"| cores | {e['cores']} |",
                 "| threads | as stated per figure (1 or 2); start-up figures use the default (all cores) |",
                 f"| BLIS | libblis4 {e['blis']} ({e['blis_variant'].strip()}) |",
                 f"| protoc | {e['protoc']} |",
                 f"| compiler | {e['cc']} |",
                 f"| paddle-run | {e['paddle']}, commit {e['commit']}{' + local changes' if e['dirty'] else ''} |",
                 f"| kernel | {e['kernel']} |",
                 f"| PyTorch | {self.torch_version or 'not used: ' + (self.a.torch_reason or self.a.torch)} |",
                 f"| bench wall time | {seconds:.0f} s |", ""]
        lines += ["## Results", "", "| section | figure | median (min – max) | goal |", "|---|---|---|---|"]
        for s, f, v, g in self.rows:
            lines.append(f"| {s} | {f} | {v} | {g} |")
        if self.targets:
            lines += ["", "## Targets", "",
                      "Issue 6, point 3, as measured by this run (the targets of sections not run are not listed).",
                      "",
                      "| section | target | achieved (median) | |", "|---|---|---|---|"]
            for sec, target, got, ok in self.targets:
                lines.append(f"| {sec} | {target} | {got} | {'met' if ok else 'NOT met'} |")
        lines += ["", "## Load on the machine while measuring", "",
                  "CPU pressure is /proc/pressure/cpu `some avg10` (the share of the last 10 s in which a runnable "
                  "task waited for a CPU); on a shared 2-core machine anything above a few percent widens the "
                  "min – max ranges, and 2-thread figures suffer most.", "",
                  "| section | CPU pressure avg10 at start (%) | CPU stall over the section (%) | load avg 1 min "
                  "at start | waited for quiet (s) |", "|---|---|---|---|---|"]
        for name, p, l, w, share in self.contention:
            lines.append(f"| {name} | {p} | {'?' if share is None else f'{share:.0f}'} | {l} | {w:.0f} |")
        if getattr(self, "gemm_shapes", None):
            lines += ["", "## BLIS sgemm per shape (GFLOP/s, median min max)", ""]
            for (b, t), shapes in self.gemm_shapes.items():
                lines.append(f"batch {b}, {t} thread{'s' if t > 1 else ''}:")
                lines.append("")
                lines += ["    " + s for s in shapes]
                lines.append("")
        peer_list = "; ".join(f"`{k}`: {label.replace('=N', '=T').replace('(N)', '(T)')}" + (" (AVX-512 CPUs)" if n512 else "") +
                              (f" (from {mt} threads)" if mt > 1 else "") +
                              (f" ({', '.join(sorted(secs))} only)" if secs else "")
                              for k, label, _, _, secs, n512, mt in PEER_CONFIGS)
        lines += ["", "## How each figure is measured", "",
                  "0. `bench_peak` runs independent chains of float32 fused multiply-adds that never leave the "
                  "registers (12 chains of 256-bit AVX2 FMAs; 16 of 512-bit AVX-512 FMAs where the CPU has them), "
                  "on 1 thread and on 2 threads at once (each pinned to its own core), and prints each thread's "
                  "GFLOP/s; the peak of T cores is T x the best run of the better ISA at T threads (other work "
                  "only slows a run down). A figure's `% of peak` is the FLOPs its step really does per example "
                  "(the matrix products' multiply-adds x 2: forward, weight gradient and input gradient of every "
                  "layer, except the first layer's input gradient, which nothing asks for; bias, activations, "
                  "pooling and the optimizer not counted) x examples/s / that peak. The peer, PyTorch, is "
                  "measured in every configuration below, each in a `compare_torch.py --serve` process of its own "
                  "started with the configuration's environment (variables set before torch is imported: Debian's "
                  "PyTorch multiplies with BLIS, which `torch.set_num_threads(T)` alone does not thread; "
                  "BLIS_NUM_THREADS, OMP_NUM_THREADS, OMP_WAIT_POLICY, ATEN_CPU_CAPABILITY and the like cleared "
                  "first), every configuration with `torch.set_num_threads(T)` and `torch.set_num_interop_threads(1)`: "
                  + peer_list + ". Every figure of PyTorch's is shown for each configuration; `best` marks the best "
                  "median at each thread count, and every ratio to PyTorch is taken against that configuration, "
                  "paired per repetition (ours and each configuration run in turn, the order reversed every "
                  "other repetition). The 1024^3 matmul rows time `a @ b` in each configuration: a 2-thread "
                  "figure near the 1-thread one means BLIS did not thread. Tried and left out: "
                  "OMP_WAIT_POLICY=active and GOMP_SPINCOUNT=infinite (GOMP's default spin already spans the gaps "
                  "between a step's parallel regions), GOMP_SPINCOUNT=0 (what `passive` does), convolutions "
                  "without oneDNN (`torch.backends.mkldnn.enabled = False`: about half the speed in a trial), "
                  "more inter-op threads (eager PyTorch does not use that pool).",
                  "1. `bench/gen_netdesc.py` writes a ~10 MB NetDesc (vars with init messages, ops with int, float, "
                  "string, list and bool attributes, comments, `<>` and `{}`, `;`/`,` separators, escapes, string "
                  "concatenation, hex ints, enums by name). `bench_parse` times `pd_text_parse` on it in memory; "
                  "protoc is timed as a whole process (`protoc --encode=paddle.NetDesc -I proto proto/paddle.proto`, "
                  "stdin from the file, stdout to /dev/null) and again with the median time of protoc on an empty "
                  "input subtracted.",
                  "2. `bench_dispatch` builds `var x0 [1]` and 1000 `scale` ops as text, loads it with "
                  "`pd_net_from_text` and times `pd_runner_run` over the chain (after a first run that allocates); "
                  "the same kernels called directly through their function pointers give the kernel time.",
                  "3. `bench_exec` fork/execs the command and times it to exit (wait4 also gives ru_maxrss). The "
                  "parameter directory comes from `train --iterations 1 --save`. The start-up to the first step is "
                  "the log's `start` record (`startup`: seconds from main() to the first step: net loaded, data "
                  "files opened and gzip inflated, parameters initialised) plus the process floor (`--version`: "
                  "exec, dynamic linking, exit); the whole-process figure of `train --iterations 1` also holds the "
                  "final evaluation over the 10000 test images.",
                  "4. `paddle-run train netdescs/fashion_mlp.pbtxt --threads T --batch-size B --iterations K "
                  "--log-every L --log F`: examples/s over every logged interval after the first (steps L..K), "
                  "from the log's `elapsed`, with `--no-shuffle --params INIT`. Peak RSS is the process's "
                  "ru_maxrss. `bench/compare_torch.py` runs the same computation in PyTorch, each of our runs "
                  "paired with one of its runs in alternating order, timed over the same steps: the same "
                  "layers, starting from the same parameters (INIT: the .npy files our initializer writes, "
                  "loaded by both; fc weights transposed from our [in, out] to PyTorch's [out, in]; INIT is "
                  "`train --iterations 0 --save`, no step), the same batches "
                  "in the same order (`--no-shuffle`: rows in file order, epoch after epoch, the short batch at "
                  "an epoch's end; PyTorch gathers each batch by index as a shuffled run would), the same "
                  "optimizer and schedule (SGD momentum 0.9, lr 0.05 on the file's cosine over 9380 steps, set "
                  "each step), cast/scale in the step, softmax + accuracy each step, `loss.item()` each step (ours "
                  "reads the loss each step too), in every peer configuration (see 0). Same computation, checked: the "
                  "mean loss of steps 1..L from our log and from PyTorch must agree to 1e-4 relative in every "
                  "pair, or the bench fails (exit 1, the report goes to bench/out/RESULTS.failed.md); the last "
                  "interval's difference is shown, not checked: in float32 PyTorch drifts from the exact "
                  "computation after a few hundred steps (checked once at batch 64, 1 thread, against PyTorch in "
                  "float64: ours stayed within 1e-7 of it up to step 200, PyTorch's float32 run jumped to 4e-6 "
                  "at step 188 and grew from there). PyTorch's peak RSS: compare_torch.py run as its own "
                  "process for the batch-64, 1-thread run (import, data, training; ru_maxrss via bench_exec), "
                  "paired with our run of the same configuration. The 2-thread target compares ours on 2 "
                  "threads with PyTorch's best configuration over both thread counts (by median), paired per "
                  "repetition.",
                  "5. `bench_gemm` times bare BLIS (`bli_sgemm_ex` with T threads of BLIS's own, the calls "
                  "ops/fc.c makes, same transposes) and, on 2 threads, also `pd_gemm_float` (one-thread BLIS "
                  "products split on our worker pool; BLIS 0.9 starts its threads in every call, which on this "
                  "machine can cost more than the product) on the 8 products of one training step, and takes the "
                  "faster as BLIS's rate on T cores: X·W for 3 layers, Xᵀ·dY for 3 layers, "
                  "dY·Wᵀ for layers 2 and 3. The limit is batch / (time of those 8 products): the FLOPs the step "
                  "really does (no dX for the first layer, whose input is data; `check`'s forward FLOPs x 3 would "
                  "overcount it by a third of the first layer's share). The set is timed two ways: "
                  "one product after another, each with its own operands (the `this step's 8 products` line), and "
                  "each shape repeated with its operands warm in cache (the sum of the per-shape medians); the "
                  "bare-BLIS rate our path is held to is the faster of the two. Our path: `paddle-run time --json` "
                  "on the same net, batch and threads, which times each `pd_gemm_float` call the runner makes "
                  "inside the ops of a training step (20 steps after 50 warm-up, per run: on 2 threads the first few dozen steps of a process ran up to 1.5x slower here while the scheduler settled the pool's thread on the other core, and the figure is meant for the steady state, as the training figures are), and gives those calls' "
                  "GFLOP/s and their share of the time of all the step's ops.",
                  "6. `bench_infer` loads the net and the parameter directory, prunes to `prob`, fills `pixels` "
                  "and times `pd_runner_run` per batch (each run averages enough batches to last ~20 ms). At "
                  "batch 1, each run of ours alternates with a run of compare_torch.py's: the same MLP with the "
                  "same parameters (that directory), cast, scale, the three layers and the softmax under "
                  "`torch.no_grad()` (`torch.inference_mode()` in the `infmode` configuration), in every peer "
                  "configuration (see 0), timed the same way; the ratio, against the best configuration, is per pair. "
                  "The process figure is `paddle-run infer` on the 10000 "
                  "test images including start-up and decompression.",
                  "7. `paddle-run train` on netdescs/fashion_cnn.pbtxt with its eval_data lines removed (so no "
                  "evaluation pass is timed), its batch of 64, `--threads T --iterations K --log-every L --log F`: "
                  "examples/s over every logged interval after the first (steps L..K), from the log's `elapsed` "
                  f"(K = {self.cnn_config()[1]}, L = {self.cnn_config()[2]}). `bench/compare_torch.py --model cnn` "
                  "runs the identical net in PyTorch: conv 5x5 (32 then 64 filters, padding 2, stride 1, with "
                  "bias), relu, max pool 2x2 stride 2, flatten, fc 3136x256 + relu, dropout, fc 256x10, "
                  "softmax cross-entropy plus the softmax and accuracy each step, Adam with lr 0.002 on the "
                  "file's cosine schedule (ours: the second convolution by Winograd F(4x4, 5x5), which "
                  "`--conv-algo auto` picks). The same for netdescs/fashion_cnn3.pbtxt and `--model cnn3`: four 3x3 "
                  "convolutions (32, 32, then 64, 64 filters, padding 1, with bias, each with relu, a max pool 2x2 "
                  "after each pair; ours take Winograd F(4x4, 3x3) where `--conv-algo auto` picks it) and the same "
                  "layers from flatten on. Both nets start with their convolutions' biases at 0.01 rather than the "
                  "initializer's 0 (bench.py's nudge_conv_biases says why); `% of peak` counts the convolutions as "
                  "direct products. Each net "
                  "in every peer configuration (see 0; `nhwc` puts model and input in "
                  "channels-last), timed over the same steps. All of it is run twice: with the file's Adam, and "
                  "with momentum SGD on both sides (the file with `type: \"momentum\" lr: 0.01 momentum: 0.9`, "
                  "torch.optim.SGD(momentum=0.9), lr on the same cosine), so that neither optimizer's cost decides "
                  "the ratio. As in 4, both "
                  "start from the same INIT parameters with the batches in file order (`--no-shuffle`), and the "
                  "loss of each of steps 1-5 (a separate 5-step pair of runs logged every step) must agree to 1e-4 "
                  "relative; the long runs' mean losses are shown, not checked: Adam moves a parameter with a "
                  "near-zero gradient by about lr in a direction rounding decides, and the two runs drift apart "
                  "exponentially (about x1.5 a step: 2e-7 at step 2, ~1e-3 by step 25 on the Intel machine, while "
                  "the AMD one had 2e-5 at step 50). For that, dropout_prob is set to 0 in "
                  "both (the dropout op still runs; with 0.5 the random masks would differ and no loss could "
                  "agree), so these figures are for the shipped net with dropout 0. "
                  f"Runs alternate ours / PyTorch (order flipped each time), {self.cnn_runs} of each rather than "
                  "5+, as each run takes 15-40 s. The 2-thread target compares ours on 2 threads with PyTorch's "
                  "best configuration over 1 and 2 threads (by median), per repetition (paired) and as medians. "
                  "CPU stall is the share of each run's wall time in which some task waited for a CPU (/proc/pressure/cpu).",
                  "8. The tiny net is bench/tiny.pbtxt (fc 16 + ReLU, fc 2, softmax cross-entropy, mean; "
                  "momentum 0.9, lr 0.01) on 4096 generated rows (x standard normal, label = x0·x1 > 0), batch 1, "
                  "1 thread. Ours: `paddle-run train` with `--no-shuffle --params INIT --log-every 1000`, the "
                  "time per step from the log's examples/s of each interval after the first (the whole step as "
                  "the trainer runs it: feeding the row, forward, backward, update, reading the loss). "
                  "PyTorch: compare_torch.py --model tiny, the same parameters and rows in the same order, the "
                  "full step (gather the row, forward, cross_entropy, zero_grad, backward, SGD step, "
                  "`loss.item()`) timed over steps 1001..3000 (2000 in the quick mode), each run paired with one "
                  "of ours in alternating order, in every peer configuration (see 0). The mean loss of steps "
                  "1..1000 must agree to 1e-4 relative as in 4.", "",
                  "9. `paddle-run train netdescs/fashion_mlp.pbtxt --threads 1 --batch-size 256 --iterations K "
                  "--log-every 15 --log F`, once as one process and once under `mpirun -np 2 --bind-to none` "
                  "(each rank 128 rows of every global batch of 256; one allreduce of all gradients per step): "
                  "examples/s over the logged intervals after the first, from the log's `elapsed`; the "
                  "communication share is the growth of rank 0's `comm_seconds` (time inside collectives, "
                  "waiting for the other rank included) over the same interval. Runs alternate 1 and 2 ranks. "
                  "The bound: `bench_gemm 1 128 5` (the 8 products of a rank's half batch on one BLIS thread) "
                  "alone, then two copies started together; the median time of a set of products in each, "
                  "and 2 x alone / (the mean of the two together).",
                  ""]
        if PEER_SEEN:
            self.notes.append("PyTorch's --serve processes reported (threading variables set before torch was "
                              "imported: the ATen kernel set in use): " + "; ".join(sorted(PEER_SEEN)) + ".")
        if RETRIES:
            self.notes.append(f"{len(RETRIES)} run(s) failed (killed from outside?) and were repeated: " +
                              "; ".join(f"`{r}`" for r in RETRIES[:5]) + ".")
        if self.notes:
            lines += ["## Notes", ""] + [f"- {n}" for n in self.notes] + [""]
        return lines

    def table(self):
        print("\n" + "=" * 110)
        w = max(len(f) for _, f, _, _ in self.rows)
        sec = None
        for s, f, v, g in self.rows:
            if s != sec:
                print(f"\n{s}")
                sec = s
            print(f"  {f:<{w}}  {v:<30} {g}")
        print("=" * 110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--torch", default="no", help="yes, or why not")
    ap.add_argument("--torch-reason", default="")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true",
                    help="a few steps of everything, to check the machinery; the report goes to "
                         "bench/out/RESULTS.smoke.md and its figures mean nothing")
    ap.add_argument("--only", default="",
                    help="comma-separated sections (peak,parse,dispatch,startup,train,gemm,infer,cnn,tiny,rnn,dist,gpu); "
                         "the report goes to "
                         "bench/out/RESULTS.only.md unless --merge")
    ap.add_argument("--merge", action="store_true",
                    help="with --only: replace those sections' figures in bench/RESULTS.md, keeping the others")
    a = ap.parse_args()
    a.quick = a.quick or a.smoke
    b = Bench(a)
    t0 = time.time()
    b.environment()
    only = set(a.only.split(",")) if a.only else None
    want = lambda s: only is None or s in only  # noqa: E731
    print(f"paddle-run bench: {b.env['cpu']}, {b.env['cores']} cores, BLIS {b.env['blis']}, "
          f"{b.runs} runs per figure", flush=True)
    if any(want(s) for s in ("peak", "train", "gemm", "infer", "cnn", "tiny", "rnn")):
        b.peak()  # the figures below are also shown as a fraction of it
    if want("parse"):
        b.parse()
    if want("dispatch"):
        b.dispatch()
    if want("startup") or want("infer"):
        b.startup()
    if want("train"):
        b.training()
    if want("gemm"):
        b.gemm()
    if want("infer"):
        b.infer()
    if want("cnn"):
        b.cnn()
    if want("tiny"):
        b.tiny()
    if want("rnn"):
        b.rnn()
    if want("dist"):
        b.dist()
    if want("gpu"):
        b.gpu()
    b.end_section()
    b.table()
    lines = b.report(time.time() - t0)
    results = os.path.join(ROOT, "bench", "RESULTS.md")
    if a.smoke:
        where = os.path.join(b.out, "RESULTS.smoke.md")
    elif only is None:
        where = results
    elif a.merge:
        where = results
        lines = merge_results(results, lines, b.env, a.only)
    else:
        where = os.path.join(b.out, "RESULTS.only.md")
    if LOSS_FAIL:  # not the same computation: the ratios mean nothing, so bench/RESULTS.md is left alone
        where = os.path.join(b.out, "RESULTS.failed.md")
    with open(where, "w") as f:
        f.write("\n".join(lines))
    what = "" if only is None else (f" (sections {a.only} merged in)" if a.merge else f" (sections {a.only} only)")
    print(f"wrote {os.path.relpath(where, ROOT)}{what} ({time.time() - t0:.0f} s)")
    if LOSS_FAIL:
        sys.stderr.write("bench: FAILED: ours and PyTorch do not compute the same losses:\n" +
                         "".join(f"  {m}\n" for m in LOSS_FAIL))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

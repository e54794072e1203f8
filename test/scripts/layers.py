# layers.py — lib/ is in layers, one folder each (docs/architecture.md), and
# every #include "..." of lib/, ops/ and cmd/ points down them: a file may
# include its own layer and the layers listed for it in MAY_USE, nothing
# above or beside. A lib header is named with its layer ("core/tensor.h"),
# never bare. The dependencies that still point the wrong way are listed,
# each with its reason, in layers.allow; an entry that is no longer needed
# fails too, so the list only shrinks.
import os, re, sys

ROOT = os.environ.get("ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LAYERS = ["base", "text", "cpu", "core", "gpu", "io", "onnx", "dist"]
# Who may include whom, besides itself (bottom up). ops/ (the op kernels)
# and cmd/ (the program) sit on top of lib/.
MAY_USE = {
    "base": [],
    "text": ["base"],
    "cpu": ["base"],
    "core": ["base", "text", "cpu"],
    "gpu": ["base", "text", "cpu", "core"],
    "io": ["base", "text", "cpu", "core"],
    "onnx": ["base", "text", "cpu", "core", "io"],
    "dist": ["base", "text", "cpu", "core", "gpu"],
    "ops": ["base", "text", "cpu", "core", "gpu", "dist"],
    "cmd": LAYERS + ["ops"],
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

lib_headers = {}  # bare name -> its layer
for layer in LAYERS:
    d = os.path.join(ROOT, "lib", layer)
    if not os.path.isdir(d):
        print(f"FAIL: lib/{layer}/ is missing")
        sys.exit(1)
    for f in os.listdir(d):
        lib_headers[f] = layer
for d in os.listdir(os.path.join(ROOT, "lib")):
    if d not in LAYERS:
        print(f"FAIL: lib/{d} is in no layer (test/scripts/layers.py)")
        sys.exit(1)


def sources():
    for top in ["lib", "ops", "cmd"]:
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for n in sorted(names):
                if n.endswith((".c", ".h", ".cu", ".cuh", ".def")):
                    yield os.path.relpath(os.path.join(dirpath, n), ROOT)


def layer_of_file(path):
    parts = path.split("/")
    return parts[1] if parts[0] == "lib" else parts[0]


def layer_of_include(src, inc):
    """The layer an include names, None for a generated header, or an error."""
    if inc.endswith(".pb-c.h"):
        return None, None
    head = inc.split("/")[0]
    if "/" in inc and head in LAYERS:
        if not os.path.isfile(os.path.join(ROOT, "lib", inc)):
            return None, f"no lib/{inc}"
        return head, None
    if "/" not in inc and inc in lib_headers:
        return None, f'name its layer: "{lib_headers[inc]}/{inc}"'
    src_dir = os.path.dirname(src)
    if os.path.isfile(os.path.join(ROOT, src_dir, inc)):
        return layer_of_file(os.path.join(src_dir, inc)), None
    for top in ["ops", "cmd"]:
        if "/" not in inc and os.path.isfile(os.path.join(ROOT, top, inc)):
            return top, None
    return None, "not found"


allow = {}  # (file, include) -> line number in layers.allow
allow_path = os.path.join(ROOT, "test", "scripts", "layers.allow")
for no, line in enumerate(open(allow_path), 1):
    line = line.split("#", 1)[0].strip()
    if line:
        src, inc = line.split()
        allow[(src, inc)] = no

bad = 0
used = set()
for src in sources():
    me = layer_of_file(src)
    text = open(os.path.join(ROOT, src), errors="replace").read()
    for inc in INCLUDE.findall(text):
        layer, err = layer_of_include(src, inc)
        if err:
            print(f'FAIL: {src}: #include "{inc}": {err}')
            bad = 1
            continue
        if layer is None or layer == me or layer in MAY_USE[me]:
            continue
        if (src, inc) in allow:
            used.add((src, inc))
            continue
        print(f'FAIL: {src} ({me}) includes "{inc}" ({layer}): {me} may use only {", ".join(MAY_USE[me]) or "itself"}')
        bad = 1
for key, no in sorted(allow.items(), key=lambda kv: kv[1]):
    if key not in used:
        print(f"FAIL: layers.allow:{no}: {key[0]} -> {key[1]} is not needed any more: remove it")
        bad = 1
print(f"{'FAIL' if bad else 'ok'}: {len(used)} known upward includes (layers.allow)")
sys.exit(bad)

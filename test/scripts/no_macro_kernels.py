# no_macro_kernels.py — the op layout of docs/architecture.md ("Op files"),
# checked where a slip would go unseen:
#  a. float/double code is an include template (lib/base/tmpl.h), never a
#     macro body pasting its type: no `#define NAME(...)` whose body has
#     ##T or T## in lib/, ops/ or cmd/ (a call such as PD_DATA(x, T) is no
#     body; tmpl.h's own PD_T plumbing pastes no T);
#  b. an ops/*.cu file takes its op's slots from the op's header: no
#     anonymous enum of slots (N_IN, N_OUT, N_ATTRS, A_...) of its own;
#  c. an op def counts its tables with PD_LEN: `.n_inputs`, `.n_outputs`,
#     `.n_attrs`, `.n_kernels` and `.n_grad_kernels` are PD_LEN(...), not
#     N_IN or a number.
import os, re, sys

ROOT = os.environ.get("ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SOURCES = (".c", ".h", ".cu", ".cuh")


def files(*dirs):
    for d in dirs:
        for dirpath, _, names in os.walk(os.path.join(ROOT, d)):
            for n in sorted(names):
                if n.endswith(SOURCES):
                    yield os.path.join(dirpath, n)


def rel(path):
    return os.path.relpath(path, ROOT)


def strip_comments(text):
    """Comments blanked out; newlines and backslashes kept, so line numbers
    stay right and a comment inside a macro body keeps the body going."""
    return re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: re.sub(r"[^\n\\]", " ", m.group(0)), text, flags=re.S)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


problems = {"a": [], "b": [], "c": []}

# a. macro bodies that paste T
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\[ \t]*\n)*[^\n]*)", re.M)
PASTE_T = re.compile(r"##\s*T\b|\bT\s*##")
for f in files("lib", "ops", "cmd"):
    text = strip_comments(open(f, encoding="utf-8").read())
    for m in DEFINE.finditer(text):
        if PASTE_T.search(m.group(3)):
            problems["a"].append(f"{rel(f)}:{line_of(text, m.start())}: #define {m.group(1)}({m.group(2)}) pastes ##T")

# b. slot enums in a .cu
ENUM = re.compile(r"\benum\s*\{([^}]*)\}")
SLOT = re.compile(r"\b(N_IN|N_OUT|N_ATTRS?|A_\w+)\b")
for f in sorted(f for f in files("ops") if f.endswith(".cu")):
    text = strip_comments(open(f, encoding="utf-8").read())
    for m in ENUM.finditer(text):
        if SLOT.search(m.group(1)):
            body = " ".join(m.group(1).split())
            problems["b"].append(f"{rel(f)}:{line_of(text, m.start())}: enum {{ {body} }}")

# c. tables counted by hand
COUNT = re.compile(r"\.(n_inputs|n_outputs|n_attrs|n_kernels|n_grad_kernels)\s*=\s*([^,}\n]+)")
for f in files("ops"):
    text = strip_comments(open(f, encoding="utf-8").read())
    for m in COUNT.finditer(text):
        value = m.group(2).strip().rstrip("\\").strip()
        if not value.startswith("PD_LEN("):
            problems["c"].append(f"{rel(f)}:{line_of(text, m.start())}: .{m.group(1)} = {value}")

WHAT = {
    "a": "macro bodies pasting ##T (write an include template, lib/base/tmpl.h)",
    "b": "slot enums declared in a .cu (include the op's header, ops/NAME.h)",
    "c": "op tables counted by hand (use PD_LEN(table))",
}
bad = False
for k in "abc":
    if problems[k]:
        bad = True
        print(f"FAIL: {WHAT[k]}:")
        for p in problems[k]:
            print("  " + p)
if bad:
    sys.exit(1)
print("ok: no ##T macro bodies, no slot enums in .cu files, op tables counted by PD_LEN")

#!/usr/bin/python3
"""fmt_in_place.py — `paddle-run fmt -i` rewrites a file in place and keeps
every comment.

Each netdescs/*.pbtxt, each test net (test/cli/data, test/bad/common) and a
file written to have comments in awkward places goes through `fmt -i` in a
scratch copy. Checked: the comments are the same multiset of texts, the net
loads to the same `desc` output, a second `fmt -i` changes nothing (fmt is
idempotent), `fmt` to stdout prints what -i wrote. A file with a parse error
is left byte for byte as it was, with exit 2 and no temporary file behind.
"""
import collections
import glob
import os
import shutil
import subprocess
import sys
import tempfile

PR = os.environ["PR"]
ROOT = os.environ["ROOT"]

AWKWARD = """# header, before the first field
name: "awk # not a comment"  # trailing a scalar
var { name: "x" shape: [-1,  # inside a list
                        4] }
var {
  # alone in a message, before its field
  name: "y" shape: [-1, 1] dtype: INT64
  # at the end of a message
}
op { type: "fc" inputs: "x" outputs: "h"  # trailing a one-line op
     attrs { key: "size" value { i: 3 } } }  # trailing a continuation
op { type: "fc" inputs: 'h' outputs: "logits" attrs { key: "size" value { i: 2 } } }
op { type: "softmax_with_cross_entropy" inputs: ["logits", "y"] outputs: ["sm", "loss"] }
op { type: "mean" inputs: "loss" outputs: "avg" }
train {
  loss: "avg"
  optimizer {
    type: "sgd"
    # before a closing brace, after a nested message's last field
  }
} # after the last closing brace
# at the end of the file
"""


def comments(text):
    """The comment texts of protobuf text (not # inside strings), blanks trimmed."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            i += 1
            while i < n and text[i] != c and text[i] != "\n":
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif c == "#":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(text[i:j].rstrip())
            i = j
        else:
            i += 1
    return collections.Counter(out)


def run(*args):
    return subprocess.run([PR] + list(args), capture_output=True, text=True)


def main():
    fails = []
    scratch = tempfile.mkdtemp()
    try:
        nets = sorted(glob.glob(os.path.join(ROOT, "netdescs", "*.pbtxt")))
        nets += sorted(glob.glob(os.path.join(ROOT, "test", "cli", "data", "*.pbtxt")))
        nets.append(os.path.join(ROOT, "test", "bad", "common", "net.pbtxt"))
        awk = os.path.join(scratch, "awkward.pbtxt")
        with open(awk, "w") as f:
            f.write(AWKWARD)
        nets.append(awk)
        for i, src in enumerate(nets):
            name = os.path.relpath(src, ROOT) if src != awk else "awkward.pbtxt"
            work = os.path.join(scratch, "%d.pbtxt" % i)
            shutil.copy(src, work)
            with open(work) as f:
                before = f.read()
            desc_before = run("desc", work)
            r = run("fmt", "-i", work)
            if r.returncode != 0:
                fails.append("%s: fmt -i exit %d: %s" % (name, r.returncode, r.stderr.strip()))
                continue
            with open(work) as f:
                after = f.read()
            if comments(after) != comments(before):
                lost = comments(before) - comments(after)
                added = comments(after) - comments(before)
                fails.append("%s: comments lost %s, added %s" % (name, dict(lost), dict(added)))
            desc_after = run("desc", work)
            if (desc_before.returncode, desc_before.stdout) != (desc_after.returncode, desc_after.stdout):
                fails.append("%s: desc differs after fmt -i" % name)
            if run("fmt", work).stdout != after:
                fails.append("%s: fmt to stdout differs from what fmt -i wrote" % name)
            run("fmt", "-i", work)
            with open(work) as f:
                if f.read() != after:
                    fails.append("%s: a second fmt -i changed it (not idempotent)" % name)
            print("ok: %s: %d comments kept, desc %s" %
                  (name, sum(comments(before).values()), "equal" if desc_before.returncode == 0 else "fails alike"))

        # a parse error: the file stays as it was
        bad_dir = os.path.join(scratch, "bad")
        os.mkdir(bad_dir)
        bad = os.path.join(bad_dir, "bad.pbtxt")
        text = "# keep me\nname: \"x\"\nop { type: \"fc\" inputs: [\"a\",] }\n"
        with open(bad, "w") as f:
            f.write(text)
        r = run("fmt", "-i", bad)
        with open(bad) as f:
            same = f.read() == text
        if r.returncode != 2 or not same or os.listdir(bad_dir) != ["bad.pbtxt"]:
            fails.append("bad file: exit %d, unchanged %s, files %s" % (r.returncode, same, os.listdir(bad_dir)))
        else:
            print("ok: a file that does not parse is left as it was (exit 2)")
    finally:
        shutil.rmtree(scratch)
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

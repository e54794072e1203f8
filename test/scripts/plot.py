# plot.py — `paddle-run plot` draws train --log files as an SVG that any
# viewer shows: two fit_a_line runs at two learning rates give a panel with a
# line per run (the step records' points) and a dashed evaluation line, a
# legend naming the lr; the file is well-formed XML, the same logs give the
# same bytes, a null is left out with a note, --log-y, --x epoch and --only
# work, a log cut short is plotted from its complete lines; headless
# Chromium renders it to a PNG with the runs' colours in it. Without
# chromium it skips, except under CI=true, where it fails (make test
# installs it).
import os, shutil, struct, subprocess, sys, zlib
import xml.etree.ElementTree as ET

PR, ROOT = os.environ["PR"], os.environ["ROOT"]
NET = os.path.join(ROOT, "netdescs/fit_a_line.pbtxt")
SVG = "{http://www.w3.org/2000/svg}"


def pr(*args, ok=True):
    r = subprocess.run([PR, *args], capture_output=True, text=True, timeout=120)
    assert (r.returncode == 0) == ok, (args, r.returncode, r.stdout, r.stderr)
    return r


# 16 steps an epoch: 2 epochs logged every 4 steps = 8 step records, 2 evaluations
for name, lr in (("a", "0.1"), ("b", "0.01")):
    pr("train", NET, "--lr", lr, "--epochs", "2", "--log-every", "4", "--threads", "1", "--log", name + ".jsonl")

r = pr("plot", "a.jsonl", "b.jsonl", "-o", "curves.svg")
assert "plotted 2 logs, 1 panel, to curves.svg" in r.stdout, r.stdout
svg = open("curves.svg", "rb").read()
root = ET.fromstring(svg)  # well-formed, or this raises
panels = root.findall(f"{SVG}g[@class='panel']")
assert [p.get("data-quantity") for p in panels] == ["avg_loss"], panels


def lines(panel, cls):
    return {p.get("data-run"): p.get("points").split() for p in panel.findall(f"{SVG}polyline[@class='{cls}']")}


train, ev = lines(panels[0], "train"), lines(panels[0], "eval")
assert sorted(train) == ["1", "2"] and all(len(v) == 8 for v in train.values()), train
assert sorted(ev) == ["1", "2"] and all(len(v) == 2 for v in ev.values()), ev
strokes = {p.get("stroke") for p in panels[0].findall(f"{SVG}polyline[@class='train']")}
assert len(strokes) == 2, strokes
legend = ["".join(g.itertext()) for g in root.findall(f"{SVG}g[@class='legend']")]
assert len(legend) == 2 and legend[0].startswith("lr=0.1 ") and legend[1].startswith("lr=0.01 "), legend
assert "a.jsonl" in legend[0] and "b.jsonl" in legend[1], legend

# the same logs, the same bytes
pr("plot", "a.jsonl", "b.jsonl", "-o", "again.svg")
assert open("again.svg", "rb").read() == svg

# --x epoch: the last step at epoch 2; --only; --log-y
pr("plot", "a.jsonl", "b.jsonl", "-o", "e.svg", "--x", "epoch", "--only", "avg_loss,lr", "--log-y")
root = ET.parse("e.svg").getroot()
panels = root.findall(f"{SVG}g[@class='panel']")
assert [p.get("data-quantity") for p in panels] == ["avg_loss", "lr"], panels
ticks = [t.text for t in panels[0].findall(f"{SVG}text[@text-anchor='middle']")]
assert "2" in ticks and "epoch" in ticks, ticks
assert any(t.text == "log scale" for t in panels[0].iter(f"{SVG}text")), "no log-scale mark"

# a null (a non-finite loss) is left out with a note; a cut last line is left out with a message
log = open("a.jsonl").read().splitlines(keepends=True)
steps = [i for i, l in enumerate(log) if '"type":"step"' in l]
log[steps[3]] = log[steps[3]].replace('"avg_loss":', '"avg_loss":null,"was":', 1)
open("n.jsonl", "w").write("".join(log) + '{"type":"step","epoch":3,"step":3')
r = pr("plot", "n.jsonl", "-o", "n.svg")
assert "n.jsonl: the last line is cut short" in r.stderr, r.stderr
root = ET.parse("n.svg").getroot()
panel = root.find(f"{SVG}g[@class='panel']")
assert len(lines(panel, "train")["1"]) == 7, lines(panel, "train")
note = panel.find(f"{SVG}text[@class='note']")
assert note is not None and note.text.startswith("1 value not finite"), note
assert len(panel.findall(f"{SVG}path[@class='left-out']")) == 1

# names that need escaping stay well-formed
open("esc.jsonl", "w").write('{"type":"run","net":"a<b>&\\"c\\u00e9"}\n{"type":"step","step":1,"x&<y":1.5}\n'
                             '{"type":"step","step":2,"x&<y":2.5}\n')
pr("plot", "esc.jsonl", "a.jsonl", "-o", "esc.svg")
root = ET.parse("esc.svg").getroot()
assert 'a<b>&"c\u00e9' in "".join(root.find(f"{SVG}g[@class='legend']").itertext())

# ---- rendered by a browser: not blank, the two runs' colours in it
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    if os.environ.get("CI") == "true":
        print("FAIL: chromium not installed (make test installs it: mk/deps.sh, DEPS_TEST)")
        sys.exit(1)
    print("skipped: chromium not installed")
    sys.exit(77)
w, h = int(float(ET.fromstring(svg).get("width"))), int(float(ET.fromstring(svg).get("height")))
args = [chromium, "--headless", "--disable-gpu", "--hide-scrollbars", "--screenshot=" + os.path.abspath("c.png"),
        f"--window-size={w},{h}", "--user-data-dir=" + os.path.abspath("chromium-profile")]
if os.getuid() == 0:
    args.append("--no-sandbox")
env = dict(os.environ, HOME=os.path.abspath("."))
r = subprocess.run(args + ["file://" + os.path.abspath("curves.svg")], capture_output=True, text=True, env=env,
                   timeout=120)
assert r.returncode == 0 and os.path.exists("c.png"), (r.returncode, r.stderr[-2000:])


def png_pixels(path):
    """RGB(A) rows of a non-interlaced 8-bit PNG, with zlib only."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
    bpp = 3 if ctype == 2 else 4
    raw, stride, prev, rows, i = zlib.decompress(idat), width * bpp, bytearray(width * bpp), [], 0
    for _ in range(height):
        ft, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if ft == 1:
                line[x] = (line[x] + a) & 255
            elif ft == 2:
                line[x] = (line[x] + b) & 255
            elif ft == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


width, height, bpp, rows = png_pixels("c.png")
colours = {}
for row in rows:
    for x in range(0, len(row), bpp):
        px = row[x:x + 3]
        colours[px] = colours.get(px, 0) + 1
assert len(colours) > 20, f"{len(colours)} colours: a blank page?"


def near(rgb):
    return sum(n for c, n in colours.items() if max(abs(c[k] - rgb[k]) for k in range(3)) <= 24)


blue, orange = near((0x1f, 0x77, 0xb4)), near((0xff, 0x7f, 0x0e))
assert blue > 50 and orange > 50, (blue, orange)
print(f"ok: {width}x{height} PNG, {len(colours)} colours, run 1 {blue} px, run 2 {orange} px")

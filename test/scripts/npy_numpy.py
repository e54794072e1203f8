"""npy_numpy.py — cross-checks lib/npy against numpy itself, through
build/test/npytool: files numpy writes (every dtype, ranks 0..8, format
versions 1.0/2.0/3.0, gzip) read back with equal dtype, shape and values;
files numpy writes that we do not support are refused with a message saying
what they are; files we write are byte for byte np.save's and numpy.load
reads them; and the real Fashion-MNIST files read through the data set API
agree with numpy's decoding (skipped, exit 77, when the data set is not
installed). Run by test/run.sh with BUILD set to the build directory."""
import gzip
import io
import os
import subprocess
import sys
import warnings

import numpy as np

BUILD = os.environ.get("BUILD", "build")
TOOL = os.path.join(BUILD, "test", "npytool")
FASHION = "/usr/share/datasets/fashion-mnist"
DTYPES = ["float32", "float64", "int32", "int64", "uint8"]
SHAPES = [(), (1,), (5,), (3, 4), (2, 3, 4), (2, 1, 3, 2), (0,), (3, 0), (1, 2, 1, 2, 1, 2, 1, 2), (70000,)]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def tool(*args):
    p = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def parse_read(out):
    """npytool read's output -> (dtype, shape tuple, list of value strings)."""
    lines = dict(line.split(" ", 1) if " " in line else (line, "") for line in out.splitlines())
    shape = tuple(int(d) for d in lines["shape"].strip("[]").split(",") if d.strip())
    return lines["dtype"], shape, lines.get("values", "").split()


def sample(dtype, shape, rng):
    """Values that exercise the dtype: extremes, negatives, specials."""
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "f":
        fi = np.finfo(dt)
        v = rng.standard_normal(n).astype(dt) * dt.type(1e3)
        special = np.array([fi.max, fi.min, fi.tiny, fi.tiny / 4, -0.0, np.inf, -np.inf, 0.1], dtype=dt)
    else:
        ii = np.iinfo(dt)
        v = rng.integers(ii.min, ii.max, n, dtype=dt, endpoint=True)
        special = np.array([ii.min, ii.max, 0, 1], dtype=dt)
    k = min(n, len(special))
    v[:k] = special[:k]
    return v.reshape(shape)


def same_values(arr, values):
    a = arr.ravel().astype(np.float64) if arr.dtype != np.int64 else arr.ravel()
    if len(values) != a.size:
        return False
    if arr.dtype == np.int64:  # beyond 2^53: compare as ints
        return [int(x) for x in a] == [int(v) for v in values]
    b = np.array([float(v) for v in values], dtype=np.float64)
    return np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))


def expect_read(path, arr, what):
    rc, out, err = tool("read", path)
    if rc != 0:
        check(False, f"{what}: npytool read failed: {err.strip()}")
        return
    dtype, shape, values = parse_read(out)
    check(dtype == arr.dtype.name, f"{what}: dtype {dtype}, expected {arr.dtype.name}")
    check(shape == arr.shape, f"{what}: shape {shape}, expected {arr.shape}")
    check(same_values(arr, values), f"{what}: values differ")


def expect_refused(path, want, what):
    rc, out, err = tool("read", path)
    check(rc == 2, f"{what}: exit {rc}, expected 2")
    check(want in err and path in err, f"{what}: message {err.strip()!r} lacks {want!r}")


def numpy_writes_we_read(rng):
    for dtype in DTYPES:
        for shape in SHAPES:
            arr = sample(dtype, shape, rng)
            np.save("n.npy", arr)
            expect_read("n.npy", arr, f"np.save {dtype}{shape}")
    # versions 2.0 and 3.0 (numpy picks 3.0 only for utf-8 field names; we ask)
    for version in [(1, 0), (2, 0), (3, 0)]:
        for dtype in DTYPES:
            arr = sample(dtype, (4, 3), rng)
            with open("v.npy", "wb") as f:
                np.lib.format.write_array(f, arr, version=version)
            rc, out, _ = tool("header", "v.npy")
            check(f"version {version[0]}.0" in out, f"version {version}: header says {out!r}")
            expect_read("v.npy", arr, f"write_array version={version} {dtype}")
    # gzip'd by Python's gzip module
    arr = sample("float64", (7, 5), rng)
    buf = io.BytesIO()
    np.save(buf, arr)
    with gzip.open("g.npy.gz", "wb") as f:
        f.write(buf.getvalue())
    expect_read("g.npy.gz", arr, "gzip .npy")
    # a 1-d Fortran array is also C order; numpy marks it so
    np.save("f1.npy", np.asfortranarray(np.arange(5, dtype=np.int32)))
    expect_read("f1.npy", np.arange(5, dtype=np.int32), "1-d fortran")


def numpy_writes_we_refuse(rng):
    tail = "is not supported; paddle-run reads float32, float64, int32, int64, uint8 little-endian"
    cases = [
        (np.arange(6, dtype=">f4"), f"dtype '>f4' (big-endian) {tail}"),
        (np.arange(6, dtype=">i8"), f"dtype '>i8' (big-endian) {tail}"),
        (np.arange(6, dtype=np.float16), f"dtype '<f2' (float16) {tail}"),
        (np.zeros(3, dtype=bool), f"dtype '|b1' (bool) {tail}"),
        (np.zeros(3, dtype=np.int8), f"dtype '|i1' (int8) {tail}"),
        (np.zeros(3, dtype=np.uint16), f"dtype '<u2' (uint16) {tail}"),
        (np.zeros(3, dtype=np.complex128), f"dtype '<c16' (complex128) {tail}"),
        (np.array(["ab", "c"]), f"dtype '<U2' (unicode strings) {tail}"),
        (np.array([b"ab", b"c"]), f"dtype '|S2' (byte strings) {tail}"),
        (np.array(["2020-01-01"], dtype="datetime64[D]"), f"dtype '<M8[D]' (datetime) {tail}"),
        (np.zeros(2, dtype=[("x", "<f4"), ("y", "<i4")]), "dtype is a structured dtype (a list of fields)"),
        (np.asfortranarray(np.zeros((2, 3), np.float32)), "stored in Fortran (column-major) order"),
    ]
    for i, (arr, want) in enumerate(cases):
        np.save(f"r{i}.npy", arr)
        expect_refused(f"r{i}.npy", want, f"refuse {arr.dtype}")
    np.save("obj.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    expect_refused("obj.npy", f"dtype '|O' (Python objects) {tail}", "refuse object array")
    # numpy chooses version 3.0 itself for a field name latin-1 cannot spell; the header parses,
    # the structured dtype is refused
    with warnings.catch_warnings():  # "can only be read by NumPy >= 1.17"
        warnings.simplefilter("ignore")
        np.save("u.npy", np.zeros(2, dtype=[("\u03bb", "<f4")]))
    check(open("u.npy", "rb").read(8)[6] == 3, "numpy did not write a v3 header for a utf-8 name")
    expect_refused("u.npy", "structured dtype", "refuse v3 structured")
    # truncated and over-long numpy files
    np.save("t.npy", np.arange(100, dtype=np.float64))
    data = open("t.npy", "rb").read()
    open("t.npy", "wb").write(data[:-3])
    expect_refused("t.npy", "truncated: shape [100] float64 needs 800 bytes of data from byte 128, but the file has 797",
                   "truncated numpy file")
    open("t.npy", "wb").write(data + b"\0")
    expect_refused("t.npy", "longer than its header says", "over-long numpy file")
    open("t.npy", "wb").write(data[:50])
    expect_refused("t.npy", "truncated: the header is 118 bytes long from byte 10", "cut header")


def pattern(dtype, shape):
    """npytool write's array (pattern() in npytool.c), computed the same way."""
    i = np.arange(int(np.prod(shape)), dtype=np.int64)
    if dtype == "uint8":
        v = ((i * 37 + 5) % 256).astype(np.float64)
    else:
        v = ((i * 7) % 23).astype(np.float64) - 11
        if dtype in ("float32", "float64"):
            v = v + (0.25 + 1e-3 * i.astype(np.float64))
        if dtype == "int64":
            v = v * 1e12
    return v.astype(dtype).reshape(shape)


def we_write_numpy_reads():
    for dtype in DTYPES:
        for shape in SHAPES:
            rc, _, err = tool("write", "w.npy", dtype, *shape)
            if rc != 0:
                check(False, f"npytool write {dtype}{shape}: {err.strip()}")
                continue
            want = pattern(dtype, shape)
            got = np.load("w.npy")
            check(got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want),
                  f"numpy.load of our {dtype}{shape}: got {got.dtype}{got.shape}")
            mm = np.load("w.npy", mmap_mode="r")  # needs the 64-byte aligned data numpy promises
            check(np.array_equal(mm, want), f"mmap load of our {dtype}{shape}")
            buf = io.BytesIO()
            np.save(buf, want)
            check(open("w.npy", "rb").read() == buf.getvalue(), f"our {dtype}{shape} file is not np.save's bytes")
    leftovers = [f for f in os.listdir(".") if ".tmp-" in f]
    check(not leftovers, f"temp files left behind: {leftovers}")


def dataset_npy(rng):
    """A numpy-written .npy through the data set API: shuffled gather checksums."""
    arr = rng.integers(-1000, 1000, (300, 3, 4), dtype=np.int32)
    np.save("d.npy", arr)
    rc, out, err = tool("dataset", "d.npy", "float64", 64)
    check(rc == 0, f"dataset d.npy: {err.strip()}")
    got = dict(line.split(" ", 1) for line in out.splitlines())
    rows = arr.reshape(300, -1).sum(axis=1).astype(np.float64)
    check(got.get("rows") == "300" and got.get("row_shape") == "[3, 4]" and got.get("dtype") == "int32",
          f"dataset d.npy header: {got}")
    check(float(got.get("sum", "nan")) == rows.sum(), "dataset d.npy sum")
    check(float(got.get("wsum", "nan")) == (rows * (np.arange(300) % 97 + 1)).sum(), "dataset d.npy wsum")


def fashion_mnist():
    files = {
        "train-images-idx3-ubyte.gz": (60000, "[28, 28]", 16),
        "train-labels-idx1-ubyte.gz": (60000, "[]", 8),
        "t10k-images-idx3-ubyte.gz": (10000, "[28, 28]", 16),
        "t10k-labels-idx1-ubyte.gz": (10000, "[]", 8),
    }
    for name, (nrows, row_shape, offset) in files.items():
        path = os.path.join(FASHION, name)
        labels = "labels" in name
        rc, out, err = tool("dataset", path, "int64" if labels else "float32", 1000)
        if rc != 0:
            check(False, f"{name}: {err.strip()}")
            continue
        got = dict(line.split(" ", 1) for line in out.splitlines())
        check(got["format"] == "IDX" and got["rows"] == str(nrows) and got["row_shape"] == row_shape
              and got["dtype"] == "uint8", f"{name}: {got}")
        with gzip.open(path, "rb") as f:
            raw = np.frombuffer(f.read(), dtype=np.uint8, offset=offset).reshape(nrows, -1)
        rows = raw.sum(axis=1, dtype=np.int64)
        check(int(float(got["sum"])) == int(rows.sum()), f"{name}: sum {got['sum']} != numpy's {rows.sum()}")
        wsum = int((rows * (np.arange(nrows) % 97 + 1)).sum())
        check(int(float(got["wsum"])) == wsum, f"{name}: row-weighted sum {got['wsum']} != numpy's {wsum}")
        if labels:
            check(got["min"] == "0" and got["max"] == "9", f"{name}: labels {got['min']}..{got['max']}, expected 0..9")
            check(set(np.bincount(raw.ravel())) == {nrows // 10}, f"{name}: classes are not balanced")


def main():
    if not os.access(TOOL, os.X_OK):
        print(f"{TOOL} is not built (make tests)")
        return 1
    rng = np.random.default_rng(7)
    numpy_writes_we_read(rng)
    numpy_writes_we_refuse(rng)
    we_write_numpy_reads()
    dataset_npy(rng)
    have_fashion = all(os.path.exists(os.path.join(FASHION, f)) for f in
                       ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"])
    if have_fashion:
        fashion_mnist()
    if failures:
        print(f"{len(failures)} checks failed")
        return 1
    if not have_fashion:
        print(f"skipped: Fashion-MNIST is not installed in {FASHION} (apt-get install dataset-fashion-mnist); "
              "the numpy cross-checks passed")
        return 77
    print("all npy/numpy cross-checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

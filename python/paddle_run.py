"""paddle_run — paddle-run's C API (libpaddle-run.so, docs/c_api.md) from
Python through ctypes; NumPy is the only dependency.

    import paddle_run
    net = paddle_run.Net("net.pbtxt", params="ckpt")
    y = net.infer(x=np_array)          # one output: the array; more: a dict

The library is found through $PADDLE_RUN_LIB (a path), next to this file,
in the lib directory of the prefix it is installed in, or by the system's
loader. Errors raise paddle_run.Error with the C API's message.
"""
import ctypes
import os

import numpy as np

__all__ = ["Error", "Net", "version"]

_DTYPES = {0: np.float32, 1: np.float64, 2: np.int32, 3: np.int64, 4: np.uint8}
_CODES = {np.dtype(t): c for c, t in _DTYPES.items()}
_OPEN_TRAIN = 1


class Error(Exception):
    """A failure the C API reported; .status is its pdr_status (1 runtime, 2 input, 3 misuse)."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def _load():
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("PADDLE_RUN_LIB")
    candidates = [env] if env else []
    # beside this file (a build directory), then PREFIX/lib when installed
    # in PREFIX/lib/python3/dist-packages
    for d in (here, os.path.normpath(os.path.join(here, "..", ".."))):
        candidates += [os.path.join(d, "libpaddle-run.so.0"), os.path.join(d, "libpaddle-run.so")]
    if not env:
        candidates.append("libpaddle-run.so.0")  # the system's loader
    errors = []
    for c in candidates:
        if os.sep in c and not os.path.exists(c):
            continue
        try:
            return ctypes.CDLL(c)
        except OSError as e:
            errors.append(str(e))
    raise ImportError("paddle_run: cannot load libpaddle-run.so (set PADDLE_RUN_LIB to its path): " +
                      "; ".join(errors or ["not found"]))


_lib = _load()
_P = ctypes.c_void_p
_I64P = ctypes.POINTER(ctypes.c_int64)
for name, res, args in [
    ("pdr_version", ctypes.c_char_p, []),
    ("pdr_open", ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint, ctypes.POINTER(_P)]),
    ("pdr_open_text", ctypes.c_int,
     [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_uint, ctypes.POINTER(_P)]),
    ("pdr_close", None, [_P]),
    ("pdr_errmsg", ctypes.c_char_p, [_P]),
    ("pdr_set_input", ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, _I64P, _P]),
    ("pdr_infer", ctypes.c_int, [_P, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]),
    ("pdr_train_step", ctypes.c_int, [_P]),
    ("pdr_output_count", ctypes.c_int, [_P]),
    ("pdr_output_name", ctypes.c_char_p, [_P, ctypes.c_int]),
    ("pdr_output", ctypes.c_int,
     [_P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int), ctypes.POINTER(_I64P),
      ctypes.POINTER(_P)]),
    ("pdr_save_params", ctypes.c_int, [_P, ctypes.c_char_p]),
]:
    f = getattr(_lib, name)
    f.restype, f.argtypes = res, args


def version():
    """The loaded library's version, "MAJOR.MINOR.PATCH"."""
    return _lib.pdr_version().decode()


def _b(s):
    return None if s is None else os.fsencode(s)


class Net:
    """A network with its parameters (a directory of NAME.npy files or a
    checkpoint, as `paddle-run infer --params` takes). train=True also
    builds the training step from the net's train section (params=None:
    initialised as `paddle-run train` does). text=... opens NetDesc text
    instead of a file (path then names it in messages)."""

    def __init__(self, path=None, params=None, train=False, text=None):
        h = _P()
        flags = _OPEN_TRAIN if train else 0
        if text is not None:
            t = text.encode() if isinstance(text, str) else bytes(text)
            st = _lib.pdr_open_text(_b(path or "<text>"), t, len(t), _b(params), flags, ctypes.byref(h))
        else:
            st = _lib.pdr_open(_b(path), _b(params), flags, ctypes.byref(h))
        self._h = h
        if st:
            msg = _lib.pdr_errmsg(h).decode(errors="replace")
            self.close()
            raise Error(msg, st)

    def close(self):
        if getattr(self, "_h", None):
            _lib.pdr_close(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check(self, st):
        if self._h is None:
            raise Error("the net is closed", 3)
        if st:
            raise Error(_lib.pdr_errmsg(self._h).decode(errors="replace"), st)

    def _set_inputs(self, inputs):
        for name, value in inputs.items():
            a = np.ascontiguousarray(value)
            if a.dtype not in _CODES:
                raise Error("input \"%s\": dtype %s is not one of float32, float64, int32, int64, uint8" %
                            (name, a.dtype), 2)
            dims = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
            self._check(_lib.pdr_set_input(self._h, name.encode(), _CODES[a.dtype], a.ndim, dims,
                                           a.ctypes.data_as(_P)))

    def _outputs(self):
        out = {}
        for i in range(_lib.pdr_output_count(self._h)):
            name = _lib.pdr_output_name(self._h, i)
            dt, nd, dims, data = ctypes.c_int(), ctypes.c_int(), _I64P(), _P()
            self._check(_lib.pdr_output(self._h, name, ctypes.byref(dt), ctypes.byref(nd), ctypes.byref(dims),
                                        ctypes.byref(data)))
            shape = tuple(dims[d] for d in range(nd.value))
            dtype = np.dtype(_DTYPES[dt.value])
            n = int(np.prod(shape, dtype=np.int64))
            buf = (ctypes.c_char * (n * dtype.itemsize)).from_address(data.value) if n else b""
            out[name.decode()] = np.frombuffer(buf, dtype=dtype, count=n).reshape(shape).copy()
        return out

    def infer(self, fetch=None, **inputs):
        """Sets the inputs (name=array) and runs forward what `fetch` (a name
        or a list; None: what no computed op reads) needs. One output: its
        array; more: a dict name -> array (copies)."""
        self._set_inputs(inputs)
        names = [fetch] if isinstance(fetch, str) else list(fetch or [])
        arr = (ctypes.c_char_p * max(len(names), 1))(*[n.encode() for n in names])
        self._check(_lib.pdr_infer(self._h, arr if names else None, len(names)))
        out = self._outputs()
        return next(iter(out.values())) if len(out) == 1 else out

    def train_step(self, **inputs):
        """One training step on the inputs (a whole batch), as one step of
        `paddle-run train`; returns a dict of the loss and train.metrics."""
        self._set_inputs(inputs)
        self._check(_lib.pdr_train_step(self._h))
        return self._outputs()

    def save(self, dir):
        """Saves the parameters and state as a checkpoint in dir (dir/step-N, dir/latest)."""
        self._check(_lib.pdr_save_params(self._h, _b(dir)))

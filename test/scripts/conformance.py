#!/usr/bin/python3
"""conformance.py — measures lib/textformat against protoc, the reference.

Generates text-format inputs from a fixed seed over two schemas (the test-only
pdtest.All / pdtest.Top and paddle.NetDesc): well-formed ones with randomised
spelling (whitespace, comments, separators, delimiters, quotes, escapes,
number forms, list syntax, map entries) and mutated ones (semantic faults
such as a singular field twice or an out-of-range integer, and token-level
damage such as a dropped or duplicated token). Each input goes through
`protoc --encode=TYPE` and through build/test/tfmt; they must agree on
accept/reject, and accepted inputs must encode to the same bytes. Our
canonical text (tfmt --text) must then re-encode, through protoc, to the same
bytes again (round trip).

protoc --encode accepts a message with missing required fields (it only
warns); its TextFormat::Parse proper rejects it, and so do we: a warning
counts as a reject, and our message must name one of the paths protoc lists.
Two known divergences, both where protobuf-c cannot hold what protoc
accepts, are counted separately, never as agreement: a NUL byte in a
`string` field (e.g. "a\\0b"; protobuf-c strings are NUL-terminated), and a
map entry left without its value when the value type has required fields
(protoc writes an empty value lacking them; protobuf-c always packs required
fields). We reject both with a message saying why.

Exit 0 when everything agrees, 1 with the first disagreements listed, 77
(skip) without protoc.
"""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

SEED = 20240607
N_PER_SCHEMA = {"pdtest.Top": (330, 330), "paddle.NetDesc": (230, 230)}  # (valid, mutated)

ROOT = os.environ.get("ROOT") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
TFMT = os.path.join(BUILD, "test", "tfmt")
SCHEMAS = {
    "pdtest.Top": (os.path.join(ROOT, "test", "proto"), "testall.proto"),
    "paddle.NetDesc": (os.path.join(ROOT, "proto"), "paddle.proto"),
}

# ---- a small .proto reader: enough for proto2 files like ours -----------------


class Field:
    def __init__(self, name, number, label, type_, oneof=None):
        self.name, self.number, self.label, self.type = name, number, label, type_
        self.oneof = oneof
        self.ref = None  # resolved full name for message/enum types
        self.map = None  # (key_type, value_field) for map fields


class Message:
    def __init__(self, full):
        self.full, self.fields, self.oneofs = full, [], {}


class Enum:
    def __init__(self, full):
        self.full, self.values = full, []  # [(name, number)]


SCALARS = {"int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64",
           "sfixed32", "sfixed64", "float", "double", "bool", "string", "bytes"}


def read_proto(path):
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    toks = re.findall(r'"(?:[^"\\]|\\.)*"|[A-Za-z_][\w.]*|-?\d[\w.]*|\S', text)
    pos = [0]
    types = {}
    package = [""]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else None

    def take(expect=None):
        t = toks[pos[0]]
        pos[0] += 1
        if expect is not None and t != expect:
            raise SystemExit("conformance: cannot read %s near %r (wanted %r)" % (path, t, expect))
        return t

    def skip_statement():
        depth = 0
        while True:
            t = take()
            if t in "{[(":
                depth += 1
            elif t in "}])":
                depth -= 1
                if depth == 0 and t == "}":
                    return
            elif t == ";" and depth == 0:
                return

    def field_opts(f):
        if peek() == "[":
            while take() != "]":
                pass

    def enum_body(full):
        e = Enum(full)
        types[full] = e
        take("{")
        while peek() != "}":
            t = take()
            if t in ("option", "reserved"):
                skip_statement()
                continue
            if t == ";":
                continue
            take("=")
            num = int(take(), 0)
            field_opts(None)
            take(";")
            e.values.append((t, num))
        take("}")

    def message_body(full, msg_list):
        m = Message(full)
        types[full] = m
        msg_list.append(m)
        take("{")
        oneof = None
        while True:
            t = take()
            if t == "}":
                if oneof is not None:
                    oneof = None
                    continue
                break
            if t == ";":
                continue
            if t == "message":
                message_body(full + "." + take(), msg_list)
                continue
            if t == "enum":
                enum_body(full + "." + take())
                continue
            if t in ("option", "reserved", "extensions", "extend"):
                skip_statement()
                continue
            if t == "oneof":
                oneof = take()
                take("{")
                m.oneofs[oneof] = []
                continue
            if t == "map":
                take("<")
                kt = take()
                take(",")
                vt = take()
                take(">")
                name = take()
                take("=")
                num = int(take())
                field_opts(None)
                take(";")
                entry = full + "." + "".join(p[:1].upper() + p[1:] for p in name.split("_")) + "Entry"
                em = Message(entry)
                types[entry] = em
                em.fields = [Field("key", 1, "optional", kt), Field("value", 2, "optional", vt)]
                for ef in em.fields:
                    ef.scope = full
                f = Field(name, num, "repeated", "message")
                f.ref = entry
                f.map = em
                f.scope = full
                m.fields.append(f)
                continue
            label = "optional"
            if t in ("optional", "required", "repeated"):
                label, t = t, take()
            name = take()
            take("=")
            num = int(take())
            field_opts(None)
            take(";")
            f = Field(name, num, label, t, oneof)
            f.scope = full
            m.fields.append(f)
            if oneof is not None:
                m.oneofs[oneof].append(f)
        return m

    msgs = []
    while peek() is not None:
        t = take()
        if t == "package":
            package[0] = take()
            take(";")
        elif t == "message":
            message_body(package[0] + "." + take(), msgs)
        elif t == "enum":
            enum_body(package[0] + "." + take())
        else:
            skip_statement()

    def resolve(scope, name):
        if name.startswith("."):
            return name[1:]
        parts = scope.split(".")
        while True:
            cand = ".".join(parts + [name]) if parts else name
            if cand in types:
                return cand
            if not parts:
                raise SystemExit("conformance: unknown type %s in %s" % (name, path))
            parts.pop()

    for t in list(types.values()):
        if isinstance(t, Message):
            for f in t.fields:
                if f.type not in SCALARS and f.ref is None:
                    f.ref = resolve(f.scope, f.type)
                    f.type = "enum" if isinstance(types[f.ref], Enum) else "message"
    return types


# ---- generating inputs -------------------------------------------------------------

INT_RANGE = {
    "int32": (-2**31, 2**31 - 1), "sint32": (-2**31, 2**31 - 1), "sfixed32": (-2**31, 2**31 - 1),
    "int64": (-2**63, 2**63 - 1), "sint64": (-2**63, 2**63 - 1), "sfixed64": (-2**63, 2**63 - 1),
    "uint32": (0, 2**32 - 1), "fixed32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1), "fixed64": (0, 2**64 - 1),
}
SIMPLE_ESC = ["\\n", "\\t", "\\r", "\\\\", "\\'", '\\"', "\\a", "\\b", "\\f", "\\v", "\\?"]
WORDS = ["fc", "relu", "x", "y", "w_0", "hidden", "softmax", "label", "loss", "b", "data",
         "train.idx", "lr", "A", "z9", "_u", "mean", "std"]


class Gen:
    def __init__(self, rng, types):
        self.r, self.types = rng, types

    # -- scalar literals (lists of tokens) --
    def int_tokens(self, t, v=None):
        r = self.r
        lo, hi = INT_RANGE[t]
        if v is None:
            v = r.choice([0, 1, -1, lo, hi, lo + 1, hi - 1, r.randint(-300, 300), r.randint(lo, hi),
                          r.randint(0, 2**20)])
            v = max(lo, min(hi, v))
        return self.int_literal(v)

    def int_literal(self, v):
        r = self.r
        a = abs(v)
        form = r.random()
        if form < 0.6 or a == 0 and form < 0.8:
            body = str(a)
        elif form < 0.8:
            body = (r.choice(["0x%x", "0X%X", "0x%X"])) % a
        else:
            body = "0%o" % a
        if v < 0:
            return ["-", body]
        return [body]

    def float_tokens(self, t):
        r = self.r
        k = r.random()
        neg = r.random() < 0.3
        if k < 0.1:
            body = r.choice(["inf", "Infinity", "INF", "infinity", "nan", "NaN", "NAN", "iNf"])
        elif k < 0.25:
            body = str(r.choice([0, 1, 2, 10, 255, 65536, 2**53 + 1, 2**64 + 7, 10**25]))
        elif k < 0.35 and t == "float":
            body = r.choice(["3.4028235e38", "3.4028234663852886e+38", "1e39", "1.17549435e-38",
                             "1e-45", "1.4e-45", "7e-46", "0.1", "16777217", "3.4028235677973366e38"])
        elif k < 0.45:
            body = r.choice(["1e308", "1.7976931348623157e308", "2e308", "4.9e-324", "2.5e-324",
                             "2.2250738585072014e-308", "0.1", "0.30000000000000004", "1e-400"])
        else:
            a = str(r.randint(0, 10**r.randint(0, 9)))
            b = str(r.randint(0, 10**r.randint(0, 9)))
            e = str(r.randint(0, 40))
            body = r.choice([a + "." + b, a + ".", "." + b, a + "e" + e, a + "E-" + e,
                             a + "." + b + "e+" + e, "." + b + "E" + e, a + "." + b])
            if r.random() < 0.15:
                body += r.choice(["f", "F"])
            elif r.random() < 0.05:
                body = a + r.choice(["f", "F"])
        if neg:
            return ["-", body]
        return [body]

    def bool_tokens(self):
        return [self.r.choice(["true", "True", "t", "1", "false", "False", "f", "0", "0x1", "00"])]

    def enum_tokens(self, ref):
        r = self.r
        name, num = r.choice(self.types[ref].values)
        if r.random() < 0.7:
            return [name]
        return self.int_literal(num)

    def string_tokens(self, is_bytes):
        r = self.r
        out = []
        for _ in range(1 if r.random() < 0.75 else r.randint(2, 3)):
            q = r.choice(['"', "'"])
            s = []
            for _ in range(r.randint(0, 6)):
                k = r.random()
                if k < 0.45:
                    s.append(r.choice(WORDS + [" ", "a b", "-", "{", "}", "#x", ":", "[", "]", "<"]))
                elif k < 0.55:
                    s.append('"' if q == "'" else "'")
                elif k < 0.65:
                    s.append(r.choice(SIMPLE_ESC))
                elif k < 0.72:
                    v = r.randint(0 if is_bytes else 1, 255)
                    s.append("\\" + r.choice(["%o", "%03o"]) % v)
                elif k < 0.79:
                    v = r.randint(0 if is_bytes else 1, 255)
                    s.append("\\x" + r.choice(["%x", "%02x", "%X"]) % v)
                elif k < 0.85:
                    cp = r.choice([r.randint(1, 0xffff), 0xe9, 0x4e2d, 0xd83d, 0xdc00])
                    s.append("\\u%04x" % cp)
                    if cp == 0xd83d and r.random() < 0.7:
                        s.append("\\ude00")
                elif k < 0.9:
                    cp = r.choice([r.randint(1, 0x10ffff), 0x1f600, 0x10ffff, 0x110000, 0x1fffff])
                    s.append("\\U%08x" % cp)
                elif k < 0.95:
                    s.append(r.choice(["\u00e9", "\u4e2d", "\t", "\x01", "\x7f", "\r"]))
                else:
                    if is_bytes:
                        s.append(r.choice(["\\0", "\\000", "\\x00", "\\u0000"]))
                    else:
                        s.append("\\\\0")
            body = "".join(s)
            # a 1- or 2-digit escape followed by a digit reads differently, but
            # both sides read it the same way, and never as NUL (see above)
            if q == "'":
                body = re.sub(r"(?<!\\)((?:\\\\)*)'", r"\1\\'", body)
            else:
                body = re.sub(r'(?<!\\)((?:\\\\)*)"', r'\1\\"', body)
            out.append(q + body + q)
        return out

    def scalar_tokens(self, f):
        t = f.type
        if t in INT_RANGE:
            return self.int_tokens(t)
        if t in ("float", "double"):
            return self.float_tokens(t)
        if t == "bool":
            return self.bool_tokens()
        if t == "enum":
            return self.enum_tokens(f.ref)
        return self.string_tokens(t == "bytes")

    # -- messages as a tree: ("msg", desc, open, [items]); item = dict --
    def message(self, desc, depth):
        r = self.r
        m = self.types[desc]
        items = []
        chosen_oneof = {}
        for name, members in m.oneofs.items():
            if members and r.random() < 0.6:
                chosen_oneof[name] = r.choice(members)
        for f in m.fields:
            if f.oneof is not None:
                if chosen_oneof.get(f.oneof) is not f:
                    continue
            elif f.label == "required":
                pass
            elif r.random() > (0.45 if depth < 2 else 0.25):
                continue
            if f.type == "message" and depth >= 3 and f.label != "required" and f.map is None:
                continue
            if f.label == "repeated":
                n = r.choice([0, 1, 1, 2, 3])
                if r.random() < 0.35:
                    items.append(self.item(f, [self.value(f, depth) for _ in range(n)], True))
                else:
                    for _ in range(max(n, 1)):
                        items.append(self.item(f, [self.value(f, depth)], False))
            else:
                items.append(self.item(f, [self.value(f, depth)], False))
        r.shuffle(items)
        return ["msg", desc, r.choice("{{<"), items]

    def item(self, f, values, as_list):
        return {"f": f, "name": f.name, "values": values, "list": as_list,
                "colon": f.type != "message" or self.r.random() < 0.4,
                "sep": self.r.choice(["", "", "", ";", ","])}

    def value(self, f, depth):
        if f.map is not None:
            return self.map_entry(f, depth)
        if f.type == "message":
            return self.message(f.ref, depth + 1)
        return ["scalar", self.scalar_tokens(f)]

    def map_entry(self, f, depth):
        r = self.r
        kf, vf = f.map.fields
        items = []
        if r.random() < 0.9:
            items.append(self.item(kf, [["scalar", self.scalar_tokens(kf)]], False))
        # an absent value with required fields is a known divergence (see top)
        needs_value = vf.type == "message" and any(
            x.label == "required" for x in self.types[vf.ref].fields)
        if needs_value or r.random() < 0.85:
            items.append(self.item(vf, [self.value(vf, depth + 1)], False))
        if r.random() < 0.3:
            items.reverse()
        return ["msg", f.ref, r.choice("{<"), items]

    # -- rendering --
    def render(self, toks):
        r = self.r
        glue = set("{}<>[]:,;")
        parts = []
        for i, t in enumerate(toks):
            if i:
                prev = toks[i - 1]
                k = r.random()
                if k < 0.3 and (prev in glue or t in glue or (prev[:1] in "\"'" and t[:1] in "\"'")):
                    ws = ""
                elif k < 0.75:
                    ws = " "
                elif k < 0.85:
                    ws = "\n" + "  " * r.randint(0, 3)
                elif k < 0.9:
                    ws = r.choice(["\t", "  ", "\r\n", "\f", "\v", " \n\n "])
                else:
                    ws = " # " + r.choice(["comment", "a } b", "\"quote", "'", "#", ""]) + "\n"
                parts.append(ws)
            parts.append(t)
        if r.random() < 0.2:
            parts.insert(0, "# header comment\n")
        if r.random() < 0.5:
            parts.append(r.choice(["\n", "", " ", "  # trailing"]))
        return "".join(parts)


# ---- faults -----------------------------------------------------------------------------

def walk_msgs(node, out):
    if node[0] != "msg":
        return
    out.append(node)
    for it in node[3]:
        for v in it["values"]:
            walk_msgs(v, out)


def misspell(r, word):
    w = list(word)
    k = r.randint(0, 3)
    i = r.randrange(len(w))
    if k == 0 and len(w) > 2:
        j = min(i + 1, len(w) - 1)
        w[i], w[j] = w[j], w[i]
    elif k == 1 and len(w) > 2:
        del w[i]
    elif k == 2:
        w.insert(i, r.choice("aeiouxz"))
    else:
        w[i] = w[i].swapcase() if w[i].isalpha() else "q"
    s = "".join(w)
    return s if s != word else word + "x"


SEMANTIC = ["dup_singular", "oneof_two", "drop_required", "bad_field", "out_of_range", "bad_enum",
            "neg_unsigned", "plus_sign", "glued", "trailing_comma", "bad_escape", "float_for_int",
            "hex_for_float", "bad_bool", "no_colon", "bad_delims", "extension", "string_for_number",
            "unclosed_list", "minus_ident"]
TOKEN_FAULTS = ["drop", "dup", "insert", "swap", "truncate", "flip", "unbalance"]


def apply_semantic(g, root, kind):
    """Injects one fault of `kind` into the tree; False if the tree has no spot for it."""
    r = g.r
    msgs = []
    walk_msgs(root, msgs)
    r.shuffle(msgs)
    for m in msgs:
        desc = g.types[m[1]]
        items = m[3]
        scal = [it for it in items if it["f"].type not in ("message",) and it["values"]]
        if kind == "dup_singular":
            cands = [it for it in items if it["f"].label != "repeated"]
            if cands:
                it = r.choice(cands)
                items.insert(r.randint(0, len(items)), dict(it, sep=""))
                return True
        elif kind == "oneof_two":
            for members in desc.oneofs.values():
                if len(members) >= 2:
                    a, b = r.sample(members, 2)
                    depth = 2
                    items.append(g.item(a, [g.value(a, depth)], False))
                    items.append(g.item(b, [g.value(b, depth)], False))
                    return True
        elif kind == "drop_required":
            cands = [it for it in items if it["f"].label == "required"]
            if cands:
                items.remove(r.choice(cands))
                return True
        elif kind == "bad_field" and items:
            it = r.choice(items)
            it["name"] = misspell(r, it["name"])
            return True
        elif kind == "out_of_range":
            cands = [it for it in scal if it["f"].type in INT_RANGE or it["f"].type == "enum"]
            if cands:
                it = r.choice(cands)
                lo, hi = INT_RANGE.get(it["f"].type, (-2**31, 2**31 - 1))
                v = r.choice([hi + 1, lo - 1, hi + r.randint(1, 2**70), 2**64, -2**63 - 1])
                it["values"][r.randrange(len(it["values"]))] = ["scalar", g.int_literal(v)]
                return True
        elif kind == "bad_enum":
            cands = [it for it in scal if it["f"].type == "enum"]
            if cands:
                it = r.choice(cands)
                e = g.types[it["f"].ref]
                name = misspell(r, r.choice(e.values)[0])
                nums = {n for _, n in e.values}
                num = next(n for n in (3, 4, 5, 6, 8, 9, 100, -7) if n not in nums)
                it["values"][0] = ["scalar", r.choice([[name], g.int_literal(num), [name.lower()]])]
                return True
        elif kind == "neg_unsigned":
            cands = [it for it in scal if it["f"].type in ("uint32", "uint64", "fixed32", "fixed64")]
            if cands:
                r.choice(cands)["values"][0] = ["scalar", ["-", str(r.randint(0, 9))]]
                return True
        elif kind == "plus_sign":
            cands = [it for it in scal if it["f"].type in INT_RANGE or it["f"].type in ("float", "double")]
            if cands:
                r.choice(cands)["values"][0] = ["scalar", ["+", str(r.randint(0, 9))]]
                return True
        elif kind == "glued":
            cands = [it for it in scal if it["f"].type in INT_RANGE or it["f"].type in ("float", "double")]
            if cands:
                r.choice(cands)["values"][0] = ["scalar", [r.choice(["10bar", "1x", "0x1g", "1.5e3q", "7_"])]]
                return True
        elif kind == "trailing_comma":
            cands = [it for it in items if it["list"] and it["values"]]
            if cands:
                it = r.choice(cands)
                it["values"][-1] = ["seq", [it["values"][-1], ["scalar", [","]]]]
                return True
        elif kind == "bad_escape":
            cands = [it for it in scal if it["f"].type in ("string", "bytes")]
            if cands:
                it = r.choice(cands)
                bad = r.choice(["\\q", "\\x", "\\xg", "\\u12", "\\u12g4", "\\U00200000", "\\8", "\\9",
                                "\\U0011000", "\\\n", "\n", "\\ ", "\\e", "\\c"])
                q = r.choice(['"', "'"])
                it["values"][0] = ["scalar", [q + "ab" + bad + "c" + q]]
                return True
        elif kind == "float_for_int":
            cands = [it for it in scal if it["f"].type in INT_RANGE or it["f"].type in ("bool", "enum")]
            if cands:
                r.choice(cands)["values"][0] = ["scalar", [r.choice(["1.5", "1e3", "2.", ".5", "1f", "inf", "nan"])]]
                return True
        elif kind == "hex_for_float":
            cands = [it for it in scal if it["f"].type in ("float", "double")]
            if cands:
                r.choice(cands)["values"][0] = ["scalar", [r.choice(["0x10", "07", "00", "0X1F", "017"])]]
                return True
        elif kind == "bad_bool":
            cands = [it for it in scal if it["f"].type == "bool"]
            if cands:
                r.choice(cands)["values"][0] = ["scalar", [r.choice(["T", "TRUE", "yes", "2", "F", "-1", "true1", "on"])]]
                return True
        elif kind == "no_colon":
            cands = [it for it in scal if it["f"].type != "message"]
            if cands:
                r.choice(cands)["colon"] = False
                return True
        elif kind == "bad_delims":
            subs = [v for it in items for v in it["values"] if v[0] == "msg"]
            if subs:
                v = r.choice(subs)
                v[2] = "{" if v[2] == "<" else "<"
                v.append("mismatch")
                return True
        elif kind == "extension":
            items.insert(r.randint(0, len(items)),
                         {"f": None, "name": "[pdtest.ext]", "values": [["scalar", ["1"]]],
                          "list": False, "colon": True, "sep": ""})
            return True
        elif kind == "string_for_number":
            cands = [it for it in scal]
            if cands:
                it = r.choice(cands)
                if it["f"].type in ("string", "bytes"):
                    it["values"][0] = ["scalar", [r.choice(["5", "abc", "-1", "true"])]]
                else:
                    it["values"][0] = ["scalar", ['"5"']]
                return True
        elif kind == "unclosed_list":
            cands = [it for it in items if it["list"]]
            if cands:
                r.choice(cands)["unclosed"] = True
                return True
        elif kind == "minus_ident":
            cands = [it for it in scal if it["f"].type in ("enum", "bool", "string")]
            if cands:
                r.choice(cands)["values"][0] = ["scalar", ["-", "RED"]]
                return True
    return False


def tree_tokens(g, root):
    """Like Gen.tokens, with the fault markers some semantic faults leave."""
    out = []

    def node_tokens(node):
        if node[0] == "scalar":
            out.extend(node[1])
        elif node[0] == "seq":
            for n in node[1]:
                node_tokens(n)
        else:
            opener = node[2]
            out.append(opener)
            items_tokens(node[3])
            closer = "}" if opener == "{" else ">"
            if len(node) > 4:  # mismatched delimiters
                closer = ">" if opener == "{" else "}"
            out.append(closer)

    def items_tokens(items):
        for it in items:
            out.append(it["name"])
            if it["colon"]:
                out.append(":")
            if it["list"]:
                out.append("[")
                for i, v in enumerate(it["values"]):
                    if i:
                        out.append(",")
                    node_tokens(v)
                if not it.get("unclosed"):
                    out.append("]")
            else:
                for v in it["values"]:
                    node_tokens(v)
            if it["sep"]:
                out.append(it["sep"])

    if root[0] == "msg":
        items_tokens(root[3])
    return out


def apply_token_fault(g, toks, kind):
    r = g.r
    toks = list(toks)
    if not toks:
        toks = ["x"]
    i = r.randrange(len(toks))
    if kind == "drop":
        del toks[i]
    elif kind == "dup":
        toks.insert(i, toks[i])
    elif kind == "insert":
        toks.insert(i, r.choice(["{", "}", "<", ">", ":", ",", ";", "[", "]", "-", "+", "foo", "1",
                                 '"x"', ".", "/", "=", "0x", "1.5", "inf", "'", "\\", "@", "\x00"]))
    elif kind == "swap" and len(toks) > 1:
        j = min(i + 1, len(toks) - 1)
        toks[i], toks[j] = toks[j], toks[i]
    elif kind == "unbalance":
        opens = [k for k, t in enumerate(toks) if t in ("{", "<", "}", ">", "[", "]")]
        if opens:
            del toks[r.choice(opens)]
        else:
            toks.append(r.choice(["}", ">", "{"]))
    return toks


def make_inputs(rng, types, root_type, n_valid, n_bad):
    g = Gen(rng, types)
    cases = []
    for _ in range(n_valid):
        tree = g.message(root_type, 0)
        cases.append(("valid", "-", g.render(tree_tokens(g, tree))))
    for _ in range(n_bad):
        tree = g.message(root_type, 0)
        if rng.random() < 0.6:
            kinds = SEMANTIC[:]
            rng.shuffle(kinds)
            for kind in kinds:
                if apply_semantic(g, tree, kind):
                    break
            text = g.render(tree_tokens(g, tree))
        else:
            kind = rng.choice(TOKEN_FAULTS)
            text = g.render(apply_token_fault(g, tree_tokens(g, tree), kind))
            if kind == "truncate" and text:
                text = text[:rng.randrange(len(text))]
            elif kind == "flip" and text:
                k = rng.randrange(len(text))
                text = text[:k] + rng.choice("{}<>[]:;,\"'\\#-+.0x9aZ_ \n\x00\xe9") + text[k + 1:]
        cases.append(("mutated", kind, text))
    return cases


# ---- running -----------------------------------------------------------------------------

def protoc_encode(type_, path):
    inc, proto = SCHEMAS[type_]
    with open(path, "rb") as fin:
        p = subprocess.run(["protoc", "--encode=" + type_, "-I", inc, os.path.join(inc, proto)],
                           stdin=fin, capture_output=True)
    err = p.stderr.decode("utf-8", "replace")
    missing = None
    m = re.search(r"missing required fields:\s*(.*)", err)
    if m:
        missing = [s.strip() for s in m.group(1).split(",")]
    return p.returncode == 0 and missing is None, p.stdout, missing, err


def protoc_decode(type_, data):
    inc, proto = SCHEMAS[type_]
    p = subprocess.run(["protoc", "--decode=" + type_, "-I", inc, os.path.join(inc, proto)],
                       input=data, capture_output=True)
    return p.stdout


def tfmt(type_, path, text=False):
    p = subprocess.run([TFMT, "--type", type_, "--text" if text else "--binary", path], capture_output=True)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def check(job):
    """Runs one input through both; returns (verdict, detail)."""
    idx, type_, origin, kind, text, tmp = job
    path = os.path.join(tmp, "in%05d.txt" % idx)
    with open(path, "wb") as f:
        f.write(text.encode("utf-8"))
    p_ok, p_bin, missing, p_err = protoc_encode(type_, path)
    rc, t_bin, t_err = tfmt(type_, path)
    res = {"idx": idx, "type": type_, "origin": origin, "kind": kind, "text": text, "protoc_ok": p_ok,
           "ours_ok": rc == 0, "status": "agree", "why": "", "roundtrip": None}
    if rc not in (0, 2):
        res.update(status="disagree", why="tfmt exit %d (crash?): %s" % (rc, t_err[-300:]))
        return res
    if rc == 2 and (t_bin or not t_err.strip()):
        res.update(status="disagree", why="error exit must print a message and no output")
        return res
    if (p_ok or missing is not None) and rc == 2 and "cannot hold a NUL byte" in t_err \
            and b"\\000" in protoc_decode(type_, p_bin):
        res.update(status="known", why="NUL byte in a string field (protobuf-c limitation)")
        return res
    if p_ok and rc == 2 and re.search(r"missing required field \S+\.value\.\w+ .*a map entry without a value", t_err):
        res.update(status="known", why="map entry without a value whose type has required fields")
        return res
    if missing is not None and rc == 2:
        m = re.search(r"missing required field (\S+)", t_err)
        if not m or m.group(1) not in missing:
            res.update(status="disagree", why="protoc says missing %s; we say: %s" % (missing, t_err.strip()))
        return res
    if p_ok != (rc == 0):
        res.update(status="disagree", why="protoc %s, we %s: %s" % (
            "accepts" if p_ok else "rejects", "accept" if rc == 0 else "reject",
            (p_err if not p_ok else t_err).strip()[:300]))
        return res
    if not p_ok:
        return res
    res["bytes_equal"] = p_bin == t_bin
    if p_bin != t_bin and protoc_decode(type_, p_bin) != protoc_decode(type_, t_bin):
        res.update(status="disagree", why="different messages: protoc %s, ours %s" % (p_bin.hex()[:120], t_bin.hex()[:120]))
        return res
    # round trip: our canonical text, read by protoc, is the same message
    rc2, canon, err2 = tfmt(type_, path, text=True)
    cpath = path + ".canon"
    with open(cpath, "wb") as f:
        f.write(canon)
    ok2, bin2, _, perr2 = protoc_encode(type_, cpath)
    res["roundtrip"] = rc2 == 0 and ok2 and bin2 == p_bin
    if not res["roundtrip"]:
        res.update(status="disagree", why="round trip: protoc reads our text %s (%s)" % (
            "differently" if ok2 else "not at all", perr2.strip()[:200]), text=canon.decode("utf-8", "replace"))
    return res


def main():
    if not shutil.which("protoc"):
        print("skip: protoc not installed")
        return 77
    if not os.access(TFMT, os.X_OK):
        print("conformance: %s is not built (make tests)" % TFMT)
        return 1
    rng = random.Random(SEED)
    jobs = []
    tmp = tempfile.mkdtemp(prefix="conformance.")
    try:
        for root, (nv, nb) in N_PER_SCHEMA.items():
            inc, proto = SCHEMAS[root]
            types = read_proto(os.path.join(inc, proto))
            for origin, kind, text in make_inputs(rng, types, root, nv, nb):
                jobs.append((len(jobs), root, origin, kind, text, tmp))
        with ThreadPoolExecutor(max_workers=max(2, (os.cpu_count() or 2) * 2)) as ex:
            results = list(ex.map(check, jobs))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    bad = [r for r in results if r["status"] == "disagree"]
    known = [r for r in results if r["status"] == "known"]
    for root in N_PER_SCHEMA:
        rs = [r for r in results if r["type"] == root]
        valid = [r for r in rs if r["origin"] == "valid"]
        mut = [r for r in rs if r["origin"] == "mutated"]
        print("%-15s %4d generated-valid (protoc accepts %d), %4d mutated (protoc rejects %d, accepts %d)" % (
            root, len(valid), sum(r["protoc_ok"] for r in valid), len(mut),
            sum(not r["protoc_ok"] for r in mut), sum(r["protoc_ok"] for r in mut)))
        print("%-15s verdicts agree %d/%d; equal messages %d/%d accepted (%d byte for byte); "
              "round trip %d/%d" % (
            "", sum(r["status"] == "agree" for r in rs), len(rs),
            sum(r["status"] == "agree" and r["protoc_ok"] for r in rs), sum(r["protoc_ok"] for r in rs),
            sum(bool(r.get("bytes_equal")) for r in rs),
            sum(bool(r["roundtrip"]) for r in rs), sum(r["roundtrip"] is not None for r in rs)))
    kinds = {}
    for r in results:
        if r["origin"] == "mutated":
            kinds.setdefault(r["kind"], [0, 0])
            kinds[r["kind"]][0] += 1
            kinds[r["kind"]][1] += not r["protoc_ok"]
    print("mutations (inputs/rejected by protoc): " +
          ", ".join("%s %d/%d" % (k, v[0], v[1]) for k, v in sorted(kinds.items())))
    gen_rejects = [r for r in results if r["origin"] == "valid" and not r["protoc_ok"]]
    print("total: %d inputs, %d agree, %d disagree, %d known protobuf-c divergences" % (
        len(results), len(results) - len(bad) - len(known), len(bad), len(known)))
    if gen_rejects:
        print("note: %d generated-valid inputs were rejected by protoc (generator slip; verdicts still compared)"
              % len(gen_rejects))
    for r in bad[:8]:
        print("---- disagreement #%d (%s, %s/%s): %s" % (r["idx"], r["type"], r["origin"], r["kind"], r["why"]))
        print(r["text"] if isinstance(r["text"], str) else repr(r["text"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

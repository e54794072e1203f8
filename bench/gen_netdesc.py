#!/usr/bin/env python3
"""gen_netdesc.py — writes a large, deterministic NetDesc in text format for
the parse benchmark: many ops with every kind of attribute value, comments,
lists, both message delimiters, separators, escapes, string concatenation and
enums by name — text that both protoc and our parser must accept.
    gen_netdesc.py OUT.pbtxt [MEGABYTES]"""
import random
import sys


def op_text(rng, i):
    a, b, c = f"v{i}", f"w{i}", f"v{i + 1}"
    size = rng.randint(1, 4096)
    lines = [
        f"# op {i}: a fully connected layer with its attributes\n",
        "op {\n",
        f'  type: "fc"  # the layer type\n',
        f'  inputs: ["{a}", "{b}", "{b}.bias"]\n',
        f'  outputs: "{c}"\n',
        f"  attrs {{ key: \"size\" value {{ i: {size} type: INT }} }}\n",
        f"  attrs {{ key: \"act\" value: {{ s: \"re\" 'lu' }} }}\n",
        f"  attrs < key: \"scale\" value < f: {rng.uniform(-10, 10):.9g} > >;\n",
        f"  attrs {{ key: \"shape\" value {{ ints: [-1, {rng.randint(1, 1000)}, 0x{rng.randint(1, 255):x}, {rng.randint(0, 99)}] }} }}\n",
        f"  attrs {{ key: \"w\" value {{ floats: [{rng.random():.7g}, -{rng.random():.7g}, {rng.uniform(-1e10, 1e10):.6e}, 1e-30, 0.5] }} }}\n",
        f"  attrs {{ key: \"names\" value {{ strings: [\"x{i}\", \"tab\\there\", \"quote\\\"d\", \"\\303\\251t\\xc3\\xa9\"] }} }}\n",
        f"  attrs {{ key: \"flags\" value {{ bools: [true, false, 1, 0] b: true }} }},\n",
        "}\n",
    ]
    return "".join(lines)


def var_text(rng, i):
    kind = ["AUTO", "DATA", "PARAM", "STATE"][i % 4]
    dtype = ["FLOAT32", "FLOAT64", "INT32", "INT64", "UINT8"][i % 5]
    return (f"var {{ name: \"w{i}\" shape: [{rng.randint(1, 4096)}, {rng.randint(1, 4096)}] dtype: {dtype} kind: {kind}\n"
            f"      init {{ type: \"uniform\" min: -0.05 max: 0.05 }} comment: \"weights of layer {i}\" }}\n")


def main():
    out = sys.argv[1]
    target = int(float(sys.argv[2] if len(sys.argv) > 2 else 10) * 1e6)
    rng = random.Random(1)
    parts = ['# a generated NetDesc for the parse benchmark\nname: "bench_big"\n',
             'var { name: "v0" shape: [-1, 28, 28] dtype: UINT8 }\n']
    size = sum(len(p) for p in parts)
    i = 0
    while size < target:
        for t in (var_text(rng, i), op_text(rng, i)):
            parts.append(t)
            size += len(t)
        i += 1
    parts.append('train { loss: "v1" batch_size: 64 epochs: 1 seed: 1\n'
                 '        optimizer { type: "momentum" lr: 0.05 momentum: 0.9 } }\n')
    with open(out, "w") as f:
        f.write("".join(parts))
    print(i)


if __name__ == "__main__":
    main()

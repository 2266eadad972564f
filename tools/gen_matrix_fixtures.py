#!/usr/bin/python3
"""gen_matrix_fixtures.py — writes spec/fixtures/dtype_matrix.lua: what NumPy gives for the
probes spec/dtype_matrix_spec.lua runs on every dtype (one or a few ops of each op family on
small inputs), so the spec can require, for each dtype and family, either NumPy's result or
the backend's "not supported for <dtype>" error.

    /usr/bin/python3 tools/gen_matrix_fixtures.py

The dtypes come from C (./gpulua tools/facts.lua). bfloat16 is not a NumPy dtype: its
results are float32's on the same inputs (every input is exact in bfloat16) rounded to
bfloat16 (to nearest even), under its own name. Where NumPy raises, the entry is "error"
and gpulua must raise a clear error too. Each result is {dtype, shape, values}, a complex
array's values as (re, im) pairs, flat (what view_as_real gives).
"""
import json
import os
import subprocess
import warnings

import numpy as np

from luafix import num

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")
warnings.simplefilter("ignore")
np.seterr(all="ignore")

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(REPO, "spec", "fixtures", "dtype_matrix.lua")

FACTS = json.loads(subprocess.run([os.environ.get("GPULUA", os.path.join(REPO, "gpulua")),
                                   os.path.join(REPO, "tools", "facts.lua")], check=True,
                                  capture_output=True, text=True, cwd=REPO).stdout)
DTYPES = [d["name"] for d in FACTS["dtypes"]]
KIND = {d["name"]: d["kind"] for d in FACTS["dtypes"]}


def np_dtype(d):
    return np.dtype("float32" if d == "bfloat16" else d)


def bf16(x):
    """float32 values rounded to bfloat16 (nearest even), as float32."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16
    return b.astype(np.uint32).view(np.float32)


# the inputs: a and b (2, 3), c (6,) non-negative, per kind; exact in every dtype of the kind
INPUTS = {
    "bool": ([1, 0, 1, 0, 1, 1], [1, 1, 0, 0, 1, 0], [1, 0, 1, 0, 1, 1]),
    "uint": ([3, 1, 2, 0, 5, 4], [1, 2, 3, 1, 2, 2], [3, 1, 2, 0, 5, 4]),
    "int": ([3, -1, 2, 0, -5, 4], [1, -2, 3, 1, 2, -2], [3, 1, 2, 0, 5, 4]),
    "float": ([3, -1.5, 2, 0, -5, 4.5], [1, -2, 0.5, 1, 2, -2.5], [3, 1, 2, 0, 5, 4]),
    "complex": ([3 + 1j, -1.5 - 2j, 2, 1j, -5 + 0.5j, 4.5 - 1j], [1 - 1j, 2, 0.5 + 0.5j, 1j, 2 - 2j, -2.5],
                [3, 1, 2, 0, 5, 4]),
}


def inputs(d):
    a, b, c = INPUTS[KIND[d]]
    t = np_dtype(d)
    return (np.array(a).astype(t).reshape(2, 3), np.array(b).astype(t).reshape(2, 3), np.array(c).astype(t))


class Raw(str):
    """A Lua expression, written as it is."""


def values(x):
    x = np.asarray(x)
    flat = x.reshape(-1)
    if x.dtype.kind == "c":
        flat = np.stack([flat.real, flat.imag], axis=-1).reshape(-1)
    return [Raw(num(v)) for v in flat]


def entry(d, f, to=None):
    """f's result on dtype d's inputs: {dtype, shape, values}, or "error". A float32 result
    stands for bfloat16 where the input is bfloat16 (or, with to, where to is)."""
    try:
        r = np.asarray(f(*inputs(d)))
    except (TypeError, ValueError, np.linalg.LinAlgError):
        return "error"
    name = r.dtype.name
    if (to or d) == "bfloat16" and name == "float32":
        r, name = bf16(r), "bfloat16"
    return {"dtype": name, "shape": list(r.shape), "values": values(r)}


def add_at(base, idx, v):
    out = base.copy()
    if out.dtype == np.bool_:
        np.logical_or.at(out, idx, v)
    else:
        np.add.at(out, idx, v)
    return out


def put(z, idx, v):
    z = z.copy()
    z[idx] = v
    return z


def inv(a):
    """np.linalg.inv of [[2, 1], [1, 3]] in a's dtype: integers and bool in float64, the
    halves in float32 returned in their own dtype (as gpulua computes them)."""
    m = np.array([[2, 1], [1, 3]]).astype(a.dtype)
    if a.dtype.kind in "biu":
        return np.linalg.inv(m.astype(np.float64))
    if a.dtype == np.float16:
        return np.linalg.inv(m.astype(np.float32)).astype(np.float16)
    return np.linalg.inv(m)


def linspace(a):
    if a.dtype.kind == "c":
        return np.linspace(0, 4, 5).astype(a.dtype)
    return np.linspace(0, 4, 5, dtype=a.dtype)


def arange(a):
    if a.dtype == np.bool_:
        return np.arange(0, 2, dtype=np.bool_)
    return np.arange(0, 5, dtype=a.dtype)


def histogram_counts(a):
    """np.histogram's counts (bool binned as uint8, as NumPy converts it with a warning);
    NumPy bins a complex array's real parts, with a warning: gpulua refuses it."""
    if a.dtype.kind == "c":
        raise TypeError("gpulua refuses a complex histogram")
    return np.histogram(a.astype(np.uint8) if a.dtype.kind == "b" else a, bins=3)[0]


def bincount(c):
    """np.bincount; gpulua also counts uint64 (NumPy refuses its unsafe cast to int64)."""
    return np.bincount(c.astype(np.int64) if c.dtype == np.uint64 else c)


# probe name -> (family, op within the family or None, NumPy's function of (a, b, c))
PROBES = {
    "full": ("fill", None, lambda a, b, c: np.full((2, 3), 7).astype(a.dtype)),
    "eye": ("fill", None, lambda a, b, c: np.eye(3, dtype=a.dtype)),
    "linspace": ("fill", None, lambda a, b, c: linspace(a)),
    "arange": ("arange", None, lambda a, b, c: arange(a)),
    "abs": ("unary", "abs", lambda a, b, c: np.abs(a)),
    "neg": ("unary", "neg", lambda a, b, c: np.negative(a)),
    "exp": ("unary", "exp", lambda a, b, c: np.exp(a)),
    "add": ("binary", "add", lambda a, b, c: np.add(a, b)),
    "mul": ("binary", "mul", lambda a, b, c: np.multiply(a, b)),
    "sub": ("binary", "sub", lambda a, b, c: np.subtract(a, b)),
    "eq": ("binary", "eq", lambda a, b, c: np.equal(a, b)),
    "sum": ("reduce", "sum", lambda a, b, c: np.sum(a)),
    "sum_axis": ("reduce", "sum", lambda a, b, c: np.sum(a, axis=0)),
    "max": ("reduce", "max", lambda a, b, c: np.max(a, axis=1)),
    "mean": ("reduce", "mean", lambda a, b, c: np.mean(a, axis=1)),
    "matmul": ("matmul", None, lambda a, b, c: np.matmul(a, b.T)),
    "take": ("index", None, lambda a, b, c: np.take(a.ravel(), [5, 0, 2])),
    "concat": ("index", None, lambda a, b, c: np.concatenate([a, b], axis=0)),
    "stack": ("index", None, lambda a, b, c: np.stack([a, b], axis=1)),
    "mask": ("index", None, lambda a, b, c: a.ravel()[c != 0]),
    "put": ("index", None, lambda a, b, c: put(np.zeros(6, a.dtype), [0, 2], b.ravel()[:2])),
    "scatter_add": ("index", None, lambda a, b, c: add_at(np.zeros(6, a.dtype), [0, 2, 0], a.ravel()[:3])),
    "where": ("copy", None, lambda a, b, c: np.where(c.reshape(2, 3) != 0, a, b)),
    "sort": ("sort", None, lambda a, b, c: np.sort(a.ravel())),
    "argsort": ("sort", None, lambda a, b, c: np.argsort(a.ravel(), kind="stable") + 1),
    "kth": ("select", None, lambda a, b, c: np.partition(a.ravel(), 2)[2]),
    "bincount": ("histogram", None, lambda a, b, c: bincount(c)),
    "histogram": ("histogram", None, lambda a, b, c: histogram_counts(a)),
    "inv": ("linalg", None, lambda a, b, c: inv(a)),
}
def astype(a, dst):
    """a.astype(dst). A float or complex to an integer dtype outside its range (a negative
    to unsigned) is C's undefined behaviour, NumPy's result the platform's; gpulua
    saturates (the real part truncated, then clipped to the range), as written here."""
    t = np_dtype(dst)
    if a.dtype.kind in "fc" and t.kind in "iu":
        info = np.iinfo(t)
        return np.clip(np.trunc(a.real.astype(np.float64)), float(info.min), float(info.max)).astype(t)
    return a.astype(t)


for dst in DTYPES:
    PROBES["astype_" + dst] = ("copy", None, (lambda t: lambda a, b, c: astype(a, t))(dst))


def lua(v, ind=""):
    if isinstance(v, dict) and not any(isinstance(x, dict) for x in v.values()):
        return "{ " + ", ".join("%s = %s" % (k, lua(x, ind)) for k, x in v.items()) + " }"
    if isinstance(v, dict):
        inner = ind + "  "
        rows = []
        for k, x in v.items():
            key = k if k.isidentifier() else "[%s]" % json.dumps(k)
            rows.append("%s%s = %s," % (inner, key, lua(x, inner)))
        return "{\n" + "\n".join(rows) + "\n" + ind + "}"
    if isinstance(v, list):
        return "{ " + ", ".join(lua(x, ind) for x in v) + " }"
    if isinstance(v, Raw):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    return num(v)


def main():
    out = {"dtypes": DTYPES, "inputs": {}, "probes": {}}
    for d in DTYPES:
        a, b, c = inputs(d)
        out["inputs"][d] = {"a": values(a), "b": values(b), "c": values(c)}
    for name, (family, op, f) in PROBES.items():
        to = name[len("astype_"):] if name.startswith("astype_") else None
        out["probes"][name] = {"family": family, "op": op or False,
                               "want": {d: entry(d, f, to) for d in DTYPES}}
    with open(OUT, "w") as fh:
        fh.write("-- spec/fixtures/dtype_matrix.lua — generated by tools/gen_matrix_fixtures.py (NumPy %s); "
                 "do not edit.\n" % np.__version__)
        fh.write("return " + lua(out) + "\n")
    print("wrote", os.path.relpath(OUT))


if __name__ == "__main__":
    main()

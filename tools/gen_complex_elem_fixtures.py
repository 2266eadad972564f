#!/usr/bin/env python3
"""gen_complex_elem_fixtures.py — writes spec/fixtures/complex_elem.lua, the NumPy expectations of
spec/complex_elem_spec.lua: every elementwise op on complex64 and complex128.

    /usr/bin/python3 tools/gen_complex_elem_fixtures.py

For each precision: the ops on a grid of special values (every pair of parts from 0, -0,
+-1, 2.5, -0.5, +-inf, NaN: the branch cuts, signed zeros, infinities and NaN of C99's
Annex G) and on huge, tiny and subnormal values; a set of values of every magnitude for
accuracy; binary ops on pairs of them; mixed operands (a real array with a complex one, a
Lua number with a complex array); a broadcast. The op list and gpulua's own rules come from
tools/gen_fixtures.py (its GPULUA table: where gpulua differs from NumPy 1.24 on purpose);
an op NumPy refuses for complex is listed as refused. log1p's reference is computed from the
exact |1 + z|^2 - 1 (NumPy 1.24's formula loses the real part near 0).
"""
import math
import os
import random
import warnings
from fractions import Fraction

import numpy as np

import gen_fixtures as G
from luafix import num

warnings.simplefilter("ignore")
np.seterr(all="ignore")

OUT = os.path.join(G.ROOT, "complex_elem.lua")
INF, NAN = float("inf"), float("nan")
PARTS = [0.0, -0.0, 1.0, -1.0, 2.5, -0.5, INF, -INF, NAN]
EXTREME = {
    "complex128": [(1e300, 1.0), (1.0, 1e300), (1e300, 1e300), (-1e300, 0.5), (1e-300, 1e-300),
                   (5e-320, -3e-320), (700.0, 1.0), (-700.0, 3.0), (1e-20, 1.0), (1.0, 1e-20), (-1.0, 1e-20)],
    "complex64": [(1e30, 1.0), (1.0, 1e30), (1e30, 1e30), (-1e30, 0.5), (1e-30, 1e-30),
                  (1e-40, -3e-41), (80.0, 1.0), (-80.0, 3.0), (1e-10, 1.0), (1.0, 1e-10), (-1.0, 1e-10)],
}


def lua(v):
    if isinstance(v, dict):
        return "{\n" + "\n".join("  %s = %s," % (k if k.isidentifier() else "[%r]" % k, lua(x)) for k, x in v.items()) + "\n}"
    if isinstance(v, (list, tuple)):
        return "{ " + ", ".join(lua(x) for x in v) + " }"
    if isinstance(v, str):
        return '"%s"' % v
    return num(v)


def vals(r):
    r = np.asarray(r)
    if r.dtype.kind == "c":
        return [[float(v.real), float(v.imag)] for v in r.ravel()]
    if r.dtype.kind == "b":
        return [bool(v) for v in r.ravel()]
    return [float(v) for v in r.ravel()]


def log1p_exact(z):
    """log(1 + z) with the real part from the exact |1 + z|^2 - 1 (one rounding)."""
    out = []
    for v in np.asarray(z).ravel():
        x, y = float(v.real), float(v.imag)
        if not (math.isfinite(x) and math.isfinite(y)) or abs(x) >= 1 or abs(y) >= 1:
            out.append(np.log(np.complex128(1 + x) + 1j * y) if math.isfinite(x) and math.isfinite(y)
                       else np.log1p(np.complex128(complex(x, y))))
            continue
        fx, fy = Fraction(x), Fraction(y)
        s = float(fx * (2 + fx) + fy * fy)
        out.append(complex(0.5 * math.log1p(s), math.atan2(y, 1 + x)))
    return np.array(out, np.asarray(z).dtype)


def unary_runner(op):
    over = G.GPULUA.get((op, "complex"))
    if over == "error":
        return None
    if op == "log1p":
        return lambda x, d: (log1p_exact(G.as_dtype(x, d)), d)
    return over or G.UNARY_BY_DTYPE[op]


# complex64's reference is the complex128 result of the complex64 inputs, rounded once (what
# gpulua computes; NumPy's complex64 functions lose a few more bits, pow up to 1e-5)
def narrowed(r, d):
    r = np.asarray(r)
    if d == "complex64" and r.dtype == np.complex128:
        return r.astype(np.complex64), "complex64"
    if d == "complex64" and r.dtype == np.float64:
        return r.astype(np.float32), "float32"
    return r, str(r.dtype)


def unary(op, zs, d):
    run = unary_runner(op)
    if run is None:
        return None
    try:
        r, rd = run(list(G.as_dtype(zs, d)), "complex128")
    except (TypeError, ValueError):
        return None
    r, rd = narrowed(r, d)
    return {"dtype": rd, "v": vals(r)}


def binary(op, a, b, d):
    if G.GPULUA.get((op, "complex")) == "error":
        return None
    a, b = G.as_dtype(a, d).astype(np.complex128), G.as_dtype(b, d).astype(np.complex128)
    try:
        r = G.BINARY_BY_DTYPE[op](a, b)
    except (TypeError, ValueError):
        return None
    if op == "pow":
        r = pow_numpy2(a, b, r)
    r, rd = narrowed(r, d)
    return {"dtype": rd, "v": vals(r)}


def pow_numpy2(a, b, r):
    """NumPy 2's 0 ** b: 0 for Re b > 0 (NumPy 1.24 gave NaN unless b was real)."""
    r = r.copy()
    zero = (a == 0) & (b.real > 0)
    r[zero] = 0
    return r


def precision(d, rng):
    grid = [complex(x, y) for x in PARTS for y in PARTS] + [complex(x, y) for x, y in EXTREME[d]]
    acc = []
    for _ in range(40):
        m = 10 ** rng.uniform(-8 if d == "complex128" else -4, 8 if d == "complex128" else 4)
        t = rng.uniform(-math.pi, math.pi)
        acc.append(complex(m * math.cos(t), m * math.sin(t)))
    # near the branch points and the unit circle, where the formulas lose accuracy
    acc += [complex(1 + 1e-7, 1e-9), complex(-1 - 1e-7, -1e-9), complex(1e-9, 1 + 1e-7), complex(0.6, 0.8),
            complex(0.6, -0.8000001), complex(-1e-5, 1e-5), complex(0.999, 0.001)]
    out = {"z": vals(G.as_dtype(grid, d)), "acc": vals(G.as_dtype(acc, d)), "unary": {}, "unary_acc": {}, "refused": []}
    for op in sorted(G.FACTS["unary"]):
        r = unary(op, grid, d)
        if r is None:
            out["refused"].append(op)
            continue
        out["unary"][op] = r
        out["unary_acc"][op] = unary(op, acc, d)
    # binary: pairs of grid values, and every pair of a few regular ones
    reg = [1 + 2j, -3 + 0.5j, 0.5 - 0.25j, 2 + 0j, -1 + 0j, 0j, 1e-3 + 1e3j, -0.75 - 2j]
    pa, pb = [], []
    for x in reg:
        for y in reg:
            pa.append(x)
            pb.append(y)
    for i in range(120):
        pa.append(grid[rng.randrange(len(grid))])
        pb.append(grid[rng.randrange(len(grid))])
    out["a"], out["b"] = vals(G.as_dtype(pa, d)), vals(G.as_dtype(pb, d))
    out["binary"] = {}
    out["binary_refused"] = []
    for op in sorted(G.FACTS["binary"]):
        r = binary(op, pa, pb, d)
        if r is None:
            out["binary_refused"].append(op)
        else:
            out["binary"][op] = r
    return out


def mixed():
    """real arrays with complex ones (promotion: float32 + complex64 -> complex64, float64 +
    complex64 -> complex128, int8 + complex64 -> complex64, int32 -> complex128), Lua
    numbers with complex arrays (the array's dtype), integer and real powers."""
    z = np.array([1 + 2j, -0.5 + 0.25j, 3 - 1j], np.complex64)
    cases = []
    for rd, rv in (("float32", [2.0, -1.5, 0.5]), ("float64", [2.0, -1.5, 0.5]), ("int8", [2, -3, 4]),
                   ("int32", [2, -3, 4]), ("uint8", [2, 3, 4]), ("bool", [True, False, True])):
        r = np.array(rv, G.NP[rd])
        for op in ("add", "sub", "mul", "div", "pow", "eq"):
            f = G.BINARY_BY_DTYPE[op]
            for zd in ("complex64", "complex128"):
                zz = z.astype(zd)
                for order in ("rz", "zr"):
                    x, y = (r, zz) if order == "rz" else (zz, r)
                    res = f(x, y)
                    cases.append({"op": op, "real": rd, "rv": G.lua_vals(r), "cplx": zd, "z": vals(zz), "order": order,
                                  "dtype": str(res.dtype), "v": vals(res)})
    scal = []
    for zd in ("complex64", "complex128"):
        zz = z.astype(zd)
        for s in (2, 2.5, -1, 0.5, 3):
            for op in ("add", "sub", "mul", "div", "pow"):
                f = G.BINARY_BY_DTYPE[op]
                r1, r2 = f(zz, s), f(s, zz)
                scal.append({"op": op, "cplx": zd, "z": vals(zz), "s": s, "dtype": str(r1.dtype), "zs": vals(r1),
                             "sz": vals(r2)})
    return cases, scal


def main():
    rng = random.Random(29)
    out = {d: precision(d, rng) for d in ("complex64", "complex128")}
    cases, scal = mixed()
    a = np.array([[1 + 1j], [2 - 1j], [-0.5j]], np.complex128)
    b = np.array([0.5 + 0j, -1 + 2j, 3 + 0.5j, 1j], np.complex128)
    bcast = {"a": vals(a), "b": vals(b), "add": vals(a + b), "mul": vals(a * b), "div": vals(a / b)}
    with open(OUT, "w") as f:
        f.write("-- spec/fixtures/complex_elem.lua — generated by tools/gen_complex_elem_fixtures.py (NumPy %s); "
                "do not edit.\n" % np.__version__)
        f.write("-- Per precision: z (a grid of special values), acc (values of every magnitude); unary[op] /\n"
                "-- unary_acc[op] the results ({dtype, v}; complex as {re, im}); refused: the unary ops\n"
                "-- gpulua refuses for complex; a, b, binary[op], binary_refused likewise for pairs.\n"
                "-- mixed: real arrays with complex ones; scalars: Lua numbers with complex arrays;\n"
                "-- broadcast: a (3, 1) with b (4,).\n")
        f.write("return {\n")
        for d in ("complex64", "complex128"):
            f.write("  %s = %s,\n" % (d, lua(out[d])))
        f.write("  mixed = %s,\n" % lua(cases))
        f.write("  scalars = %s,\n" % lua(scal))
        f.write("  broadcast = %s,\n" % lua(bcast))
        f.write("}\n")
    print("wrote", os.path.relpath(OUT))


if __name__ == "__main__":
    main()

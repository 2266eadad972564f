#!/usr/bin/env python3
"""gen_complex_reduce_fixtures.py — NumPy's answers for the reductions, scans, sorts and
products of complex arrays and of the integer dtypes NumPy has beside int32/int64, read by
spec/complex_reduce_spec.lua.

    /usr/bin/python3 tools/gen_complex_reduce_fixtures.py   # rewrites spec/fixtures/complex_reduce/

Each case names a function of the gpu module, its operands and arguments, and NumPy's
result with its dtype. Complex arrays travel as their parts ({shape = (..., 2), data}: the
real view, torch's view_as_real), integers of 64 bits as int64 bit patterns (a uint64 past
2^63 is negative there, read back through astype). Axes are 1-based, positions 1-based.
"""
import warnings

import numpy as np

from luafix import write_cases

warnings.simplefilter("ignore")
np.seterr(all="ignore")

rng = np.random.default_rng(29)
NAN = float("nan")


def parts(a):
    a = np.asarray(a)
    return {"parts": np.stack([a.real, a.imag], -1).astype(np.float64)}


def array(a):
    """An operand or a result: a complex one by its parts, an integer one as int64 bits."""
    a = np.asarray(a)
    if np.iscomplexobj(a):
        return parts(a)
    if a.dtype.kind in "ui":
        return {"ints": a.astype(np.int64)}
    if a.dtype.kind == "b":
        return {"bools": a}
    return {"floats": a.astype(np.float64)}


def dtname(a):
    return str(np.asarray(a).dtype)


def cvals(shape, dt, grid=False):
    """Complex test values: on a small grid (ties in either part) or spread."""
    if grid:
        re = rng.integers(-2, 3, size=shape).astype(np.float64)
        im = rng.integers(-2, 3, size=shape).astype(np.float64)
    else:
        re = np.round(rng.standard_normal(shape), 3)
        im = np.round(rng.standard_normal(shape), 3)
    return (re + 1j * im).astype(dt)


cases = []


def case(fn, x, want, axis=None, opts=None, note=None):
    cases.append({"fn": fn, "dtype": dtname(x), "x": array(x), "axis": axis, "opts": opts or {},
                  "want": array(want), "want_dtype": dtname(want), "note": note or fn})


def np_axis(axis):
    if axis is None:
        return None
    if isinstance(axis, list):
        return tuple(a - 1 for a in axis)
    return axis - 1


# ---- reductions of complex arrays ----------------------------------------------------------
for dt in (np.complex64, np.complex128):
    x = cvals((3, 4), dt)
    g = cvals((4, 5), dt, grid=True)                   # ties for max/min/argmax and the sort
    for axis in (None, 1, 2, [1, 2]):
        a = np_axis(axis)
        case("sum", x, np.sum(x, axis=a), axis)
        case("mean", x, np.mean(x, axis=a), axis)
        case("prod", x, np.prod(x, axis=a), axis)
        case("var", x, np.var(x, axis=a), axis)
        case("var", x, np.var(x, axis=a, ddof=1), axis, {"ddof": 1})
        case("std", x, np.std(x, axis=a), axis)
        case("all", g, np.all(g, axis=a), axis)
        case("any", g, np.any(g, axis=a), axis)
        for fn in ("max", "min"):
            case(fn, g, getattr(np, fn)(g, axis=a), axis)
    for axis in (None, 1, 2):
        a = np_axis(axis)
        case("argmax", g, np.argmax(g, axis=a) + 1, axis)
        case("argmin", g, np.argmin(g, axis=a) + 1, axis)
        case("cumsum", x, np.cumsum(x, axis=a), axis)
        case("cumprod", x, np.cumprod(x, axis=a), axis)
    case("sum", x, np.sum(x, axis=1, keepdims=True), 2, {"keepdims": True})
    case("sum", x, np.sum(x, dtype=np.complex128), None, {"dtype": "complex128"})
    # a NaN in either part wins max, min and the arg positions (the first one)
    n = cvals((2, 5), dt, grid=True)
    n[0, 3] = complex(1, NAN)
    n[0, 4] = complex(NAN, 0)
    n[1, 1] = complex(NAN, 2)
    for fn in ("max", "min"):
        case(fn, n, getattr(np, fn)(n, axis=1), 2, None, fn + " with NaN")
    case("argmax", n, np.argmax(n, axis=1) + 1, 2, None, "argmax with NaN")
    case("argmin", n, np.argmin(n, axis=1) + 1, 2, None, "argmin with NaN")
    # norms: the 2-norm and Frobenius of the parts, the other orders of |x| (real results)
    v = cvals((6,), dt)
    for o in (None, 1, 2, 3, 0, float("inf"), float("-inf")):
        case("norm", v, np.linalg.norm(v, ord=o), None, {} if o is None else {"ord": o})
    for o in (None, "fro", 1, -1, float("inf"), float("-inf")):
        case("norm", x, np.linalg.norm(x, ord=o), None, {} if o is None else {"ord": o})
    case("norm", x, np.linalg.norm(x, axis=1), 2)
    case("norm", x, np.linalg.norm(x, ord=1, axis=0), 1, {"ord": 1})
    # sort and argsort: NumPy's order, NaN groups last ([R+Rj, R+nanj, nan+Rj, nan+nanj])
    s = cvals((3, 7), dt, grid=True)
    s[0, 1] = complex(1, NAN)
    s[0, 2] = complex(NAN, -1)
    s[0, 5] = complex(NAN, NAN)
    s[1, 0] = complex(NAN, 2)
    s[1, 6] = complex(-1, NAN)
    s[2, 3] = complex(-0.0, 0)
    for axis in (None, 1, 2):
        a = -1 if axis is None else axis - 1
        case("sort", s, np.sort(s, axis=a, kind="stable"), axis)
        case("argsort", s, np.argsort(s, axis=a, kind="stable") + 1, axis)

# ---- the integer dtypes beside int32/int64 --------------------------------------------------
INTS = (np.int8, np.int16, np.uint16, np.uint32, np.uint64, np.uint8)
for dt in INTS:
    info = np.iinfo(dt)
    x = rng.integers(max(info.min, -100), min(info.max, 100), size=(3, 5), endpoint=True).astype(dt)
    x[0, 0] = info.max
    x[1, 2] = info.min
    for axis in (None, 1, 2):
        a = np_axis(axis)
        for fn in ("sum", "prod", "max", "min", "mean", "var", "cumsum"):
            case(fn, x, getattr(np, fn)(x, axis=a), axis)
        case("argmax", x, np.argmax(x, axis=a) + 1, axis)
        case("argmin", x, np.argmin(x, axis=a) + 1, axis)
    case("sort", x, np.sort(x, axis=-1, kind="stable"), None)
    case("argsort", x, np.argsort(x, axis=0, kind="stable") + 1, 1)
big = np.array([2**64 - 1, 2**63 + 5, 7, 2**63 - 1], dtype=np.uint64)
for fn in ("sum", "max", "min"):
    case(fn, big, getattr(np, fn)(big), None, None, fn + " of uint64 past 2^63")
case("argmax", big, np.argmax(big) + 1, None, None, "argmax of uint64 past 2^63")
case("argmin", big, np.argmin(big) + 1, None, None, "argmin of uint64 past 2^63")
case("sort", big, np.sort(big, kind="stable"), None, None, "sort of uint64 past 2^63")

# ---- products: matmul, dot, vdot, inner, outer, einsum ----------------------------------------
products = []


def prod_case(fn, operands, want, subs=None):
    products.append({"fn": fn, "subs": subs, "operands": [array(o) for o in operands],
                     "dtypes": [dtname(o) for o in operands], "want": array(want), "want_dtype": dtname(want)})


for dt in (np.complex64, np.complex128):
    a, b = cvals((3, 4), dt), cvals((4, 2), dt)
    v, w = cvals((4,), dt), cvals((4,), dt)
    ab, bb, bb2 = cvals((2, 3, 4), dt), cvals((4, 5), dt), cvals((2, 1, 4, 2), dt)
    m2, c24, c34, c23, sq = cvals((6, 2), dt), cvals((2, 4), dt), cvals((3, 4), dt), cvals((2, 3), dt), cvals((4, 4), dt)
    prod_case("matmul", [a, b], a @ b)
    prod_case("matmul", [ab, bb], ab @ bb)        # a batch against one matrix
    prod_case("matmul", [ab, bb2], ab @ bb2)      # batch axes broadcast both ways
    prod_case("matmul", [a, v], a @ v)            # 1-D operands
    prod_case("matmul", [v, b], v @ b)
    prod_case("dot", [v, w], np.dot(v, w))
    prod_case("dot", [ab, bb], np.dot(ab, bb))
    prod_case("vdot", [v, w], np.vdot(v, w))      # the first conjugated
    prod_case("vdot", [a, m2], np.vdot(a, m2))    # flattened
    prod_case("inner", [v, w], np.inner(v, w))    # not conjugated
    prod_case("inner", [a, c24], np.inner(a, c24))
    prod_case("outer", [v, w], np.outer(v, w))
    for subs, ops in (("ij,jk->ik", [a, b]), ("ij->ji", [a]), ("ii->", [sq]), ("ii->i", [sq]), ("i,i->", [v, w]),
                      ("i,j->ij", [v, w]), ("bij,jk->bik", [ab, bb]), ("ij,ij->i", [a, c34]),
                      ("ij,jk,kl->il", [a, b, c23]), ("...j,j->...", [ab, v])):
        prod_case("einsum", ops, np.einsum(subs, *ops), subs)
    r = np.round(rng.standard_normal((4, 3)), 3)  # a real operand beside a complex one
    prod_case("matmul", [a, r], a @ r)

# the integer dtypes in matmul: products wrap in the dtype, as NumPy's
for dt in INTS:
    info = np.iinfo(dt)
    a = rng.integers(max(info.min, -60), min(info.max, 60), size=(3, 4), endpoint=True).astype(dt)
    b = rng.integers(max(info.min, -60), min(info.max, 60), size=(4, 2), endpoint=True).astype(dt)
    a[0, 0] = info.max
    prod_case("matmul", [a, b], a @ b)

write_cases("complex_reduce", "reduce", "gen_complex_reduce_fixtures.py", "NumPy %s" % np.__version__,
            "Reductions, scans and sorts of complex arrays and of int8/int16/uint16/uint32/uint64/uint8.",
            cases)
write_cases("complex_reduce", "products", "gen_complex_reduce_fixtures.py", "NumPy %s" % np.__version__,
            "matmul, dot, vdot, inner, outer and einsum of complex arrays; matmul of the integer dtypes.",
            products)

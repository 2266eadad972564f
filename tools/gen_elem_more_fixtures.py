#!/usr/bin/python3
"""Writes spec/fixtures/routines/elem_more.lua: NumPy's results for NumPy's further elementwise
names (spec/elem_more_spec.lua reads them; the spec needs no Python): the routines of
gpu.routines.math (ldexp frexp modf divmod float_power unwrap) and the kernel rows (exp2 ...
lcm) over wider values than tools/gen_fixtures.py's per-dtype samples. Run with Debian's
/usr/bin/python3 (it has NumPy):

    /usr/bin/python3 tools/gen_elem_more_fixtures.py

Each case: fn, its arguments (arrays as {dtype, a = {shape, data}}, numbers as they are, axes
1-based, options as a table) and NumPy's results, each {dtype, a = {shape, data}}."""
import math

import numpy as np

from luafix import write_cases

np.seterr(all="ignore")
rng = np.random.default_rng(30)
inf, nan = float("inf"), float("nan")


def arr(v, dtype):
    a = np.asarray(v, dtype)
    return {"dtype": str(a.dtype), "a": a}


def res(r):
    r = np.asarray(r)
    return {"dtype": str(r.dtype), "a": r}


FLOATS = [0.0, -0.0, 0.5, -3.0, 7.25, 1e-3, -1e10, 3e-310, 1.5e300, inf, -inf, nan, 2.0 ** -1022, 0.9999999]


def sinc_ld(x):
    """sinc in long double, the argument reduced exactly (x - 2 round(x / 2)) before the
    multiplication by pi: np.sinc's sin(pi * x) loses the relative precision near the
    integers (its error there is that of pi * x, ~|x| 1e-16), which the reference must not."""
    xl = np.asarray(x, np.longdouble)
    pi = np.arctan(np.longdouble(1)) * 4
    r = xl - 2 * np.round(xl / 2)
    with np.errstate(all="ignore"):
        y = np.where(xl == 0, np.longdouble(1), np.sin(pi * r) / (pi * xl))
    return y.astype(np.float64)


def cases():
    out = []
    # ldexp(x, e): e an integer array (broadcast) or a Lua integer; the result x's float dtype
    e = np.array([0, 1, -1, 3, -1074, 1023, 2000, -2000, 5, 0, 1, 0, 1, 1], np.int32)
    for d in ("float64", "float32", "float16"):
        x = np.asarray(FLOATS, d)
        out.append({"fn": "ldexp", "args": [arr(x, d), arr(e, "int32")], "out": [res(np.ldexp(x, e))]})
        out.append({"fn": "ldexp", "args": [arr(x, d), 3], "out": [res(np.ldexp(x, np.int64(3)))]})
    for d in ("int32", "int8", "uint8"):
        x = np.array([0, 1, 3, 100, 7], d)
        k = np.array([2, 3, -1, 0, 4], np.int64)
        out.append({"fn": "ldexp", "args": [arr(x, d), arr(k, "int64")], "out": [res(np.ldexp(x, k))]})
    # frexp and modf of every float dtype and of integers
    for d in ("float64", "float32", "float16"):
        x = np.asarray(FLOATS + [6.1e-5, 65504.0], d) if d == "float16" else np.asarray(FLOATS, d)
        m, ex = np.frexp(x)
        out.append({"fn": "frexp", "args": [arr(x, d)], "out": [res(m), res(ex)]})
        f, i = np.modf(x)
        out.append({"fn": "modf", "args": [arr(x, d)], "out": [res(f), res(i)]})
    for d in ("int64", "int16", "uint8"):
        x = np.array([0, 1, 5, 12, 100], d)
        m, ex = np.frexp(x)
        out.append({"fn": "frexp", "args": [arr(x, d)], "out": [res(m), res(ex)]})
        f, i = np.modf(x)
        out.append({"fn": "modf", "args": [arr(x, d)], "out": [res(f), res(i)]})
    # divmod of floats and integers (b = 0 included), broadcast, with a Lua number
    fa = np.array([7.5, -7.5, 7.5, -7.5, 3.0, 0.0, inf, -1.0], np.float64)
    fb = np.array([2.0, 2.0, -2.0, -2.0, 0.0, 3.0, 2.0, inf], np.float64)
    with np.errstate(all="ignore"):
        out.append({"fn": "divmod", "args": [arr(fa, "float64"), arr(fb, "float64")], "out": [res(r) for r in np.divmod(fa, fb)]})
        ia = np.array([[7, -7, 0, 9], [5, -5, 13, -1]], np.int32)
        ib = np.array([2, -3, 4, 0], np.int32)
        out.append({"fn": "divmod", "args": [arr(ia, "int32"), arr(ib, "int32")], "out": [res(r) for r in np.divmod(ia, ib)]})
        out.append({"fn": "divmod", "args": [arr(fa, "float32"), 3], "out": [res(r) for r in np.divmod(fa.astype(np.float32), 3)]})
        # float_power: float64 whatever the dtypes
        pa = np.array([2, 3, -2, 0, 10], np.int32)
        pb = np.array([-1, 2, 3, -1, 0], np.int64)
        out.append({"fn": "float_power", "args": [arr(pa, "int32"), arr(pb, "int64")], "out": [res(np.float_power(pa, pb))]})
        xf = np.array([0.5, 2.0, 4.0, 9.0], np.float32)
        out.append({"fn": "float_power", "args": [arr(xf, "float32"), 0.5], "out": [res(np.float_power(xf, 0.5))]})
        out.append({"fn": "float_power", "args": [2, arr(xf, "float16")], "out": [res(np.float_power(2, xf.astype(np.float16)))]})
    # unwrap: 1-D, 2-D along either axis, discont, period, integer input, float32
    ph = np.cumsum(rng.uniform(-2.5, 2.5, 12))
    wrapped = (ph + np.pi) % (2 * np.pi) - np.pi
    out.append({"fn": "unwrap", "args": [arr(wrapped, "float64")], "out": [res(np.unwrap(wrapped))]})
    out.append({"fn": "unwrap", "args": [arr(wrapped, "float32")], "out": [res(np.unwrap(wrapped.astype(np.float32)))]})
    w2 = wrapped.reshape(3, 4)
    out.append({"fn": "unwrap", "args": [arr(w2, "float64"), None, 1], "out": [res(np.unwrap(w2, axis=0))]})
    out.append({"fn": "unwrap", "args": [arr(w2, "float64"), None, -1], "out": [res(np.unwrap(w2, axis=-1))]})
    out.append({"fn": "unwrap", "args": [arr(wrapped, "float64"), 4.0], "out": [res(np.unwrap(wrapped, 4.0))]})
    deg = np.array([0.0, 170.0, -170.0, -10.0, 180.0, -180.0, 350.0, 10.0])
    out.append({"fn": "unwrap", "args": [arr(deg, "float64"), None, -1, {"period": 360.0}],
                "out": [res(np.unwrap(deg, period=360.0))]})
    iv = np.array([0, 5, 9, 1, 6], np.int64)
    out.append({"fn": "unwrap", "args": [arr(iv, "int64")], "out": [res(np.unwrap(iv.astype(np.float64)))]})
    # the rows over wider values (float64, and float32 against the float64 function rounded)
    xs = np.concatenate([np.array([0.0, -0.0, 1e-300, 5e-324, -5e-324, 1e300, -1e300, inf, -inf, nan, 0.5, -2.25]),
                         rng.uniform(-50, 50, 10), 10.0 ** rng.uniform(-30, 30, 6)])
    with np.errstate(all="ignore"):
        for fn, f in (("exp2", np.exp2), ("cbrt", np.cbrt), ("rint", np.rint), ("degrees", np.degrees),
                      ("radians", np.radians), ("signbit", np.signbit), ("isposinf", np.isposinf),
                      ("isneginf", np.isneginf)):
            # (no NaN for signbit: the spec's NaN is Lua's 0/0, whose sign bit is set)
            x = xs[~np.isnan(xs)] if fn == "signbit" else xs
            out.append({"fn": fn, "args": [arr(x, "float64")], "out": [res(f(x))]})
        sx = np.concatenate([np.array([0.0, 1e-8, -1e-8, 0.5, -0.5, 1.5, 2.5, 1e6 + 0.5, 1e20, inf, nan]),
                             rng.uniform(-20, 20, 12)])
        out.append({"fn": "sinc", "args": [arr(sx, "float64")], "out": [res(sinc_ld(sx))]})
        a = np.concatenate([np.array([0.0, 1.0, -inf, inf, inf, nan, 1000.0, -1000.0, 3e-310]), rng.uniform(-60, 60, 8)])
        b = np.concatenate([np.array([0.0, 1.0, -inf, -inf, inf, 1.0, 999.0, -1e300, -3e-310]), rng.uniform(-60, 60, 8)])
        for fn, f in (("logaddexp2", np.logaddexp2), ("fmod", np.fmod), ("fmax", np.fmax), ("fmin", np.fmin),
                      ("copysign", np.copysign), ("nextafter", np.nextafter), ("heaviside", np.heaviside)):
            out.append({"fn": fn, "args": [arr(a, "float64"), arr(b, "float64")], "out": [res(f(a, b))]})
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        out.append({"fn": "nextafter", "args": [arr(a32, "float32"), arr(b32, "float32")], "out": [res(np.nextafter(a32, b32))]})
        # NaN against numbers, and the zeros: between -0 and +0 the second, as NumPy's loops
        za, zb = [nan, 1.0, nan, -2.0, -0.0, 0.0, -0.0], [2.0, nan, nan, 3.0, 0.0, -0.0, -0.0]
        for fn, f in (("fmax", np.fmax), ("fmin", np.fmin)):
            out.append({"fn": fn, "args": [arr(za, "float64"), arr(zb, "float64")], "out": [res(f(za, zb))]})
            za32, zb32 = np.array(za, np.float32), np.array(zb, np.float32)
            out.append({"fn": fn, "args": [arr(za32, "float32"), arr(zb32, "float32")], "out": [res(f(za32, zb32))]})
        out.append({"fn": "heaviside", "args": [arr([-1.5, 0.0, -0.0, 2.0, nan], "float32"), 0.5],
                    "out": [res(np.heaviside(np.array([-1.5, 0.0, -0.0, 2.0, nan], np.float32), np.float32(0.5)))]})
    ga = rng.integers(-10**6, 10**6, 12)
    gb = rng.integers(-10**4, 10**4, 12)
    ga[:3], gb[:3] = [0, 0, -2**63], [0, 7, 0]
    for fn, f in (("gcd", np.gcd), ("lcm", np.lcm)):
        out.append({"fn": fn, "args": [arr(ga, "int64"), arr(gb, "int64")], "out": [res(f(ga, gb))]})
        u = np.array([12, 255, 0, 17, 100], np.uint8)
        v = np.array([18, 5, 9, 34, 75], np.uint8)
        out.append({"fn": fn, "args": [arr(u, "uint8"), arr(v, "uint8")], "out": [res(f(u, v))]})
        out.append({"fn": fn, "args": [arr(ga[3:8].astype(np.int32), "int32"), 12],
                    "out": [res(f(ga[3:8].astype(np.int32), 12))]})
    return out


if __name__ == "__main__":
    write_cases("routines", "elem_more", "gen_elem_more_fixtures.py", "NumPy " + np.__version__,
                "NumPy's further elementwise names: fn(args...) -> out (a list of results)", cases())
    print("wrote spec/fixtures/routines/elem_more.lua")

#!/work/venv/bin/python
"""Writes spec/fixtures/reduce_more/{reduce,sets}.lua: NumPy 2's and PyTorch's results for
the reductions and scans (ptp, average, nanprod, nancumsum, nancumprod, ediff1d, std_mean,
var_mean, aminmax, cummax, cummin, logcumsumexp, mode, kthvalue, unique_consecutive, cdist,
dist; max, min and sort along a dim with indices), the set functions (isin, in1d,
intersect1d, union1d, setdiff1d, setxor1d, unique_values, unique_counts, unique_inverse,
lexsort) and the histograms (histogram_bin_edges, histogram2d, histogramdd), read by
spec/reduce_more_spec.lua and spec/sets_spec.lua (which need no Python). Run with the
venv's Python (NumPy 2 and PyTorch):

    /work/venv/bin/python tools/gen_reduce_more_fixtures.py

A case: fn (the gpu function), args (gpu's positional arguments, axes and positions
1-based; n their count), opts (its options table or nil), outs (the expected results in
order). An array is {array = {shape, data}, dtype = name}; a list of results a list."""
import math

import numpy as np
import torch

from luafix import write_cases

rng = np.random.default_rng(30)
INF = math.inf


def A(x, dtype=None):
    x = x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)
    if dtype is not None:
        x = x.astype(dtype)
    return {"array": x, "dtype": str(x.dtype)}


def T(x):
    return torch.from_numpy(np.asarray(x))


def case(fn, args, outs, opts=None, tol=None):
    c = {"fn": fn, "args": args, "n": len(args), "outs": outs}
    if opts is not None:
        c["opts"] = opts
    if tol is not None:
        c["tol"] = tol
    return c


def rand(*shape):
    return np.round(rng.standard_normal(shape), 3)


def distinct(*shape):
    n = int(np.prod(shape))
    return (rng.permutation(n).astype(np.float64) * 0.5 - n / 4).reshape(shape)


def reduce_cases():
    cs = []
    x = rand(3, 4)
    xi = rng.integers(-20, 20, (3, 4)).astype(np.int32)
    # ptp
    cs.append(case("ptp", [A(x)], [A(np.ptp(x))]))
    cs.append(case("ptp", [A(x), 2], [A(np.ptp(x, axis=1))]))
    cs.append(case("ptp", [A(x), 1], [A(np.ptp(x, axis=0, keepdims=True))], {"keepdims": True}))
    cs.append(case("ptp", [A(xi), 1], [A(np.ptp(xi, axis=0), "int32")]))
    # amax, amin: values only
    cs.append(case("amax", [A(x), 2], [A(np.amax(x, axis=1))]))
    cs.append(case("amin", [A(x), [1, 2]], [A(np.amin(x, axis=(0, 1), keepdims=True))], {"keepdims": True}))
    cs.append(case("amin", [A(xi)], [A(np.amin(xi))]))
    # average
    w = np.abs(rand(3, 4)) + 0.1
    w1 = np.array([1.0, 2.0, 0.5, 3.0])
    cs.append(case("average", [A(x)], [A(np.average(x))]))
    cs.append(case("average", [A(x), 2], [A(np.average(x, axis=1, weights=w1))], {"weights": A(w1)}))
    avg, scl = np.average(x, axis=0, weights=w, returned=True)
    cs.append(case("average", [A(x), 1], [A(avg), A(scl)], {"weights": A(w), "returned": True}))
    avg, scl = np.average(xi, axis=1, returned=True)
    cs.append(case("average", [A(xi), 2], [A(avg), A(scl)], {"returned": True}))
    cs.append(case("average", [A(x), 2], [A(np.average(x, axis=1, weights=w1, keepdims=True))],
                   {"weights": A(w1), "keepdims": True}))
    # nan reductions and scans
    xn = x.copy()
    xn[0, 1] = np.nan
    xn[2, 3] = np.nan
    cs.append(case("nanprod", [A(xn)], [A(np.nanprod(xn))]))
    cs.append(case("nanprod", [A(xn), 2], [A(np.nanprod(xn, axis=1))]))
    cs.append(case("nancumsum", [A(xn)], [A(np.nancumsum(xn))]))
    cs.append(case("nancumsum", [A(xn), 2], [A(np.nancumsum(xn, axis=1))]))
    cs.append(case("nancumprod", [A(xn), 1], [A(np.nancumprod(xn, axis=0))]))
    cs.append(case("nancumsum", [A(xi), 1], [A(np.nancumsum(xi, axis=0))]))
    # ediff1d
    cs.append(case("ediff1d", [A(x)], [A(np.ediff1d(x))]))
    cs.append(case("ediff1d", [A(xi)], [A(np.ediff1d(xi, to_begin=-1, to_end=[7, 8]), "int32")],
                   {"to_begin": -1, "to_end": [7, 8]}))
    # std_mean, var_mean
    tx = T(x)
    for fn in ("std_mean", "var_mean"):
        f = getattr(torch, fn)
        cs.append(case(fn, [A(x)], [A(r) for r in f(tx)]))
        cs.append(case(fn, [A(x), 2], [A(r) for r in f(tx, 1)]))
        cs.append(case(fn, [A(x), 1], [A(r) for r in f(tx, 0, correction=0, keepdim=True)],
                       {"correction": 0, "keepdim": True}))
        cs.append(case(fn, [A(x), [1, 2]], [A(r) for r in f(tx, (0, 1), unbiased=False)], {"unbiased": False}))
    # aminmax
    cs.append(case("aminmax", [A(x)], [A(r) for r in torch.aminmax(tx)]))
    cs.append(case("aminmax", [A(x), 1], [A(r) for r in torch.aminmax(tx, dim=0, keepdim=True)], {"keepdim": True}))
    cs.append(case("aminmax", [A(xi), -1], [A(r.numpy(), "int32") for r in torch.aminmax(T(xi), dim=-1)]))
    # cummax, cummin (ties and NaNs)
    v = np.array([1.0, 3.0, 3.0, 2.0, 3.0, -1.0, np.nan, 5.0, np.nan])
    m = np.array([[2.0, 1.0, 2.0, 1.0, 0.0], [4.0, 4.0, 5.0, 0.0, 5.0], [-1.0, -2.0, -2.0, 3.0, -3.0]])
    mi = rng.integers(0, 4, (3, 6))
    for fn in ("cummax", "cummin"):
        f = getattr(torch, fn)
        vals, idx = f(T(v), 0)
        cs.append(case(fn, [A(v), 1], [A(vals), A(idx + 1)]))
        vals, idx = f(T(m), 1)
        cs.append(case(fn, [A(m), 2], [A(vals), A(idx + 1)]))
        vals, idx = f(T(m), 0)
        cs.append(case(fn, [A(m), 1], [A(vals), A(idx + 1)]))
        vals, idx = f(T(mi), 1)
        cs.append(case(fn, [A(mi), -1], [A(vals), A(idx + 1)]))
    # logcumsumexp (a wide range: stable), over each axis
    lx = np.array([[-1000.0, 0.0, 1000.0, 2.0, -3.0], [1.0, 2.0, 3.0, 4.0, 5.0], [-INF, -INF, 0.5, -INF, 0.0]])
    cs.append(case("logcumsumexp", [A(lx), 2], [A(torch.logcumsumexp(T(lx), 1))]))
    cs.append(case("logcumsumexp", [A(x), 1], [A(torch.logcumsumexp(T(x), 0))]))
    # mode
    mo = np.array([[2.0, 1.0, 2.0, 1.0, 3.0], [4.0, 4.0, 4.0, 0.0, 0.0], [7.0, 6.0, 5.0, 6.0, 7.0]])
    vals, idx = torch.mode(T(mo), 1)
    cs.append(case("mode", [A(mo), 2], [A(vals), A(idx + 1)]))
    vals, idx = torch.mode(T(mo), 0, keepdim=True)
    cs.append(case("mode", [A(mo), 1], [A(vals), A(idx + 1)], {"keepdim": True}))
    vals, idx = torch.mode(T(mo))
    cs.append(case("mode", [A(mo)], [A(vals), A(idx + 1)]))
    # kthvalue (distinct values: the position of a tie is not defined alike)
    kx = distinct(3, 5)
    vals, idx = torch.kthvalue(T(kx), 2, 1)
    cs.append(case("kthvalue", [A(kx), 2, 2], [A(vals), A(idx + 1)]))
    vals, idx = torch.kthvalue(T(kx), 3, 0, keepdim=True)
    cs.append(case("kthvalue", [A(kx), 3, 1], [A(vals), A(idx + 1)], {"keepdim": True}))
    vals, idx = torch.kthvalue(T(kx), 5)
    cs.append(case("kthvalue", [A(kx), 5], [A(vals), A(idx + 1)]))
    # unique_consecutive
    u = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    vals, inv, cnt = torch.unique_consecutive(T(u), return_inverse=True, return_counts=True)
    cs.append(case("unique_consecutive", [A(u)], [A(vals), A(inv + 1), A(cnt)],
                   {"return_inverse": True, "return_counts": True}))
    u2 = np.array([[1, 1], [1, 1], [2, 3], [2, 3], [1, 1]])
    vals, inv, cnt = torch.unique_consecutive(T(u2), return_inverse=True, return_counts=True, dim=0)
    cs.append(case("unique_consecutive", [A(u2)], [A(vals), A(inv + 1), A(cnt)],
                   {"return_inverse": True, "return_counts": True, "dim": 1}))
    vals = torch.unique_consecutive(T(u2.T.copy()), dim=1)
    cs.append(case("unique_consecutive", [A(u2.T.copy())], [A(vals)], {"dim": 2}))
    cs.append(case("unique_consecutive", [A(u2)], [A(torch.unique_consecutive(T(u2)))]))
    # cdist, dist
    a, b = rand(4, 3), rand(5, 3)
    for p in (2.0, 1.0, 0.0, INF, 3.0):
        cs.append(case("cdist", [A(a), A(b), p], [A(torch.cdist(T(a), T(b), p=p))]))
    ab, bb = rand(2, 3, 2), rand(1, 4, 2)
    cs.append(case("cdist", [A(ab), A(bb)], [A(torch.cdist(T(ab), T(bb)))]))
    c, d = rand(3, 4), rand(4)
    for p in (2.0, 1.0, INF, 3.5, 0.0):
        cs.append(case("dist", [A(c), A(d), p], [A(torch.dist(T(c), T(d), p=p))]))
    # max, min and sort along a dim, with positions (PyTorch's forms)
    dx = distinct(3, 4)
    for fn in ("max", "min"):
        vals, idx = getattr(torch, fn)(T(dx), 1)
        cs.append(case(fn, [A(dx), 2], [A(vals), A(idx + 1)]))
        vals, idx = getattr(torch, fn)(T(dx), 0, keepdim=True)
        cs.append(case(fn, [A(dx), 1], [A(vals), A(idx + 1)], {"keepdims": True}))
    sx = np.array([[3.0, 1.0, 3.0, 2.0, 1.0], [0.0, np.nan, -1.0, 0.0, 2.0]])
    vals, idx = torch.sort(T(sx), dim=1, stable=True)
    cs.append(case("sort", [A(sx), 2], [A(vals), A(idx + 1)]))
    vals, idx = torch.sort(T(sx), dim=1, descending=True, stable=True)
    cs.append(case("sort", [A(sx), -1], [A(vals), A(idx + 1)], {"descending": True}))
    vals, idx = torch.sort(T(sx), dim=0, stable=True)
    cs.append(case("sort", [A(sx), 1], [A(vals), A(idx + 1)]))
    return cs


def set_cases():
    cs = []
    e = np.array([[1, 5, 3], [7, 2, 2]])
    t = np.array([2, 9, 1, 1])
    cs.append(case("isin", [A(e), A(t)], [A(np.isin(e, t))]))
    cs.append(case("isin", [A(e), A(t)], [A(np.isin(e, t, invert=True))], {"invert": True}))
    fe = np.array([0.5, np.nan, -1.0, 2.0, 3.0])
    ft = np.array([np.nan, 2.0, 0.5])
    cs.append(case("isin", [A(fe), A(ft)], [A(np.isin(fe, ft))]))
    cs.append(case("isin", [A(fe), A(np.array([1, 2]))], [A(np.isin(fe, np.array([1, 2])))]))
    cs.append(case("in1d", [A(e), A(t)], [A(np.isin(e, t).ravel())]))
    cs.append(case("in1d", [A(e), A(t)], [A(np.isin(e, t, invert=True).ravel())], {"invert": True}))
    a = np.array([1, 3, 4, 3, 7, 1, 9])
    b = np.array([3, 1, 2, 1, 9, 10])
    r = np.intersect1d(a, b, return_indices=True)
    cs.append(case("intersect1d", [A(a), A(b)], [A(r[0])]))
    cs.append(case("intersect1d", [A(a), A(b)], [A(r[0]), A(r[1] + 1), A(r[2] + 1)], {"return_indices": True}))
    ua, ub = np.array([5, 1, 3, 8]), np.array([8, 2, 5])
    r = np.intersect1d(ua, ub, assume_unique=True, return_indices=True)
    cs.append(case("intersect1d", [A(ua), A(ub)], [A(r[0]), A(r[1] + 1), A(r[2] + 1)],
                   {"assume_unique": True, "return_indices": True}))
    fa, fb = np.array([1.5, np.nan, 2.0, 1.5]), np.array([np.nan, 1.5, 0.0])
    cs.append(case("intersect1d", [A(fa), A(fb)], [A(np.intersect1d(fa, fb))]))
    cs.append(case("union1d", [A(a), A(b)], [A(np.union1d(a, b))]))
    cs.append(case("union1d", [A(fa), A(fb)], [A(np.union1d(fa, fb))]))
    cs.append(case("setdiff1d", [A(a), A(b)], [A(np.setdiff1d(a, b))]))
    cs.append(case("setdiff1d", [A(ua), A(ub)], [A(np.setdiff1d(ua, ub, assume_unique=True))], {"assume_unique": True}))
    cs.append(case("setxor1d", [A(a), A(b)], [A(np.setxor1d(a, b))]))
    cs.append(case("setxor1d", [A(ua), A(ub)], [A(np.setxor1d(ua, ub, assume_unique=True))], {"assume_unique": True}))
    cs.append(case("setxor1d", [A(fa), A(fb)], [A(np.setxor1d(fa, fb))]))
    ux = np.array([[3.0, np.nan, 1.0], [3.0, np.nan, -2.0]])
    cs.append(case("unique_values", [A(ux)], [A(np.unique_values(ux))]))
    cs.append(case("unique_counts", [A(ux)], [A(r) for r in np.unique_counts(ux)]))
    ui = np.array([[3, 1, 4], [1, 5, 9], [2, 6, 5]])
    vals, inv = np.unique_inverse(ui)
    cs.append(case("unique_inverse", [A(ui)], [A(vals), A(inv + 1)]))
    # lexsort: last key primary
    k1 = np.array([1, 5, 1, 4, 3, 4, 4])
    k2 = np.array([9, 4, 0, 4, 0, 2, 1])
    cs.append(case("lexsort", [[A(k1), A(k2)]], [A(np.lexsort((k1, k2)) + 1)]))
    keys = np.array([[3.0, 1.0, 2.0, 1.0], [1.0, 1.0, 0.0, 1.0]])
    cs.append(case("lexsort", [A(keys)], [A(np.lexsort(keys) + 1)]))
    k3 = rng.integers(0, 3, (2, 3, 4))
    cs.append(case("lexsort", [[A(k3[0]), A(k3[1])], 1], [A(np.lexsort((k3[0], k3[1]), axis=0) + 1)]))
    # histogram_bin_edges
    h = np.round(rng.standard_normal(200) * 3, 2)
    for bins in (10, 7, "auto", "fd", "doane", "scott", "rice", "sturges", "sqrt"):
        cs.append(case("histogram_bin_edges", [A(h)], [A(np.histogram_bin_edges(h, bins=bins))], {"bins": bins}))
    cs.append(case("histogram_bin_edges", [A(h)], [A(np.histogram_bin_edges(h, bins="auto", range=(-2, 3)))],
                   {"bins": "auto", "range": [-2, 3]}))
    cs.append(case("histogram_bin_edges", [A(h)], [A(np.histogram_bin_edges(h, bins=4, range=(-2, 3)))],
                   {"bins": 4, "range": [-2, 3]}))
    hi = rng.integers(0, 10, 50)
    cs.append(case("histogram_bin_edges", [A(hi)], [A(np.histogram_bin_edges(hi, bins="sturges"))], {"bins": "sturges"}))
    # histogram2d, histogramdd
    x, y = np.round(rng.standard_normal(60), 2), np.round(rng.standard_normal(60), 2)
    x[:3] = [-1.0, 1.0, 0.5]
    y[:3] = [1.0, -1.0, 0.25]
    wt = np.abs(rng.standard_normal(60))
    r = np.histogram2d(x, y)
    cs.append(case("histogram2d", [A(x), A(y)], [A(r[0]), A(r[1]), A(r[2])]))
    r = np.histogram2d(x, y, bins=(3, 4), range=((-1, 1), (-1, 1)), weights=wt)
    cs.append(case("histogram2d", [A(x), A(y)], [A(r[0]), A(r[1]), A(r[2])],
                   {"bins": [3, 4], "range": [[-1, 1], [-1, 1]], "weights": A(wt)}))
    ex = np.array([-2.0, -0.5, 0.0, 0.5, 2.0])
    r = np.histogram2d(x, y, bins=ex, density=True)
    cs.append(case("histogram2d", [A(x), A(y)], [A(r[0]), A(r[1]), A(r[2])], {"bins": A(ex), "density": True}))
    ey = np.array([-1.0, 0.0, 1.0])
    r = np.histogram2d(x, y, bins=[ex, ey])
    cs.append(case("histogram2d", [A(x), A(y)], [A(r[0]), A(r[1]), A(r[2])], {"bins": [A(ex), A(ey)]}))
    s = np.round(rng.standard_normal((40, 3)), 2)
    r = np.histogramdd(s, bins=(2, 3, 4))
    cs.append(case("histogramdd", [A(s)], [A(r[0]), [A(e) for e in r[1]]], {"bins": [2, 3, 4]}))
    r = np.histogramdd(s, bins=3, range=((-1, 1), (-2, 2), (0, 1)), weights=wt[:40], density=True)
    cs.append(case("histogramdd", [A(s)], [A(r[0]), [A(e) for e in r[1]]],
                   {"bins": 3, "range": [[-1, 1], [-2, 2], [0, 1]], "weights": A(wt[:40]), "density": True}))
    r = np.histogramdd((s[:, 0], s[:, 1]), bins=(ex, 2))
    cs.append(case("histogramdd", [[A(s[:, 0]), A(s[:, 1])]], [A(r[0]), [A(e) for e in r[1]]], {"bins": [A(ex), 2]}))
    return cs


def main():
    made = "NumPy %s, PyTorch %s" % (np.__version__, torch.__version__)
    write_cases("reduce_more", "reduce", "gen_reduce_more_fixtures.py", made,
                "reductions and scans: fn, args (1-based), n, opts, outs", reduce_cases())
    write_cases("reduce_more", "sets", "gen_reduce_more_fixtures.py", made,
                "sets and histograms: fn, args (1-based), n, opts, outs", set_cases())


if __name__ == "__main__":
    main()

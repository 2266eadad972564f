#!/usr/bin/python3
"""Writes spec/fixtures/routines/*.lua: NumPy's results for gpu.einsum and the NumPy
routines (spec/einsum_spec.lua, spec/routines_spec.lua read them; the specs need no
Python). Run with Debian's /usr/bin/python3 (it has NumPy):

    /usr/bin/python3 tools/gen_routines_fixtures.py

Each case: the inputs as {shape = {...}, data = {flat, row-major}} (float64 values), the
arguments as they are given to gpu (1-based axes) and NumPy's result likewise."""
import numpy as np

from luafix import write_cases

rng = np.random.default_rng(13)


def write(name, header, cases):
    write_cases("routines", name, "gen_routines_fixtures.py", "NumPy " + np.__version__, header, cases)


def rand(*shape):
    return np.round(rng.standard_normal(shape), 3)


def einsum_cases():
    specs = [
        ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(3, 2), (2, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
        ("ii", [(3, 3)]), ("ii->i", [(4, 4)]), ("ij->ji", [(2, 3)]), ("ij->", [(2, 3)]), ("ij->j", [(3, 4)]),
        ("i,i", [(5,), (5,)]), ("i,i->i", [(4,), (4,)]), ("i,j->ij", [(3,), (2,)]), ("...j,j->...", [(2, 3, 4), (4,)]),
        ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 2)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
        ("abc,cd,bd->a", [(2, 3, 4), (4, 5), (3, 5)]), ("iij->j", [(3, 3, 2)]), ("ijj,jk->ik", [(2, 3, 3), (3, 2)]),
        ("ba,ab", [(3, 2), (2, 3)]), ("Ba,ab", [(2, 3), (3, 4)]), ("i...,i...->...", [(3, 2), (3, 2)]),
        ("ij,ij->ij", [(2, 1), (2, 4)]), ("ij,jk->ik", [(2, 1), (3, 4)]), ("ijk,kji->", [(2, 3, 4), (4, 3, 2)]),
        ("ij,kl->ijkl", [(2, 2), (2, 3)]), ("ij,jk->ik", [(0, 3), (3, 2)]), ("ij,jk->ik", [(2, 0), (0, 3)]),
        ("i,j,k->ijk", [(2,), (3,), (2,)]), ("a,b,c,ab,bc->", [(2,), (3,), (4,), (2, 3), (3, 4)]),
        ("ijk->kij", [(2, 3, 4)]),
        ("ij,jk,ik->ik", [(1, 3), (3, 2), (4, 2)]), ("ij,jk,ik->ik", [(4, 3), (3, 1), (1, 2)]),
        ("ab,bc,cd,de->ae", [(2, 3), (3, 1), (1, 4), (4, 2)]), ("...i,...i->...", [(1, 3), (4, 3)]),
    ]
    cases = []
    for subs, shapes in specs:
        xs = [rand(*s) for s in shapes]
        cases.append({"subs": subs, "inputs": xs, "out": np.asarray(np.einsum(subs, *xs))})
    return cases


def tensordot_cases():
    cases = []
    for sa, sb, axes, np_axes in [((3, 4, 5), (4, 5, 2), 2, 2), ((2, 3), (3, 2), 1, 1), ((2, 3), (4,), 0, 0),
                                  ((3, 4, 2), (2, 3), {1: [1, 3], 2: [2, 1]}, ([0, 2], [1, 0])),
                                  ((4, 3), (4, 2), {1: [1], 2: [1]}, ([0], [0])),
                                  ((2, 3, 4), (4, 3), {1: [-1, -2], 2: [1, 2]}, ([-1, -2], [0, 1]))]:
        a, b = rand(*sa), rand(*sb)
        lax = axes if isinstance(axes, int) else [axes[1], axes[2]]
        cases.append({"a": a, "b": b, "axes": lax, "out": np.asarray(np.tensordot(a, b, np_axes))})
    return cases


def products():
    cases = []
    for sa, sb in [((2, 2), (2, 3)), ((3,), (2,)), ((2, 3), (2,)), ((2, 1, 2), (3, 2))]:
        a, b = rand(*sa), rand(*sb)
        cases.append({"fn": "kron", "a": a, "b": b, "out": np.kron(a, b)})
    for sa, sb in [((3,), (3,)), ((2, 3), (4, 3)), ((2, 2, 3), (3,))]:
        a, b = rand(*sa), rand(*sb)
        cases.append({"fn": "inner", "a": a, "b": b, "out": np.asarray(np.inner(a, b))})
    for sa, sb in [((2, 3), (3, 2)), ((4,), (2, 2))]:
        a, b = rand(*sa), rand(*sb)
        cases.append({"fn": "vdot", "a": a, "b": b, "out": np.asarray(np.vdot(a, b))})
    return cases


def diag_cases():
    cases = []
    for shape, off, a1, a2 in [((3, 4), 0, 1, 2), ((3, 4), 1, 1, 2), ((3, 4), -2, 1, 2), ((4, 3), 5, 1, 2),
                               ((2, 3, 4), 0, 2, 3), ((2, 3, 4), 1, 3, 1), ((2, 3, 4), -1, -1, -2), ((0, 3), 0, 1, 2)]:
        x = rand(*shape)
        cases.append({"fn": "diagonal", "x": x, "args": [off, a1, a2],
                      "out": np.diagonal(x, off, a1 - 1 if a1 > 0 else a1, a2 - 1 if a2 > 0 else a2).copy()})
        cases.append({"fn": "trace", "x": x, "args": [off, a1, a2],
                      "out": np.asarray(np.trace(x, off, a1 - 1 if a1 > 0 else a1, a2 - 1 if a2 > 0 else a2))})
    for shape, k in [((3,), 0), ((3,), 1), ((2,), -2), ((3, 4), 1), ((4, 3), -1), ((0,), 0)]:
        x = rand(*shape)
        cases.append({"fn": "diag", "x": x, "args": [k], "out": np.diag(x, k)})
    for shape, k in [((3, 4), 0), ((3, 4), 1), ((4, 3), -1), ((2, 3, 3), 0), ((3,), 0), ((0, 2), 0), ((3, 3), -5)]:
        x = rand(*shape)
        cases.append({"fn": "triu", "x": x, "args": [k], "out": np.triu(x, k)})
        cases.append({"fn": "tril", "x": x, "args": [k], "out": np.tril(x, k)})
    return cases


def close_cases():
    inf, nan = float("inf"), float("nan")
    a = np.array([1.0, 1.0, 1e10, 1e-8, inf, inf, -inf, nan, nan, 0.0, 1.0])
    b = np.array([1.0 + 1e-6, 1.1, 1.00001e10, 0.0, inf, -inf, 5.0, nan, 1.0, 1e-9, inf])
    cases = []
    for opts in [{}, {"equal_nan": True}, {"rtol": 0.2}, {"atol": 1e-7}, {"rtol": 0, "atol": 0}]:
        npo = {k: v for k, v in opts.items()}
        cases.append({"a": a, "b": b, "opts": opts, "out": np.isclose(a, b, **npo),
                      "all": bool(np.allclose(a, b, **npo)),
                      "out32": np.isclose(a.astype(np.float32), b.astype(np.float32), **npo)})
    return cases


def nan_cases():
    nan = float("nan")
    x = np.array([[1.0, nan, 3.0, -2.0], [nan, nan, nan, nan], [0.5, 2.0, nan, 4.0]])
    cases = []
    for fn in ["nansum", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd"]:
        f = getattr(np, fn)
        for axis in [None, 1, 2, -1]:
            npax = None if axis is None else (axis - 1 if axis > 0 else axis)
            with np.errstate(all="ignore"):
                import warnings
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    cases.append({"fn": fn, "x": x, "axis": axis, "out": np.asarray(f(x, axis=npax))})
                    if fn in ("nanvar", "nanstd"):
                        cases.append({"fn": fn, "x": x, "axis": axis, "opts": {"ddof": 1},
                                      "out": np.asarray(f(x, axis=npax, ddof=1))})
                    if axis == 2:
                        cases.append({"fn": fn, "x": x, "axis": axis, "opts": {"keepdims": True},
                                      "out": np.asarray(f(x, axis=npax, keepdims=True))})
    y = np.array([[1.0, nan, 3.0, -2.0], [nan, 7.0, nan, 1.0]])
    for fn in ["nanargmax", "nanargmin"]:
        f = getattr(np, fn)
        for axis in [None, 1, 2]:
            npax = None if axis is None else axis - 1
            cases.append({"fn": fn, "x": y, "axis": axis, "out": np.asarray(f(y, axis=npax) + 1)})
    return cases


def sets_cases():
    nan = float("nan")
    cases = []
    for x in [np.array([3.0, 1.0, nan, 2.0, 1.0, nan, -0.5, 3.0]), np.array([[2.0, 1.0], [1.0, 5.0]]),
              np.array([4.0]), np.array([]), np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 3.0], [1.0, 2.0, 1.0]])]:
        v, i, inv, c = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
        cases.append({"fn": "unique", "x": x, "out": v, "index": i + 1, "inverse": inv + 1, "counts": c})
    x = np.array([[1.0, 2.0, 1.0], [3.0, 4.0, 3.0], [1.0, 2.0, 1.0]])
    for axis in [1, 2]:
        v, i, inv, c = np.unique(x, return_index=True, return_inverse=True, return_counts=True, axis=axis - 1)
        cases.append({"fn": "unique", "x": x, "axis": axis, "out": v, "index": i + 1, "inverse": inv + 1, "counts": c})
    for x in [np.array([[1.0, 0.0, 2.0], [0.0, 0.0, nan]]), np.array([0.0, 3.0, 0.0, -1.0]), np.zeros((2, 0)),
              np.array([[[0.0, 1.0], [1.0, 0.0]], [[1.0, 1.0], [0.0, 0.0]]])]:
        cases.append({"fn": "nonzero", "x": x, "out": [i + 1 for i in np.nonzero(x)]})
        cases.append({"fn": "argwhere", "x": x, "out": np.argwhere(x) + 1})
        cases.append({"fn": "flatnonzero", "x": x, "out": np.flatnonzero(x) + 1})
        cases.append({"fn": "count_nonzero", "x": x, "out": np.asarray(np.count_nonzero(x))})
        if x.ndim >= 2:
            cases.append({"fn": "count_nonzero", "x": x, "axis": 2, "out": np.asarray(np.count_nonzero(x, axis=1))})
    return cases


def bins_cases():
    nan = float("nan")
    a = np.array([1.0, 2.0, 2.0, 3.0, 5.0])
    v = np.array([[0.0, 2.0, 2.5], [6.0, nan, 1.0]])
    cases = []
    for side in ["left", "right"]:
        cases.append({"fn": "searchsorted", "a": a, "v": v, "opts": {"side": side},
                      "out": np.searchsorted(a, v, side=side) + 1})
    cases.append({"fn": "searchsorted", "a": np.array([]), "v": np.array([1.0]), "opts": {},
                  "out": np.searchsorted(np.array([]), np.array([1.0])) + 1})
    x = np.array([0.5, 1.0, 2.5, 3.0, 6.0, -1.0])
    for bins in [np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])]:
        for right in [False, True]:
            cases.append({"fn": "digitize", "x": x, "bins": bins, "opts": {"right": right},
                          "out": np.digitize(x, bins, right=right)})
    ints = np.array([0, 1, 1, 3, 7, 0])
    w = np.array([0.5, 1.0, 2.0, -1.0, 0.25, 1.0])
    cases.append({"fn": "bincount", "x": ints, "opts": {}, "out": np.bincount(ints)})
    cases.append({"fn": "bincount", "x": ints, "opts": {"minlength": 10}, "out": np.bincount(ints, minlength=10)})
    cases.append({"fn": "bincount", "x": ints, "weights": w, "out": np.bincount(ints, weights=w)})
    cases.append({"fn": "bincount", "x": np.array([], dtype=np.int64), "opts": {"minlength": 3},
                  "out": np.bincount(np.array([], dtype=np.int64), minlength=3)})
    h = np.round(rng.standard_normal(200), 3)
    h[5] = nan
    hf = h[~np.isnan(h)]
    for opts in [{}, {"bins": 7}, {"bins": 4, "range": [-1.0, 1.0]}, {"bins": 5, "density": True}]:
        npo = dict(opts)
        if "range" in npo:
            npo["range"] = tuple(npo["range"])
        c, e = np.histogram(hf, **npo)
        cases.append({"fn": "histogram", "x": hf, "opts": opts, "out": c, "edges": e})
    hw = np.round(rng.random(hf.size), 3)
    c, e = np.histogram(hf, bins=6, weights=hw)
    cases.append({"fn": "histogram", "x": hf, "opts": {"bins": 6}, "weights": hw, "out": c, "edges": e})
    c, e = np.histogram(hf, bins=6, weights=hw, density=True)
    cases.append({"fn": "histogram", "x": hf, "opts": {"bins": 6, "density": True}, "weights": hw, "out": c, "edges": e})
    c, e = np.histogram(h, bins=4, range=(-1.0, 1.0))
    cases.append({"fn": "histogram", "x": h, "opts": {"bins": 4, "range": [-1.0, 1.0]}, "out": c, "edges": e})
    # the same in float32 (NumPy's float32 edges, as gpulua's): a value by an edge may move
    for c in cases:
        if c["fn"] == "histogram":
            npo = dict(c.get("opts") or {})
            if "range" in npo:
                npo["range"] = tuple(npo["range"])
            if "weights" in c:
                npo["weights"] = c["weights"]
            c["out32"], c["edges32"] = np.histogram(c["x"].astype(np.float32), **npo)
    edges = np.array([-3.0, -1.0, 0.0, 0.5, 3.0])
    c, e = np.histogram(hf, bins=edges)
    cases.append({"fn": "histogram", "x": hf, "edges_in": edges, "out": c, "edges": e})
    c, e = np.histogram(hf, bins=edges, density=True)
    cases.append({"fn": "histogram", "x": hf, "edges_in": edges, "density": True, "out": c, "edges": e})
    return cases


def shape_cases():
    cases = []
    x = rand(3, 4)
    for pw in [1, [2, 1], [[1, 2], [0, 3]], [[2, 2]]]:
        npw = pw if isinstance(pw, int) else [tuple(p) for p in pw] if isinstance(pw[0], list) else tuple(pw)
        for mode in ["constant", "edge", "reflect", "symmetric", "wrap"]:
            cases.append({"fn": "pad", "x": x, "pw": pw, "opts": {"mode": mode}, "out": np.pad(x, npw, mode=mode)})
    cases.append({"fn": "pad", "x": x, "pw": [1, 2], "opts": {"constant_values": 7.5},
                  "out": np.pad(x, (1, 2), constant_values=7.5)})
    cases.append({"fn": "pad", "x": x, "pw": [1, 2], "opts": {"constant_values": [-1.0, 2.0]},
                  "out": np.pad(x, (1, 2), constant_values=(-1.0, 2.0))})
    y = rand(5)
    for mode in ["reflect", "symmetric"]:
        cases.append({"fn": "pad", "x": y, "pw": [7, 9], "opts": {"mode": mode}, "out": np.pad(y, (7, 9), mode=mode)})
    a, b, c = rand(3), rand(2), rand(4)
    for ind in ["xy", "ij"]:
        cases.append({"fn": "meshgrid", "xs": [a, b, c], "opts": {"indexing": ind},
                      "out": list(np.meshgrid(a, b, c, indexing=ind))})
    z = rand(3, 4)
    idx = np.argsort(z, axis=1)
    cases.append({"fn": "take_along_axis", "x": z, "idx": idx + 1, "axis": 2, "out": np.take_along_axis(z, idx, 1)})
    idx0 = np.array([[2, 0, 1, 1]])
    cases.append({"fn": "take_along_axis", "x": z, "idx": idx0 + 1, "axis": 1, "out": np.take_along_axis(z, idx0, 0)})
    for k in [1, 2, 3, -1, 4]:
        cases.append({"fn": "rot90", "x": z, "k": k, "out": np.rot90(z, k).copy()})
    w = rand(2, 3, 4)
    cases.append({"fn": "rot90", "x": w, "k": 1, "axes": [3, 1], "out": np.rot90(w, 1, (2, 0)).copy()})
    cases.append({"fn": "moveaxis", "x": w, "src": 1, "dst": -1, "out": np.moveaxis(w, 0, -1).copy()})
    cases.append({"fn": "moveaxis", "x": w, "src": [1, 2], "dst": [3, 1], "out": np.moveaxis(w, [0, 1], [2, 0]).copy()})
    nan, inf = float("nan"), float("inf")
    v = np.array([nan, inf, -inf, 1.5])
    cases.append({"fn": "nan_to_num", "x": v, "opts": {}, "out": np.nan_to_num(v)})
    cases.append({"fn": "nan_to_num", "x": v, "opts": {"nan": -1.0, "posinf": 9.0, "neginf": -9.0},
                  "out": np.nan_to_num(v, nan=-1.0, posinf=9.0, neginf=-9.0)})
    return cases


def stats_cases():
    import warnings
    warnings.simplefilter("ignore")
    nan = float("nan")
    cases = []
    x = rand(4, 5)
    for method in ["linear", "lower", "higher", "midpoint", "nearest"]:
        for axis in [None, 1, 2]:
            npax = None if axis is None else axis - 1
            cases.append({"fn": "quantile", "x": x, "q": [0.0, 0.1, 0.5, 0.75, 1.0], "axis": axis,
                          "opts": {"method": method}, "out": np.quantile(x, [0.0, 0.1, 0.5, 0.75, 1.0], axis=npax, method=method)})
    cases.append({"fn": "quantile", "x": x, "q": 0.3, "axis": 2, "opts": {"keepdims": True},
                  "out": np.quantile(x, 0.3, axis=1, keepdims=True)})
    cases.append({"fn": "percentile", "x": x, "q": 40, "axis": 1, "opts": {}, "out": np.asarray(np.percentile(x, 40, axis=0))})
    for axis in [None, 1, 2]:
        npax = None if axis is None else axis - 1
        cases.append({"fn": "median", "x": x, "axis": axis, "out": np.asarray(np.median(x, axis=npax))})
    xn = x.copy()
    xn[0, 1] = nan
    xn[2, :] = nan
    cases.append({"fn": "median", "x": xn, "axis": 2, "out": np.median(xn, axis=1)})
    for axis in [None, 1, 2]:
        npax = None if axis is None else axis - 1
        cases.append({"fn": "nanmedian", "x": xn, "axis": axis, "out": np.asarray(np.nanmedian(xn, axis=npax))})
    for method in ["linear", "lower", "higher", "midpoint", "nearest"]:
        for axis in [None, 2]:
            npax = None if axis is None else axis - 1
            cases.append({"fn": "nanquantile", "x": xn, "q": [0.0, 0.2, 0.5, 0.9, 1.0], "axis": axis,
                          "opts": {"method": method},
                          "out": np.nanquantile(xn, [0.0, 0.2, 0.5, 0.9, 1.0], axis=npax, method=method)})
    cases.append({"fn": "nanpercentile", "x": xn, "q": 30, "axis": 1, "opts": {"keepdims": True},
                  "out": np.nanpercentile(xn, 30, axis=0, keepdims=True)})
    c = rand(3, 6)
    d = rand(2, 6)
    cases.append({"fn": "cov", "x": c, "opts": {}, "out": np.cov(c)})
    cases.append({"fn": "cov", "x": c, "opts": {"rowvar": False}, "out": np.cov(c, rowvar=False)})
    cases.append({"fn": "cov", "x": c, "opts": {"ddof": 0}, "out": np.cov(c, ddof=0)})
    cases.append({"fn": "cov", "x": c, "opts": {"bias": True}, "out": np.cov(c, bias=True)})
    cases.append({"fn": "cov", "x": c, "y": d, "opts": {}, "out": np.cov(c, d)})
    cases.append({"fn": "cov", "x": c[0], "opts": {}, "out": np.asarray(np.cov(c[0]))})
    cases.append({"fn": "corrcoef", "x": c, "opts": {}, "out": np.corrcoef(c)})
    cases.append({"fn": "corrcoef", "x": c, "y": d, "opts": {}, "out": np.corrcoef(c, d)})
    cases.append({"fn": "corrcoef", "x": c, "opts": {"rowvar": False}, "out": np.corrcoef(c, rowvar=False)})
    for n, axis in [(1, -1), (2, -1), (1, 1), (3, 2), (0, -1), (5, 2)]:
        cases.append({"fn": "diff", "x": x, "n": n, "axis": axis, "out": np.diff(x, n, axis if axis < 0 else axis - 1)})
    cases.append({"fn": "diff", "x": x, "n": 1, "axis": 2, "opts": {"prepend": 0.5, "append": -1.0},
                  "out": np.diff(x, 1, 1, prepend=0.5, append=-1.0)})
    g = rand(4, 3)
    cases.append({"fn": "gradient", "x": g, "spacing": [], "out": list(np.gradient(g))})
    cases.append({"fn": "gradient", "x": g, "spacing": [0.5, 2.0], "out": list(np.gradient(g, 0.5, 2.0))})
    cases.append({"fn": "gradient", "x": g, "spacing": [], "opts": {"axis": 2}, "out": [np.gradient(g, axis=1)]})
    cases.append({"fn": "gradient", "x": g[:2], "spacing": [3.0], "opts": {"axis": 1}, "out": [np.gradient(g[:2], 3.0, axis=0)]})
    for la, lv in [(6, 3), (5, 5), (3, 6), (4, 1), (1, 4), (7, 4)]:
        a, v = rand(la), rand(lv)
        for mode in ["full", "same", "valid"]:
            cases.append({"fn": "convolve", "a": a, "v": v, "mode": mode, "out": np.convolve(a, v, mode)})
            cases.append({"fn": "correlate", "a": a, "v": v, "mode": mode, "out": np.correlate(a, v, mode)})
    xp = np.array([0.0, 1.0, 2.5, 4.0])
    fp = np.array([1.0, -1.0, 3.0, 2.0])
    xi = np.array([[-1.0, 0.0, 0.5, 1.0], [2.0, 4.0, 5.0, nan]])
    cases.append({"fn": "interp", "x": xi, "xp": xp, "fp": fp, "opts": {}, "out": np.interp(xi, xp, fp)})
    cases.append({"fn": "interp", "x": xi, "xp": xp, "fp": fp, "opts": {"left": -7.0, "right": 7.0},
                  "out": np.interp(xi, xp, fp, left=-7.0, right=7.0)})
    t = rand(3, 4)
    cases.append({"fn": "trapz", "y": t, "opts": {}, "out": np.trapz(t)})
    cases.append({"fn": "trapz", "y": t, "opts": {"axis": 1, "dx": 0.5}, "out": np.trapz(t, dx=0.5, axis=0)})
    pts = np.array([0.0, 0.5, 2.0, 2.25])
    cases.append({"fn": "trapz", "y": t, "x": pts, "opts": {}, "out": np.trapz(t, pts)})
    return cases


def main():
    write("einsum", "einsum: subs, inputs, out", einsum_cases())
    write("tensordot", "tensordot(a, b, axes) (1-based axes): a, b, axes, out", tensordot_cases())
    write("products", "kron, inner, vdot: fn, a, b, out", products())
    write("diag", "diagonal/trace (offset, axis1, axis2; 1-based), diag/triu/tril (k): fn, x, args, out", diag_cases())
    write("close", "isclose/allclose(a, b, opts): out (isclose), all (allclose)", close_cases())
    write("sets", "unique (1-based index/inverse), nonzero, argwhere, flatnonzero, count_nonzero: fn, x, axis, out", sets_cases())
    write("bins", "searchsorted (NumPy + 1), digitize (NumPy's values), bincount, histogram: fn, inputs, opts, out", bins_cases())
    write("shape", "pad, meshgrid, take_along_axis (1-based idx), rot90, moveaxis, nan_to_num", shape_cases())
    write("stats", "quantile/percentile/median/nanmedian, cov/corrcoef, diff, gradient, convolve/correlate, interp, trapz",
          stats_cases())
    write("nan", "nan-reductions fn(x, axis, opts) (1-based axes and positions): out", nan_cases())


if __name__ == "__main__":
    main()

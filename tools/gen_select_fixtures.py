#!/usr/bin/python3
"""Writes spec/fixtures/select/*.lua: NumPy's results for sort/argsort (every dtype NumPy
has), partition, histogram/histcounts/bincount, quantiles and unique on inputs with ties,
NaN and -0.0 (spec/select_spec.lua reads them; the spec needs no Python). Run with
Debian's /usr/bin/python3 (it has NumPy):

    /usr/bin/python3 tools/gen_select_fixtures.py

Arrays are {shape = {...}, data = {flat, row-major}}; positions and axes 1-based."""
import math
import os
import sys
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from luafix import write_cases  # noqa: E402  (one Lua writer for the fixtures)

rng = np.random.default_rng(29)


def write(name, header, cases):
    write_cases("select", name, "gen_select_fixtures.py", "NumPy " + np.__version__, header, cases)


def values(dt, shape):
    """Values of dtype dt with many ties; floats with NaN, -0.0, 0.0 and infinities."""
    n = int(np.prod(shape))
    if dt == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dt == "uint8":
        return rng.integers(0, 256, n).astype(np.uint8).reshape(shape)
    if dt in ("int32", "int64"):
        big = 2**31 - 1 if dt == "int32" else 2**40
        v = rng.integers(-5, 6, n)
        wide = rng.random(n) < 0.3
        v[wide] = rng.integers(-big, big, int(wide.sum()))
        if n > 1:
            v[0], v[-1] = -big, big
        return v.astype(dt).reshape(shape)
    v = np.round(rng.standard_normal(n) * 4, 1)
    special = [np.nan, -0.0, 0.0, np.inf, -np.inf]
    for i in range(n):
        if rng.random() < 0.12:
            v[i] = special[rng.integers(0, len(special))]
    return v.astype(dt).reshape(shape)


def desc_order(x, axis):
    """gpulua's descending stable argsort: NaN first (the largest), ties in order."""
    x = np.moveaxis(x, axis, -1)
    out = np.empty(x.shape, dtype=np.int64)
    for idx in np.ndindex(x.shape[:-1]):
        row = x[idx]
        vals = [float(v) for v in row]
        out[idx] = sorted(range(len(vals)), key=lambda i: (0, 0.0) if math.isnan(vals[i]) else (1, -vals[i]))
    return np.moveaxis(out, -1, axis)


def sort_cases():
    cases = []
    for dt in ["float32", "float64", "float16", "int32", "int64", "uint8", "bool"]:
        for shape, axis in [((45,), 0), ((3, 70), 1), ((70, 3), 0), ((1,), 0), ((0, 4), 1)]:
            x = values(dt, shape)
            asc = np.argsort(x, axis=axis, kind="stable")
            cases.append({"dtype": dt, "x": x.astype(np.float64), "axis": axis + 1,
                          "sorted": np.take_along_axis(x, asc, axis).astype(np.float64),
                          "argsort": asc + 1, "argsort_desc": desc_order(x, axis) + 1})
    return cases


def partition_cases():
    cases = []
    for dt, shape, axis, kth in [
        ("float32", (200,), 0, [100]), ("float32", (200,), 0, [100, 101, -1]),
        ("float64", (1001,), 0, [1, 501, 1001]), ("int32", (500,), 0, [7, -7]),
        ("float64", (4, 150), 1, [75, 76]), ("float32", (150, 4), 0, [1, 2, 3, 150]),
        ("int64", (300,), 0, [150]), ("uint8", (300,), 0, [299]), ("float16", (100,), 0, [50, 51]),
        ("float32", (3000,), 0, [1500, 1501, 3000]),
    ]:
        x = values(dt, shape)
        if dt == "float32" and shape == (3000,):
            x = np.repeat(np.round(rng.standard_normal(30), 2), 100).astype(np.float32)   # long runs of ties
            rng.shuffle(x)
        s = np.sort(x, axis=axis)
        k0 = [k - 1 if k > 0 else shape[axis] + k for k in kth]
        cases.append({"dtype": dt, "x": x.astype(np.float64), "axis": axis + 1, "kth": kth,
                      "at": np.take(s, k0, axis=axis).astype(np.float64)})
    return cases


def hist_cases():
    cases = []
    x = rng.standard_normal(3000).astype(np.float32)
    x[:50] = np.nan
    e = np.arange(-40, 41, dtype=np.float32) / 10            # values on the edges
    x[50:131] = e
    w = rng.random(3000)
    for bins, rng_, wt in [(100, None, False), (7, (-1.5, 2.0), False), (33, None, True), (1, (0.0, 0.0), False)]:
        xs = x[50:] if rng_ is None else x   # NumPy refuses NaN without a range
        c, edges = np.histogram(xs, bins=bins, range=rng_, weights=w[-xs.size:] if wt else None)
        cases.append({"fn": "histogram", "x": xs.astype(np.float64), "bins": bins,
                      "range": list(rng_) if rng_ else None, "weights": w[-xs.size:] if wt else None,
                      "counts": c.astype(np.float64), "edges": edges.astype(np.float64)})
    edges = np.array([-3.0, -1.0, -0.5, 0.0, 0.0, 0.25, 2.0, 4.0])
    c, _ = np.histogram(x[50:], bins=edges)
    cases.append({"fn": "histcounts", "x": x[50:].astype(np.float64), "edges": edges, "counts": c.astype(np.float64)})
    c, _ = np.histogram(x[50:], bins=edges, weights=w[50:])
    cases.append({"fn": "histcounts", "x": x[50:].astype(np.float64), "edges": edges, "weights": w[50:],
                  "counts": c})
    xi = rng.integers(0, 40, 2000)
    cases.append({"fn": "bincount", "x": xi, "counts": np.bincount(xi).astype(np.float64)})
    cases.append({"fn": "bincount", "x": xi, "weights": w[:2000], "minlength": 50,
                  "counts": np.bincount(xi, weights=w[:2000], minlength=50)})
    return cases


def quantile_cases():
    cases = []
    x = np.round(rng.standard_normal(1001), 1)                 # ties
    for method in ["linear", "lower", "higher", "midpoint", "nearest"]:
        q = [0.0, 0.1, 0.25, 0.5, 0.77, 0.999, 1.0]
        cases.append({"fn": "quantile", "x": x, "q": q, "method": method,
                      "out": np.quantile(x, q, method=method)})
    y = np.round(rng.standard_normal((3, 400)), 2)
    cases.append({"fn": "median", "x": y.copy(), "axis": 2, "out": np.median(y, axis=1)})
    yn = y.copy()
    yn[1, 17] = np.nan
    cases.append({"fn": "median", "x": yn, "axis": 2, "out": np.median(yn, axis=1)})
    ye = y.copy()
    ye[:, 5:45] = np.nan                                         # the same count per row
    for method in ["linear", "nearest", "midpoint"]:
        cases.append({"fn": "nanquantile", "x": ye.copy(), "axis": 2, "q": [0.3, 0.5], "method": method,
                      "out": np.nanquantile(ye, [0.3, 0.5], axis=1, method=method)})
    cases.append({"fn": "nanmedian", "x": ye.copy(), "axis": 2, "out": np.nanmedian(ye, axis=1)})
    ye[0, 100:300] = np.nan                                      # counts differ
    cases.append({"fn": "nanmedian", "x": ye, "axis": 2, "out": np.nanmedian(ye, axis=1)})
    return cases


def unique_cases():
    x = np.round(rng.standard_normal(5000), 2).astype(np.float32)
    x[rng.random(5000) < 0.01] = np.nan
    u, i, inv, c = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    return [{"x": x.astype(np.float64), "values": u.astype(np.float64), "index": i + 1,
             "inverse": inv + 1, "counts": c}]


if __name__ == "__main__":
    write("sort", "sort / argsort (stable) of every NumPy dtype, ascending and descending", sort_cases())
    write("partition", "partition: the sorted values at kth", partition_cases())
    write("hist", "histogram, histcounts, bincount", hist_cases())
    write("quantile", "quantile methods, median, nanquantile, nanmedian through the selection", quantile_cases())
    write("unique", "unique with index, inverse, counts", unique_cases())

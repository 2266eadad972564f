#!/usr/bin/python3
"""Writes spec/fixtures/conv_fft/*.lua for spec/conv_fft_spec.lua: NumPy's convolve and
correlate (real, complex, mixed and integer operands, every mode, lengths from 1 to about a
thousand, primes among them) and a NumPy reference of nn.functional.conv1d (PyTorch's
definition: a cross-correlation with stride, padding, dilation and groups). Run with
Debian's /usr/bin/python3 (NumPy):

    /usr/bin/python3 tools/gen_conv_fft_fixtures.py

Arrays are {shape = {...}, data = {flat, row-major}}; a complex array is
{complex = true, pairs = its (..., 2) real view}."""
import numpy as np

import luafix
from luafix import write_cases

rng = np.random.default_rng(29)


def arr(x):
    """a complex array as {complex = true, pairs = its (..., 2) real view}"""
    x = np.asarray(x)
    if np.iscomplexobj(x):
        return {"complex": True, "pairs": np.stack([x.real, x.imag], -1)}
    return x


def write(name, header, cases):
    write_cases("conv_fft", name, "gen_conv_fft_fixtures.py", "NumPy " + np.__version__,
                header, cases)


def real(n, dtype=np.float64):
    return np.round(rng.standard_normal(n), 4).astype(dtype)


def cplx(n):
    return np.round(rng.standard_normal(n), 4) + 1j * np.round(rng.standard_normal(n), 4)


LENGTHS = [(1, 1), (1, 4), (5, 3), (3, 5), (8, 8), (17, 4), (4, 17), (101, 31), (31, 101), (257, 64),
           (997, 13)]


def convolve_cases():
    """one case per lengths and kind: a, v and both functions' results in the three modes"""
    cases = []
    for n, m in LENGTHS:
        for kind in ("float64", "complex128", "mixed", "int64", "float32"):
            if (n * m > 5000 and kind in ("mixed", "float32")) or (n * m > 10000 and kind == "int64"):
                continue
            if kind == "float64":
                a, v = real(n), real(m)
            elif kind == "float32":
                a, v = real(n, np.float32), real(m, np.float32)
            elif kind == "complex128":
                a, v = cplx(n), cplx(m)
            elif kind == "mixed":
                a, v = real(n), cplx(m)
            else:
                a, v = rng.integers(-50, 50, n), rng.integers(-50, 50, m)
            case = {"kind": kind, "a": arr(a), "v": arr(v)}
            for fn in ("convolve", "correlate"):
                f = np.convolve if fn == "convolve" else np.correlate
                case[fn] = {mode: arr(f(a, v, mode)) for mode in ("full", "same", "valid")}
            cases.append(case)
    return cases


def conv1d_ref(x, w, b, stride, padding, dilation, groups):
    """PyTorch's conv1d in float64 sums: y[n, o, t] = b[o] + sum_c sum_j xp[n, g*Cg + c, t s + j d] w[o, c, j]"""
    N, C, L = x.shape
    O, Cg, k = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    kd = dilation * (k - 1) + 1
    Lout = (L + 2 * padding - kd) // stride + 1
    Og = O // groups
    y = np.zeros((N, O, Lout))
    for o in range(O):
        g = o // Og
        for j in range(k):
            sl = xp[:, g * Cg:(g + 1) * Cg, j * dilation: j * dilation + (Lout - 1) * stride + 1: stride]
            y[:, o, :] += np.einsum("nct,c->nt", sl, w[o, :, j])
    if b is not None:
        y += b[None, :, None]
    return y


def conv1d_cases():
    cases = []
    specs = [  # N, C, L, O, k, stride, padding, dilation, groups, bias
        (2, 3, 50, 4, 7, 1, 0, 1, 1, True), (1, 2, 9, 3, 9, 1, 0, 1, 1, False), (3, 2, 40, 2, 5, 2, 3, 2, 1, True),
        (2, 6, 33, 6, 4, 3, 1, 1, 3, True), (2, 4, 64, 2, 3, 1, 2, 3, 2, False), (1, 1, 1, 1, 1, 1, 0, 1, 1, True),
        (2, 3, 200, 2, 64, 1, 32, 1, 1, True), (1, 2, 401, 3, 129, 2, 0, 1, 1, False), (None, 3, 20, 2, 5, 1, 1, 1, 1, True),
    ]
    for N, C, L, O, k, s, p, d, G, bias in specs:
        x = np.round(rng.standard_normal((N or 1, C, L)), 4)
        w = np.round(rng.standard_normal((O, C // G, k)), 4)
        b = np.round(rng.standard_normal(O), 4) if bias else None
        y = conv1d_ref(x, w, b, s, p, d, G)
        if N is None:
            x, y = x[0], y[0]
        case = {"x": x, "w": w, "stride": s, "padding": p, "dilation": d, "groups": G, "out": y}
        if b is not None:
            case["b"] = b
        cases.append(case)
    return cases


if __name__ == "__main__":
    write("convolve", "kind (float64 complex128 mixed int64 float32), a, v, convolve and correlate: NumPy's result "
          "per mode", convolve_cases())
    write("conv1d", "nn.functional.conv1d: x, w, b (absent: none), stride, padding, dilation, groups, out (float64 sums)",
          conv1d_cases())

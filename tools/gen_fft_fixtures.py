#!/usr/bin/python3
"""Writes spec/fixtures/fft/*.lua: inputs and numpy.fft's results for spec/fft_spec.lua
(the spec needs no Python).

    /usr/bin/python3 tools/gen_fft_fixtures.py

Each file returns a list of cases:

    { fn = "rfft", x = <array>, view = <view or nil>, n = 8, axis = -1, s = {..}, axes = {..},
      norm = "ortho", y = <array>, tol = 1e-10 }

An array is { shape = {...}, dtype = "...", re = {...}, im = {...} } in C order (im only for
complex dtypes; a bool's values are 0/1). Axes are gpulua's: 1-based, negatives from the end.
A view, applied to x before the call, is { "T" } (x.T), { "slice", axis, first, last, step }
(inclusive, 1-based; a negative step walks backwards), { "expand", shape } or
{ "permute", perm } (1-based), so the non-contiguous layouts are tested as NumPy sees them.

The expected values come from NumPy 1.24 in float64/complex128 on the very inputs given
(float32 and float16 inputs hold values those types represent exactly); 'y.dtype' is the
dtype NumPy 2 gives (complex64 for float32/float16/complex64 inputs, complex128 otherwise;
irfft and hfft: the real part's, float16 for float16 input), which the spec checks.
Inputs are small multiples of 1/4 so the files stay short.
"""
import os
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "fixtures", "fft")
rng = np.random.default_rng(20261206)

REAL_OUT = {"irfft", "irfft2", "irfftn", "hfft"}
FLOAT32ISH = {"float32", "float16", "complex64"}


def np2_dtype(fn, dt):
    """numpy.fft's result dtype under NumPy 2 for an input of dtype dt."""
    if fn in REAL_OUT:
        if dt == "float16":
            return "float16"
        return "float32" if dt in FLOAT32ISH else "float64"
    return "complex64" if dt in FLOAT32ISH else "complex128"


def values(shape, complex_=False):
    x = rng.integers(-12, 13, size=shape) / 4.0
    if complex_:
        x = x + 1j * (rng.integers(-12, 13, size=shape) / 4.0)
    return x


def num(v):
    v = float(v)
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return "%.13g" % v


def arr(x, dtype=None):
    x = np.asarray(x)
    dtype = dtype or str(x.dtype)
    flat = x.reshape(-1)
    t = ['{ shape = {%s}, dtype = "%s"' % (", ".join(str(d) for d in x.shape), dtype)]
    t.append(", re = {%s}" % ", ".join(num(v) for v in np.real(flat)))
    if np.iscomplexobj(x):
        t.append(", im = {%s}" % ", ".join(num(v) for v in np.imag(flat)))
    t.append(" }")
    return "".join(t)


def apply_view(x, view):
    if view is None:
        return x
    kind = view[0]
    if kind == "T":
        return x.T
    if kind == "slice":
        axis, first, last, step = view[1], view[2], view[3], view[4]
        ax = axis - 1 if axis > 0 else x.ndim + axis
        sl = [slice(None)] * x.ndim
        if step > 0:
            sl[ax] = slice(first - 1, last, step)
        else:
            stop = last - 2 if last - 2 >= 0 else None
            sl[ax] = slice(first - 1, stop, step)
        return x[tuple(sl)]
    if kind == "expand":
        return np.broadcast_to(x, view[1])
    if kind == "permute":
        return np.transpose(x, [p - 1 for p in view[1]])
    raise ValueError(kind)


def view_lua(view):
    if view is None:
        return None
    if view[0] == "T":
        return '{ "T" }'
    if view[0] == "slice":
        return '{ "slice", %d, %d, %d, %d }' % tuple(view[1:])
    return '{ "%s", {%s} }' % (view[0], ", ".join(str(v) for v in view[1]))


def axis0(a, nd):
    return a - 1 if a > 0 else a


class Cases:
    def __init__(self, name):
        self.name = name
        self.items = []

    def add(self, fn, x, dtype=None, view=None, n=None, axis=None, s=None, axes=None, norm=None, tol=None):
        """Runs numpy.fft.<fn> on x (cast to dtype, viewed) and records the case."""
        dtype = dtype or ("complex128" if np.iscomplexobj(x) else "float64")
        xin = np.asarray(x).astype(dtype)
        xv = apply_view(xin, view)
        kw = {}
        if norm is not None:
            kw["norm"] = norm
        f = getattr(np.fft, fn)
        calc = xv.astype(np.complex128 if np.iscomplexobj(xv) else np.float64)
        if axes is not None:                      # else the function's own default
            kw["axes"] = [axis0(a, xv.ndim) for a in axes]
        if fn in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
            y = f(calc, n=n, axis=axis0(axis, xv.ndim) if axis is not None else -1, **kw)
        elif calc.size == 0 and s is None:
            # NumPy 1.24's n-D transforms fail on an empty batch where NumPy 2's give an empty
            # result: that of a batch of one, emptied
            empty = [d for d in range(calc.ndim) if calc.shape[d] == 0]
            one = np.ones([1 if d in empty else calc.shape[d] for d in range(calc.ndim)], calc.dtype)
            y = f(one, **kw)
            y = y[tuple(slice(0, 0) if d in empty else slice(None) for d in range(calc.ndim))]
        else:
            y = f(calc, s=s, **kw)
        low = dtype in FLOAT32ISH
        t = ['{ fn = "%s"' % fn]
        t.append(", x = " + arr(xin, dtype))
        if view is not None:
            t.append(", view = " + view_lua(view))
        for key, v in (("n", n), ("axis", axis)):
            if v is not None:
                t.append(", %s = %d" % (key, v))
        for key, v in (("s", s), ("axes", axes)):
            if v is not None:
                t.append(", %s = {%s}" % (key, ", ".join(str(i) for i in v)))
        if norm is not None:
            t.append(', norm = "%s"' % norm)
        t.append(", y = " + arr(y, np2_dtype(fn, dtype)))
        ydt = np2_dtype(fn, dtype)
        t.append(", tol = %s" % (tol or ("3e-3" if ydt == "float16" else "1e-4" if low else "1e-10")))
        t.append(" }")
        self.items.append("".join(t))

    def write(self, header):
        path = os.path.join(OUT, self.name + ".lua")
        with open(path, "w") as f:
            f.write("-- %s (tools/gen_fft_fixtures.py, NumPy %s)\n" % (header, np.__version__))
            f.write("return {\n")
            for c in self.items:
                f.write("  " + c + ",\n")
            f.write("}\n")


NORMS = (None, "backward", "ortho", "forward")


def c2c():
    c = Cases("c2c")
    x8 = values(8, True)
    for fn in ("fft", "ifft"):
        for norm in NORMS:
            c.add(fn, x8, norm=norm)
    c.add("fft", values(7))                                  # odd, real input
    c.add("fft", values(13, True))                           # prime
    c.add("ifft", values(11, True), norm="ortho")
    c.add("fft", values(1, True))                            # n = 1
    c.add("fft", values(5, True), n=8)                       # padded
    c.add("ifft", values(8, True), n=5, norm="forward")      # cropped
    x34 = values((3, 4), True)
    c.add("fft", x34, axis=1)
    c.add("fft", x34, axis=-2, n=5)
    c.add("ifft", x34, axis=2)
    c.add("fft", values((2, 3, 5), True), axis=2)            # batched over both sides
    c.add("fft", values((0, 4), True))                       # empty batch
    c.add("fft", values((3, 0), True), n=4)                  # an empty axis padded
    c.add("fft", values((4, 1), True), axis=2)               # size-1 axis
    c.write("fft and ifft")


def r2c():
    c = Cases("r2c")
    for n in (8, 7, 13):
        c.add("rfft", values(n))
    for norm in ("ortho", "forward"):
        c.add("rfft", values(6), norm=norm)
        c.add("irfft", values(4, True), norm=norm)
    c.add("rfft", values(5), n=8)
    c.add("rfft", values(9), n=6)
    c.add("irfft", values(5, True))                          # n = 8, imaginary DC and Nyquist ignored
    c.add("irfft", values(5, True), n=9)                     # odd n
    c.add("irfft", values(5, True), n=4)                     # cropped
    c.add("irfft", values(3, True), n=11)                    # padded
    c.add("irfft", values(2, True))                          # n = 2
    x = values((3, 6))
    c.add("rfft", x, axis=1)
    c.add("rfft", values((2, 3, 5)), axis=2)
    c.add("irfft", values((4, 3), True), axis=1, n=6)
    c.add("irfft", values((2, 3, 4), True), axis=-2, n=5)
    c.add("rfft", values((0, 6)))
    c.add("rfft", values(1))
    c.write("rfft and irfft")


def hermitian():
    c = Cases("hfft")
    for norm in NORMS:
        c.add("hfft", values(5, True), norm=norm)
        c.add("ihfft", values(6), norm=norm)
    c.add("hfft", values(4, True), n=7)
    c.add("ihfft", values(7), n=4)
    c.add("hfft", values((3, 4), True), axis=1)
    c.add("ihfft", values((3, 5)), axis=1)
    c.write("hfft and ihfft")


def c2c_nd():
    c = Cases("fftn")
    x34 = values((3, 4), True)
    for fn in ("fft2", "ifft2"):
        for norm in NORMS:
            c.add(fn, x34, norm=norm)
    c.add("fft2", values((2, 3, 4), True))                   # batched over the first axis
    c.add("fft2", values((3, 4)), s=(4, 3))                  # pad and crop
    c.add("ifft2", values((3, 4), True), s=(2, 6), axes=(2, 1))
    c.add("fftn", values((2, 3, 4), True))                   # all axes
    c.add("fftn", values((2, 3, 4), True), axes=(1, 3))
    c.add("fftn", values((2, 3, 4), True), axes=(-1, 1))
    c.add("ifftn", values((2, 3, 4), True), norm="ortho")
    c.add("fftn", values((2, 3, 4), True), s=(5, 2))         # s without axes: the last len(s)
    c.add("ifftn", values((3, 5), True), s=(4, 7), axes=(1, 2), norm="forward")
    c.add("fftn", values((2, 2, 2, 3), True))                # four axes
    c.add("fft2", values((0, 3, 4), True))
    c.add("fftn", values((1, 5), True))
    c.write("fft2, ifft2, fftn and ifftn")


def r2c_nd():
    c = Cases("rfftn")
    x = values((3, 4))
    for norm in NORMS:
        c.add("rfft2", x, norm=norm)
    c.add("irfft2", values((3, 3), True))
    c.add("irfft2", values((3, 3), True), s=(3, 5), norm="ortho")
    c.add("rfftn", values((2, 3, 5)))
    c.add("rfftn", values((2, 3, 5)), axes=(3, 1))           # the halved axis not the last
    c.add("rfftn", values((2, 3, 6)), s=(4, 4))
    c.add("irfftn", values((2, 3, 4), True))                 # not conjugate symmetric
    c.add("irfftn", values((2, 3, 4), True), axes=(1, 2), s=(3, 5), norm="forward")
    c.add("irfftn", values((2, 3, 4), True), axes=(-1, -3))
    c.add("rfftn", values((2, 2, 2, 4)))
    c.add("irfftn", values((2, 2, 2, 3), True))
    c.write("rfft2, irfft2, rfftn and irfftn")


def views():
    c = Cases("views")
    x = values((4, 6), True)
    c.add("fft", x, view=("T",))
    c.add("fft", x, view=("T",), axis=1)
    c.add("fft2", x, view=("T",))
    c.add("fft", x, view=("slice", 2, 1, 6, 2))
    c.add("fft", x, view=("slice", 2, 6, 1, -1))             # a negative stride
    c.add("fft", values((1, 5), True), view=("expand", (3, 5)))  # a broadcast batch
    c.add("ifftn", values((2, 3, 4), True), view=("permute", (3, 1, 2)))
    r = values((4, 6))
    c.add("rfft", r, view=("T",))
    c.add("rfft", r, view=("slice", 2, 1, 6, 2))
    c.add("rfft", r, view=("slice", 2, 6, 1, -1))
    c.add("rfft2", r, view=("T",))
    c.add("rfftn", values((2, 3, 4)), view=("permute", (2, 3, 1)))
    c.add("irfft", values((4, 5), True), view=("T",))
    c.add("irfft", values((3, 5), True), view=("slice", 1, 3, 1, -1))
    c.add("irfftn", values((3, 4, 3), True), view=("permute", (3, 1, 2)))
    c.add("hfft", values((3, 4), True), view=("T",))
    c.write("non-contiguous inputs: transposed, strided, reversed, broadcast, permuted")


def dtypes():
    c = Cases("dtypes")
    for dt in ("float32", "float16", "int64", "int32", "uint8", "bool"):
        x = values(6)
        if dt in ("uint8",):
            x = np.abs(x) * 4
        if dt == "bool":
            x = x > 0
        if dt in ("int64", "int32"):
            x = x * 4
        c.add("fft", x, dtype=dt)
        c.add("rfft", x, dtype=dt)
    c.add("fft", values(6, True), dtype="complex64")
    c.add("ifft2", values((3, 4), True), dtype="complex64", norm="ortho")
    c.add("irfft", values(4, True), dtype="complex64")
    c.add("irfft", values(4), dtype="float16")
    c.add("irfft", values(4), dtype="float32")
    c.add("irfft", values(4) * 4, dtype="int32")
    c.add("hfft", values(4), dtype="float16")
    c.add("rfftn", values((3, 4)), dtype="float32", norm="forward")
    c.add("irfftn", values((3, 3), True), dtype="complex64")
    c.write("dtypes: float32, float16, integers, bool, complex64")


def helpers():
    """The frequencies, and the shifts of one array: a line per function, each case a row."""
    path = os.path.join(OUT, "helpers.lua")
    with open(path, "w") as f:
        f.write("-- fftfreq, rfftfreq, fftshift and ifftshift (tools/gen_fft_fixtures.py, NumPy %s)\n"
                % np.__version__)
        f.write("return {\n  freq = {\n")
        for fn in ("fftfreq", "rfftfreq"):
            rows = []
            for n in (1, 2, 5, 8):
                for d in (1.0, 0.1, 4):
                    rows.append('{ n = %d, d = %s, y = %s }' % (n, num(d), arr(getattr(np.fft, fn)(n, d))))
            f.write('    %s = { %s },\n' % (fn, ", ".join(rows)))
        f.write("  },\n  shift = {\n")
        x = np.arange(3 * 5 * 2).reshape(3, 5, 2)
        for fn in ("fftshift", "ifftshift"):
            rows = []
            for axes in (None, 1, 2, -1, (1, 2), (3, 1)):
                ax = None if axes is None else (axis0(axes, 3) if isinstance(axes, int) else [axis0(a, 3) for a in axes])
                lua_axes = "nil" if axes is None else (str(axes) if isinstance(axes, int)
                                                       else "{%s}" % ", ".join(str(a) for a in axes))
                rows.append('{ axes = %s, y = %s }' % (lua_axes, arr(getattr(np.fft, fn)(x, axes=ax))))
            f.write('    %s = { %s },\n' % (fn, ", ".join(rows)))
        f.write("  },\n  shift_x = %s,\n" % arr(x))
        f.write("}\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    c2c()
    r2c()
    hermitian()
    c2c_nd()
    r2c_nd()
    views()
    dtypes()
    helpers()


if __name__ == "__main__":
    main()

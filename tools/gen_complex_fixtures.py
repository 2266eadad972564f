#!/usr/bin/env python3
"""gen_complex_fixtures.py — NumPy's answers for spec/complex_spec.lua: the complex
scalar's arithmetic and text, and the printed forms of complex arrays.

    /usr/bin/python3 tools/gen_complex_fixtures.py   # rewrites spec/fixtures/complex/*.lua

scalar.lua: a op b for complex128 operands (and Lua numbers on either side) as NumPy's
complex128 scalars compute them (Smith's division, npy_cpow's powers), and
str(z) as Python writes it, turned into gpulua's form (the real part always written, "i"
for "j": "(1+2j)" -> "1+2i", "2j" -> "0+2i").

print.lua: each case gives the parts (re, im: float64 values, NaN and the infinities as
0/0 and +-1/0), the shape and the dtype, and the string gpulua prints: NumPy's
array2string with gpulua's prefix "gpu.array(" (so lines wrap where they would after that
prefix), then ", dtype=..., device=cpu)". A 0-d array prints its element alone, an empty
one "[]" (with its shape unless it is 1-D), as gpulua's repr does.
"""
import warnings

import numpy as np

from gen_complex_elem_fixtures import pow_numpy2
from luafix import write_cases

warnings.simplefilter("ignore")
np.seterr(all="ignore")

PREFIX = "gpu.array("
NAN, INF = float("nan"), float("inf")


# ---- the scalar ------------------------------------------------------------------------------

def text(z):
    """Python's str of a complex in gpulua's form."""
    s = str(complex(z))
    if s.startswith("("):
        s = s[1:-1]
    else:                                    # the real part is +0 and left out
        s = "0" + (s if s[0] in "+-" else "+" + s)
    cut = max(i for i in range(1, len(s)) if s[i] in "+-" and s[i - 1] != "e")
    return s[:cut] + s[cut:-1] + "i"


def parts(z):
    z = complex(z)
    return [z.real, z.imag]


def apply(op, a, b):
    x, y = np.complex128(a), np.complex128(b)
    r = {"add": x + y, "sub": x - y, "mul": x * y, "div": x / y, "pow": x ** y}[op]
    if op == "pow":                  # the arrays' rule for 0 ** b (NumPy 2's), one for both
        r = pow_numpy2(np.array([x]), np.array([y]), np.array([r]))[0]
    return complex(r)


VALUES = [1 + 2j, 3 - 4j, -0.5 + 0.25j, 0j, 2 + 0j, complex(-0.0, 1.5), 0.1 + 0.3j, 1e300 + 1e300j, 1e-310 + 1j,
          complex(INF, 0), complex(NAN, 1), complex(0, -INF)]
NUMBERS = [2, 0.5, -3, 0]


def scalar_cases():
    cases = []
    for op in ["add", "sub", "mul", "div", "pow"]:
        for a in VALUES:
            for b in VALUES:
                cases.append({"op": op, "a": parts(a), "b": parts(b), "r": parts(apply(op, a, b))})
            for n in NUMBERS:                # a Lua number on either side
                cases.append({"op": op, "a": parts(a), "b": n, "r": parts(apply(op, a, n))})
                cases.append({"op": op, "a": n, "b": parts(a), "r": parts(apply(op, n, a))})
    return cases


TEXTS = VALUES + [1 - 2j, 2j, -2j, complex(-0.0, -0.0), 1e20 + 1e-5j, 123456.789 - 1e15j, 1e16 + 0.0001j,
                  complex(NAN, NAN), complex(-INF, INF), 5e-324 - 1.7976931348623157e308j, 1 / 3 + 2 / 3j]


def text_cases():
    return [{"z": parts(z), "s": text(z)} for z in TEXTS]


# ---- printed arrays ------------------------------------------------------------------------------

def printed(a):
    tail = ", dtype=%s, device=cpu)" % a.dtype.name
    if a.ndim == 0:
        return PREFIX + np.array2string(a, separator=", ") + tail
    if a.size == 0:
        shape = "" if a.ndim == 1 else ", shape=(%s)" % ",".join(str(n) for n in a.shape)
        return PREFIX + "[]" + shape + tail
    # suffix ",": what follows the elements (NumPy's repr when the dtype is written)
    return PREFIX + np.array2string(a, max_line_width=75, separator=", ", prefix=PREFIX, suffix=",") + tail


def case(name, values, dtype, shape=None):
    z = np.array(values, dtype=np.complex128)
    if shape is not None:
        z = z.reshape(shape)
    a = z.astype(dtype)
    flat = a.astype(np.complex128).reshape(-1)
    return {"name": name, "dtype": a.dtype.name, "shape": list(a.shape),
            "re": [float(v) for v in flat.real], "im": [float(v) for v in flat.imag], "repr": printed(a)}


PRINT_CASES = [
    case("points aligned in each column", [1 + 2j, 1.5 - 2.25j], np.complex128),
    case("negative parts", [1 + 2j, -0.5 - 1j], np.complex64),
    case("nan and inf in both parts", [complex(NAN, INF), 1 + 1j, complex(-INF, NAN)], np.complex128),
    case("scientific real parts beside fixed imaginary ones", [1e-5 + 1j, 1e5 + 2j], np.complex128),
    case("scientific imaginary parts", [1 + 1e-5j, 2 + 1e5j], np.complex128),
    case("large imaginary parts", [1 + 1e8j, -2 + 3j], np.complex64),
    case("0-d", 1 + 2j, np.complex128, ()),
    case("0-d, complex64, fractions", 0.1 - 0.2j, np.complex64, ()),
    case("0-d nan", complex(NAN, -INF), np.complex128, ()),
    case("zeros 2-D", [0j] * 6, np.complex128, (2, 3)),
    case("signed zeros", [complex(-0.0, -0.0), complex(0.0, -0.0), complex(-0.0, 0.0)], np.complex128),
    case("complex64 shortest digits", [0.1 + 0.2j, 1 / 3 + 2 / 3j, 100.5 - 0.125j], np.complex64),
    case("three exponent digits", [1e-300 + 1j, 1 + 2j], np.complex128),
    case("integral real parts, fractional imaginary ones", [1 + 0.5j, 2 + 0.25j, -3 - 0.125j], np.complex128),
    case("3-D", [complex(i, -i / 2) for i in range(8)], np.complex128, (2, 2, 2)),
    case("long rows wrap", [complex(i * 1.25, -i * 0.5) for i in range(20)], np.complex128),
    case("long complex64 rows wrap in 2-D", [complex(i / 8, i * 100) for i in range(24)], np.complex64, (2, 12)),
    case("summarised (over 1000 elements)", [complex(2 * i, 2 * i + 1) for i in range(1200)], np.complex128),
    case("summarised 2-D", [complex(i, 1) for i in range(40 * 30)], np.complex64, (40, 30)),
    case("empty", [], np.complex64, (0,)),
    case("empty 2-D", [], np.complex128, (2, 0)),
]

if __name__ == "__main__":
    made_with = "NumPy " + np.__version__
    cases = scalar_cases()
    write_cases("complex", "scalar", "gen_complex_fixtures.py", made_with,
                "the complex scalar: {op, a, b, r} with a op b = r (a part pair {re, im} or a Lua number), "
                "and {z, s}: tostring(z) = s", cases + text_cases())
    write_cases("complex", "print", "gen_complex_fixtures.py", made_with,
                "tostring of complex arrays: the parts, the shape, the dtype and NumPy's printed form", PRINT_CASES)
    print("wrote spec/fixtures/complex/scalar.lua (%d cases), print.lua (%d cases)"
          % (len(cases) + len(TEXTS), len(PRINT_CASES)))

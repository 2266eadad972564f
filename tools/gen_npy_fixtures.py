#!/usr/bin/python3
"""Writes spec/fixtures/npy/*: files made by NumPy (np.save, np.savez, np.savez_compressed,
np.savetxt) that spec/io_spec.lua loads, plus expected.lua describing each one.

Run once with Debian's python3-numpy:  /usr/bin/python3 tools/gen_npy_fixtures.py
The specs never need Python; the outputs are committed.

bfloat16: NumPy has no bfloat16. ml_dtypes.bfloat16 arrays go through np.save with the
descr '<V2' (a 2-byte void, the dtype's .str), and that is what gpulua writes and reads.
This script writes such a file by hand (NumPy's own header writer, raw bf16 bits).
safetensors: there is no Debian package; the fixture is written here from the format's
definition (8-byte little-endian length, compact JSON, space padding to 8 bytes).
"""
import io, json, os, struct, sys
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "fixtures", "npy")
os.makedirs(OUT, exist_ok=True)
expected = []   # (file, dtype name, shape, flat values in C order)


def lua_value(v):
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    f = float(v)
    if f != f:
        return "0/0"
    if f in (float("inf"), float("-inf")):
        return "math.huge" if f > 0 else "-math.huge"
    return repr(f)


def note(name, dtname, arr):
    """A complex array's values are its (re, im) pairs, flat: what view_as_real gives."""
    a = np.asarray(arr)
    flat = a.reshape(-1)
    if a.dtype.kind == "c":
        flat = np.stack([flat.real, flat.imag], axis=-1).reshape(-1)
    expected.append((name, dtname, list(a.shape), [lua_value(v) for v in flat]))


def save(name, arr, dtname=None):
    np.save(os.path.join(OUT, name), arr)
    note(name, dtname or arr.dtype.name, arr)


base = np.arange(6).reshape(2, 3)
save("bool.npy", base % 3 == 0)
save("uint8.npy", (base * 40 + 3).astype(np.uint8))
save("int32.npy", (base * 7 - 20).astype(np.int32))
save("int64.npy", (base * 3000000000 - 7).astype(np.int64))
save("float16.npy", ((base - 2.5) * 0.5).astype(np.float16))
save("float32.npy", ((base - 2.5) / 4).astype(np.float32))
save("float64.npy", ((base - 2.5) / 3).astype(np.float64))
save("float64_special.npy", np.array([np.nan, np.inf, -np.inf, -0.0, 1e-310, 1.5]))
save("scalar.npy", np.array(2.25))                                  # 0-d
save("empty.npy", np.zeros((0, 3), np.float32))                     # empty
save("int32_3d.npy", (np.arange(24).reshape(2, 3, 4) - 5).astype(np.int32))
save("float32_1d.npy", np.arange(5, dtype=np.float32))

# the other integer and the complex dtypes (uint64 past 2^63 reads as floats in Lua)
save("int8.npy", (base * 40 - 100).astype(np.int8))
save("int16.npy", (base * 9000 - 20000).astype(np.int16))
save("uint16.npy", (base * 13000 + 7).astype(np.uint16))
save("uint32.npy", (base * 800000000 + 5).astype(np.uint32))
save("uint64.npy", np.array([[0, 1, 2**63 - 1], [2**63, 2**64 - 2048, 2**64 - 1]], np.uint64))
save("complex64.npy", ((base - 2.5) / 4 + 1j * (base * 0.5 - 1)).astype(np.complex64))
cplx = np.array([[1.5 - 2j, complex(np.nan, 1), complex(np.inf, -0.0)], [complex(-0.0, 0), 1e-310j, 3 + 4j]])
save("complex128.npy", cplx)

# Fortran order: the same logical array as its C-ordered twin
f = np.asfortranarray((np.arange(12).reshape(3, 4) * 1.5).astype(np.float32))
save("float32_fortran.npy", f)
g = np.asfortranarray(np.arange(24).reshape(2, 3, 4).astype(np.int64))
save("int64_fortran_3d.npy", g)

# big-endian data
save("float32_be.npy", ((base - 2.5) / 4).astype(">f4"), "float32")
save("int64_be.npy", (base * 3000000000 - 7).astype(">i8"), "int64")
save("float16_be.npy", ((base - 2.5) * 0.5).astype(">f2"), "float16")
save("int16_be.npy", (base * 9000 - 20000).astype(">i2"), "int16")
save("uint32_be.npy", (base * 800000000 + 5).astype(">u4"), "uint32")
save("complex128_be.npy", cplx.astype(">c16"), "complex128")
save("complex64_be.npy", ((base - 2.5) / 4 + 1j * (base * 0.5 - 1)).astype(">c8"), "complex64")

# bfloat16 as '<V2' (values chosen exact in bfloat16)
bf_vals = np.array([[-2.0, -0.5, 0.0], [0.375, 1.0, 96.0]], np.float32)
bits = (bf_vals.view(np.uint32) >> 16).astype("<u2")
with open(os.path.join(OUT, "bfloat16.npy"), "wb") as fh:
    np.lib.format._write_array_header(fh, {"descr": "<V2", "fortran_order": False, "shape": (2, 3)})
    fh.write(bits.tobytes())
note("bfloat16.npy", "bfloat16", bf_vals)

# npz: stored and deflated members
a = (base * 1.25).astype(np.float32)
b = np.arange(10, dtype=np.int64)
c = np.array([True, False, True])
d = np.array([1 - 1j, 2.5 + 0.5j], np.complex64)
e = np.array([-7, 120], np.int8)
np.savez(os.path.join(OUT, "stored.npz"), a=a, b=b, c=c, d=d, e=e)
np.savez_compressed(os.path.join(OUT, "deflated.npz"), a=a, b=b, c=c, d=d, e=e)
for n, arr in (("a", a), ("b", b), ("c", c), ("d", d), ("e", e)):
    note("npz:" + n, arr.dtype.name, arr)

# text
t = np.array([[1.5, -2.0, 3.25], [4.0, 5.5, -6.125]])
np.savetxt(os.path.join(OUT, "savetxt_default.txt"), t)
np.savetxt(os.path.join(OUT, "savetxt_csv.txt"), t.astype(np.int64), fmt="%d", delimiter=",")
note("savetxt:t", "float64", t)
z = np.array([[1.5 - 2j, 0.25j], [complex(np.nan, -np.inf), 3]])
np.savetxt(os.path.join(OUT, "savetxt_complex.txt"), z)
note("savetxt:z", "complex128", z)
u64 = np.array([0, 2**63, 2**64 - 1], np.uint64)
np.savetxt(os.path.join(OUT, "savetxt_uint64.txt"), u64, fmt="%d")
note("savetxt:u64", "uint64", u64)
with open(os.path.join(OUT, "table.csv"), "w") as fh:
    fh.write("# x, y, z\nname row\n1, 2.5, -3\n\n4,5e1,6 # trailing comment\r\n")
note("table.csv", "float64", np.loadtxt(os.path.join(OUT, "table.csv"), delimiter=",", skiprows=2))

# safetensors, written from the format's definition
tensors = {"w": np.arange(6, dtype=np.float32).reshape(2, 3) / 2, "b": np.array([1, -2], np.int64),
           "h": np.array([0.5, -1.5], np.float16), "i": np.array([-128, 5], np.int8),
           "u": np.array([65535, 3], np.uint16), "z": np.array([1.5 - 2j, 0.25j], np.complex64)}
codes = {"float32": "F32", "int64": "I64", "float16": "F16", "int8": "I8", "uint16": "U16", "complex64": "C64"}
hdr, off, blobs = {"__metadata__": {"format": "pt", "note": "caf\u00e9"}}, 0, []
for n in sorted(tensors):
    arr = tensors[n]
    raw = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
    hdr[n] = {"dtype": codes[arr.dtype.name], "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
    off += len(raw)
    blobs.append(raw)
    note("st:" + n, arr.dtype.name, arr)
js = json.dumps(hdr, separators=(",", ":")).encode()
js += b" " * (-len(js) % 8)
with open(os.path.join(OUT, "model.safetensors"), "wb") as fh:
    fh.write(struct.pack("<Q", len(js)) + js + b"".join(blobs))

with open(os.path.join(OUT, "expected.lua"), "w") as fh:
    fh.write("-- generated by tools/gen_npy_fixtures.py with NumPy %s; do not edit\nreturn {\n" % np.__version__)
    for name, dt, shape, vals in expected:
        fh.write('  [%s] = { dtype = "%s", shape = {%s}, values = {%s} },\n'
                 % (json.dumps(name), dt, ", ".join(map(str, shape)), ", ".join(vals)))
    fh.write("}\n")
print("wrote", len(os.listdir(OUT)), "files to", os.path.normpath(OUT))

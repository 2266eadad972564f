"""bench/fft.py — twin of bench/fft.lua (same case names): numpy.fft (cupy.fft on cuda),
scipy.fft single-threaded and with workers=-1 (all cores), torch.fft, pyFFTW's NumPy
interface (FFTW_MEASURE plans, cached, all cores) where installed, and on the cpu FFTW
itself (bench/fftw_direct.c, the limit). Wall time per call, the result allocated each call
as gpulua's is, best and median of repeats of >= 0.2 s (bench.py's once).
NumPy before 2.0 computes every transform in double precision (complex128 out); from 2.0
complex64 in gives complex64 out, as scipy.fft, torch.fft and gpulua do."""
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from bench import once, try_import, array_module, native, DEVICE

NPROC = os.cpu_count() or 1


def inputs(xp, c64, f32):
    """The five cases' inputs, uniform in [0, 1) (real and imaginary parts)."""
    rs = xp.random.RandomState(0) if hasattr(xp.random, "RandomState") else xp.random

    def cplx(*shape):
        return (rs.rand(*shape) + 1j * rs.rand(*shape)).astype(c64)
    return {"c20": cplx(1 << 20), "r20": rs.rand(1 << 20).astype(f32), "b": cplx(1024, 1024),
            "m": cplx(2048, 2048), "p": cplx(1000003)}


def run(impl, lib, d, sync=lambda: None, **kw):
    """The five cases for one library: lib has fft, rfft, fft2 (numpy.fft's signatures);
    kw (workers=-1, threads=...) goes to every call."""
    cases = [("fft: 2^20 complex64", lambda: lib.fft(d["c20"], **kw)),
             ("rfft: 2^20 float32", lambda: lib.rfft(d["r20"], **kw)),
             ("fft: 1024x1024 complex64, last axis", lambda: lib.fft(d["b"], **kw)),
             ("fft2: 2048x2048 complex64", lambda: lib.fft2(d["m"], **kw)),
             ("fft: 1000003 (prime) complex64", lambda: lib.fft(d["p"], **kw))]
    for name, fn in cases:
        once(name, impl, fn, "", sync)


xp, impl, _ = array_module()
if xp is not None:
    d = inputs(xp, xp.complex64, xp.float32)
    run(impl, xp.fft, d, (lambda: xp.cuda.Device().synchronize()) if impl == "cupy" else (lambda: None))

if DEVICE == "cpu":
    np = try_import("numpy")
    scipy_fft = try_import("scipy.fft")
    if np is not None and scipy_fft is not None:
        d = inputs(np, np.complex64, np.float32)
        run("scipy", scipy_fft, d)
        run("scipy workers=-1", scipy_fft, d, workers=-1)
    pyfftw = try_import("pyfftw")
    if np is not None and pyfftw is not None:
        import pyfftw.interfaces.numpy_fft as pf
        pyfftw.interfaces.cache.enable()
        pyfftw.interfaces.cache.set_keepalive_time(3600)
        d = inputs(np, np.complex64, np.float32)
        run("pyfftw", pf, d, threads=NPROC, planner_effort="FFTW_MEASURE")

torch = try_import("torch")
if torch is not None and (DEVICE == "cpu" or torch.cuda.is_available()):
    dev = "cuda" if DEVICE.startswith("cuda") else "cpu"
    g = torch.Generator(device=dev).manual_seed(0)

    def cplx(*shape):
        return torch.complex(torch.rand(*shape, generator=g, device=dev), torch.rand(*shape, generator=g, device=dev))
    d = {"c20": cplx(1 << 20), "r20": torch.rand(1 << 20, generator=g, device=dev), "b": cplx(1024, 1024),
         "m": cplx(2048, 2048), "p": cplx(1000003)}
    run("torch", torch.fft, d, torch.cuda.synchronize if dev == "cuda" else (lambda: None))

# FFTW's own plans on the same transforms: the limit (cpu only)
if DEVICE == "cpu":
    native("fftw_direct.c", libs=["-lfftw3f_threads", "-lfftw3f", "-lpthread", "-lm"])

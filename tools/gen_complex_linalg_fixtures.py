#!/usr/bin/python3
"""Writes spec/fixtures/complex_linalg/*.npy: inputs and NumPy's results for
spec/complex_linalg_spec.lua (the specs read them with gpu.load and need no Python).

    /usr/bin/python3 tools/gen_complex_linalg_fixtures.py

Complex inputs are complex128 (the spec casts them to complex64 as well). Only results that
do not depend on LAPACK's phase choices are stored as they are (solutions, inverses,
determinants, Cholesky factors, eigenvalues, singular values, least-squares solutions,
pseudo-inverses, norms); of the factors with a free phase per column (Q, R, U, Vh, the
eigenvectors) the moduli, and the spec checks their defining properties. eig's inputs are
real and complex, with complex conjugate pairs, a defective and a repeated eigenvalue; its
eigenvalues are stored in NumPy's order (the spec sorts both sides the same way).
"""
import os
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "fixtures", "complex_linalg")
rng = np.random.default_rng(20261207)


def save(name, x):
    np.save(os.path.join(OUT, name + ".npy"), np.array(x, order="C"))   # 0-d stays 0-d


def cn(*shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def well(*shape):
    """Complex matrices with the last two axes square and well conditioned."""
    n = shape[-1]
    return cn(*shape) + n * np.eye(n)


def hpd(*shape):
    """Hermitian positive definite."""
    x = cn(*shape)
    return x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1])


def mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


# NumPy's results stored for each square input, by suffix
SQUARE = {
    "inv": np.linalg.inv,
    "det": np.linalg.det,
    "sign": lambda a: np.linalg.slogdet(a)[0],
    "logdet": lambda a: np.linalg.slogdet(a)[1],
    "svdvals": lambda a: np.linalg.svd(a, compute_uv=False),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    # square, 2-D and batched (2, 3, n, n)
    for tag, a in (("a4", well(4, 4)), ("ab", well(2, 3, 3, 3))):
        save(tag, a)
        for suffix, f in SQUARE.items():
            save(tag + "_" + suffix, f(a))
    a4 = np.load(os.path.join(OUT, "a4.npy"))
    b4 = cn(4, 2)
    save("b4", b4)
    save("a4_solve_b4", np.linalg.solve(a4, b4))
    v4 = cn(4)
    save("v4", v4)
    save("a4_solve_v4", np.linalg.solve(a4, v4))
    r4 = rng.standard_normal((4, 3))           # a real right-hand side: promoted to complex
    save("r4", r4)
    save("a4_solve_r4", np.linalg.solve(a4, r4))
    bb = cn(3, 3, 2)
    save("bb", bb)
    save("ab_solve_bb", np.linalg.solve(np.load(os.path.join(OUT, "ab.npy")), bb[None]))
    # a determinant with a known phase: diag(i, 2, -1) -> -2i
    save("dph", np.diag([1j, 2, -1]))
    # Hermitian positive definite
    for tag, s in (("h4", hpd(4, 4)), ("hb", hpd(3, 5, 5))):
        save(tag, s)
        save(tag + "_chol", np.linalg.cholesky(s))
        w, v = np.linalg.eigh(s)
        save(tag + "_eigvalsh", w)
        save(tag + "_eigh_absv", np.abs(v))
        g = np.triu(s) + np.tril(cn(*s.shape), -1)       # only the upper triangle is s's
        save(tag + "_g", g)
        save(tag + "_eigvalsh_U", np.linalg.eigvalsh(g, UPLO="U"))
    # rectangular, tall and wide
    for tag, a in (("t53", cn(5, 3)), ("w35", cn(3, 5)), ("rb", cn(2, 4, 3)), ("a4", a4)):
        save(tag, a)
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        save(tag + "_svdvals", s)
        save(tag + "_absu", np.abs(u))
        save(tag + "_absvh", np.abs(vh))
        save(tag + "_absr", np.abs(np.linalg.qr(a, mode="r")))
    # least squares: overdetermined (residuals), underdetermined (min norm), rank deficient
    a = np.load(os.path.join(OUT, "t53.npy"))
    y = cn(5, 2)
    save("ls_b", y)
    x, res, rank, s = np.linalg.lstsq(a, y, rcond=None)
    save("ls_x", x)
    save("ls_res", res)
    save("ls_s", s)
    assert rank == 3
    w = np.load(os.path.join(OUT, "w35.npy"))
    yw = cn(3)
    save("lsw_b", yw)
    save("lsw_x", np.linalg.lstsq(w, yw, rcond=None)[0])
    d = np.array([[1.0, 2.0j], [2.0, 4.0j], [3.0, 6.0j]])
    save("lsd_a", d)
    xd, resd, rankd, sd = np.linalg.lstsq(d, np.array([1.0, 2.0j, 3.5]), rcond=None)
    save("lsd_x", xd)
    assert rankd == 1 and resd.size == 0
    # the functions made of the factorizations
    save("t53_pinv", np.linalg.pinv(a))
    rb = np.load(os.path.join(OUT, "rb.npy"))
    save("rb_pinv", np.linalg.pinv(rb))
    for p in (3, -2, 0):
        save("a4_pow%s" % ("m2" if p < 0 else p), np.linalg.matrix_power(a4, p))
    save("ab_rank", np.linalg.matrix_rank(np.load(os.path.join(OUT, "ab.npy"))))
    save("lsd_rank", np.array(np.linalg.matrix_rank(d)))
    for name, o in (("2", 2), ("m2", -2), ("nuc", "nuc"), ("fro", "fro"), ("1", 1), ("inf", np.inf),
                    ("m1", -1), ("minf", -np.inf)):
        save("t53_norm_" + name, np.linalg.norm(a, o))
        save("rb_norm_" + name, np.linalg.norm(rb, o, axis=(1, 2)))
    vec = cn(7)
    save("vec", vec)
    for name, o in (("none", None), ("1", 1), ("inf", np.inf), ("minf", -np.inf), ("0", 0), ("3", 3)):
        save("vec_norm_" + name, np.linalg.norm(vec, o))
    save("rb_norm_ax2", np.linalg.norm(rb, axis=2))
    for name, o in (("none", None), ("m2", -2), ("1", 1), ("fro", "fro"), ("inf", np.inf)):
        save("a4_cond_" + name, np.linalg.cond(a4, o))
    # hermitian = true paths: svd through eigh, pinv
    h = np.load(os.path.join(OUT, "h4.npy")) - 6 * np.eye(4)              # indefinite
    save("hi", h)
    save("hi_svdvals", np.linalg.svd(h, compute_uv=False, hermitian=True))
    save("hi_pinv", np.linalg.pinv(h, hermitian=True))
    # eig / eigvals: real with real eigenvalues, real with complex pairs, defective,
    # repeated, batched real, complex, batched complex
    sym = rng.standard_normal((4, 4))
    eig_inputs = {
        "er_real": sym + sym.T,
        "er_pair": np.array([[0.0, -2.0, 1.0], [2.0, 0.0, 0.5], [0.0, 0.0, 3.0]]),
        "er_rot": np.array([[np.cos(0.3), -np.sin(0.3)], [np.sin(0.3), np.cos(0.3)]]),
        "er_defect": np.array([[1.0, 1.0], [0.0, 1.0]]),
        "er_repeat": 2 * np.eye(3),
        "er_batch": rng.standard_normal((2, 3, 4, 4)),
        "ec": cn(4, 4),
        "ec_batch": cn(3, 5, 5),
        "ec_defect": np.array([[1j, 1.0, 0.0], [0.0, 1j, 1.0], [0.0, 0.0, 1j]]),
    }
    for tag, x in eig_inputs.items():
        save(tag, x)
        w, v = np.linalg.eig(x)
        save(tag + "_w", w.astype(np.complex128))
        save(tag + "_absv", np.abs(v))
        assert np.allclose(np.linalg.eigvals(x), w)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Writes spec/fixtures/linalg/*.npy: inputs and NumPy's results for
spec/linalg_lapack_spec.lua (the specs read them with gpu.load and need no Python).

    /usr/bin/python3 tools/gen_linalg_fixtures.py

Inputs are float64 (the spec casts them to float32 as well). Only results that do not
depend on LAPACK's sign choices are stored (solutions, inverses, determinants, Cholesky
factors, eigenvalues, singular values, least-squares solutions); the decompositions with
free signs (QR, SVD vectors, eigenvectors) are checked by their properties instead.
"""
import os
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "spec", "fixtures", "linalg")
rng = np.random.default_rng(20261202)


def save(name, x):
    np.save(os.path.join(OUT, name + ".npy"), np.array(x, order="C"))   # 0-d stays 0-d


def well(*shape):
    """Matrices with the last two axes square and well conditioned."""
    n = shape[-1]
    return rng.standard_normal(shape) + n * np.eye(n)


def spd(*shape):
    x = rng.standard_normal(shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def main():
    os.makedirs(OUT, exist_ok=True)
    # square, 2-D and batched (2, 3, n, n)
    for tag, a in (("a4", well(4, 4)), ("ab", well(2, 3, 3, 3))):
        save(tag, a)
        save(tag + "_inv", np.linalg.inv(a))
        save(tag + "_det", np.linalg.det(a))
        s, l = np.linalg.slogdet(a)
        save(tag + "_sign", s)
        save(tag + "_logdet", l)
        save(tag + "_svdvals", np.linalg.svd(a, compute_uv=False))
    b4 = rng.standard_normal((4, 2))
    save("b4", b4)
    save("a4_solve_b4", np.linalg.solve(np.load(os.path.join(OUT, "a4.npy")), b4))
    v4 = rng.standard_normal(4)
    save("v4", v4)
    save("a4_solve_v4", np.linalg.solve(np.load(os.path.join(OUT, "a4.npy")), v4))
    # batched a (2, 3, 3, 3) with b broadcast over the first batch axis (3, 3, 2)
    bb = rng.standard_normal((3, 3, 2))
    save("bb", bb)
    # (NumPy 1.x would read a b of a.ndim - 1 dimensions as vectors; NumPy 2 and gpulua
    # as matrices unless b is 1-D: the added axis makes both agree)
    save("ab_solve_bb", np.linalg.solve(np.load(os.path.join(OUT, "ab.npy")), bb[None]))
    # negative determinant, singular matrix
    neg = np.array([[0.0, 2.0], [3.0, 1.0]])
    save("neg", neg)
    # symmetric positive definite
    for tag, s in (("s4", spd(4, 4)), ("sb", spd(3, 5, 5))):
        save(tag, s)
        save(tag + "_chol", np.linalg.cholesky(s))
        save(tag + "_eigvalsh", np.linalg.eigvalsh(s))
        g = np.triu(s) + np.tril(rng.standard_normal(s.shape), -1)   # only the upper triangle is s's
        save(tag + "_g", g)
        save(tag + "_eigvalsh_U", np.linalg.eigvalsh(g, UPLO="U"))
    # rectangular, tall and wide
    for tag, a in (("t53", rng.standard_normal((5, 3))), ("w35", rng.standard_normal((3, 5))),
                   ("rb", rng.standard_normal((2, 4, 3)))):
        save(tag, a)
        save(tag + "_svdvals", np.linalg.svd(a, compute_uv=False))
    # least squares: overdetermined (residuals), underdetermined (min norm), rank deficient
    a = np.load(os.path.join(OUT, "t53.npy"))
    y = rng.standard_normal((5, 2))
    save("ls_b", y)
    x, res, rank, s = np.linalg.lstsq(a, y, rcond=None)
    save("ls_x", x)
    save("ls_res", res)
    save("ls_s", s)
    w = np.load(os.path.join(OUT, "w35.npy"))
    yw = rng.standard_normal(3)
    save("lsw_b", yw)
    save("lsw_x", np.linalg.lstsq(w, yw, rcond=None)[0])
    d = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    save("lsd_a", d)
    xd, resd, rankd, sd = np.linalg.lstsq(d, np.array([1.0, 2.0, 3.5]), rcond=None)
    save("lsd_x", xd)
    assert rankd == 1 and resd.size == 0
    # the functions made of the factorizations
    save("t53_pinv", np.linalg.pinv(a))
    rb = np.load(os.path.join(OUT, "rb.npy"))
    save("rb_pinv", np.linalg.pinv(rb))
    a4 = np.load(os.path.join(OUT, "a4.npy"))
    for p in (3, -2, 0):
        save("a4_pow%s" % ("m2" if p < 0 else p), np.linalg.matrix_power(a4, p))
    save("ab_rank", np.linalg.matrix_rank(np.load(os.path.join(OUT, "ab.npy"))))
    save("lsd_rank", np.array(np.linalg.matrix_rank(d)))
    for name, o in (("2", 2), ("m2", -2), ("nuc", "nuc"), ("fro", "fro"), ("1", 1), ("inf", np.inf)):
        save("t53_norm_" + name, np.linalg.norm(a, o))
        save("rb_norm_" + name, np.linalg.norm(rb, o, axis=(1, 2)))
        if name in ("2", "nuc"):
            save("rb_norm_%s_ax20" % name, np.linalg.norm(rb, o, axis=(2, 0)))
    for name, o in (("none", None), ("m2", -2), ("1", 1), ("fro", "fro"), ("inf", np.inf)):
        save("a4_cond_" + name, np.linalg.cond(a4, o))
    save("ab_cond", np.linalg.cond(np.load(os.path.join(OUT, "ab.npy"))))
    u = rng.standard_normal((4, 3))
    v = rng.standard_normal((2, 1, 3))
    save("cr_u", u)
    save("cr_v", v)
    save("cr_uv", np.cross(u, v))
    u0 = rng.standard_normal((3, 2))
    save("cr_u0", u0)
    save("cr_u0v0", np.cross(u0, u0[::-1] * 2 + 1, axis=0))
    ms = [rng.standard_normal(s) for s in ((5,), (5, 2), (2, 6), (6, 3))]
    for i, m in enumerate(ms):
        save("md_%d" % i, m)
    save("md", np.linalg.multi_dot(ms))


if __name__ == "__main__":
    main()

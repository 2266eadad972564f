/*
** npy.c — the .npy format (see npy.h). The header is a Python dict literal; we parse the
** small subset np.save writes (quoted keys, quoted strings, True/False, tuples of
** integers) and refuse everything else with a message naming the fault.
*/
#include <stdio.h>
#include <string.h>
#include "npy.h"
#include "fileio.h"

static const char magic[6] = { '\x93', 'N', 'U', 'M', 'P', 'Y' };

/* ---- the header dict -------------------------------------------------------------------- */

typedef gl_cursor lex;

/* A quoted string without escapes (NumPy's keys and descrs have none). */
static gl_status read_str(lex *x, char *buf, size_t cap, const char *what) {
  gl_cursor_ws(x);
  if (x->p >= x->end || (*x->p != '\'' && *x->p != '"'))
    return gl_fail(GL_EIO, "bad header (%s: expected a quoted string)", what);
  char q = *x->p++;
  size_t n = 0;
  while (x->p < x->end && *x->p != q) {
    if (*x->p == '\\' || n + 1 >= cap) return gl_fail(GL_EIO, "bad header (%s: unsupported string)", what);
    buf[n++] = *x->p++;
  }
  if (x->p >= x->end) return gl_fail(GL_EIO, "bad header (%s: unterminated string)", what);
  x->p++;
  buf[n] = 0;
  return GL_OK;
}

static gl_status read_int(lex *x, int64_t *v) {
  gl_cursor_ws(x);
  if (x->p >= x->end || *x->p < '0' || *x->p > '9')
    return gl_fail(GL_EIO, "bad header (shape: expected a non-negative integer)");
  int64_t n = 0;
  while (x->p < x->end && *x->p >= '0' && *x->p <= '9') {
    int d = *x->p++ - '0';
    if (n > (GL_MAXSIZE - d) / 10) return gl_fail(GL_EIO, "bad header (shape: dimension too large)");
    n = n * 10 + d;     /* up to GL_MAXSIZE itself: an extent of an empty array gpulua saves */
  }
  if (x->p < x->end && (*x->p == 'L' || *x->p == 'l')) x->p++;     /* Python 2 longs */
  *v = n;
  return GL_OK;
}

static gl_status read_shape(lex *x, gl_npy_info *out) {
  if (!gl_cursor_eat(x, '(')) return gl_fail(GL_EIO, "bad header (shape: expected a tuple)");
  out->ndim = 0;
  if (gl_cursor_eat(x, ')')) return GL_OK;
  for (;;) {
    if (out->ndim == GL_MAXDIMS)
      return gl_fail(GL_EIO, "bad header (shape: more than %d dimensions)", GL_MAXDIMS);
    GL_TRY(read_int(x, &out->shape[out->ndim]));
    out->ndim++;
    bool comma = gl_cursor_eat(x, ',');
    if (gl_cursor_eat(x, ')')) {
      if (out->ndim == 1 && !comma) return gl_fail(GL_EIO, "bad header (shape: expected a tuple)");
      return GL_OK;
    }
    if (!comma) return gl_fail(GL_EIO, "bad header (shape: expected ',' or ')')");
  }
}

static gl_status read_bool(lex *x, bool *v) {
  gl_cursor_ws(x);
  size_t left = (size_t)(x->end - x->p);
  if (left >= 4 && memcmp(x->p, "True", 4) == 0) { x->p += 4; *v = true; return GL_OK; }
  if (left >= 5 && memcmp(x->p, "False", 5) == 0) { x->p += 5; *v = false; return GL_OK; }
  return gl_fail(GL_EIO, "bad header (fortran_order: expected True or False)");
}

/* "<f4" -> dtype and byte order. A descr is a byte order and a code: each dtype's code is
** that of its row's descr, or NumPy's one-letter type code ("f"). */
static gl_status parse_descr(const char *d, gl_npy_info *out) {
  char order = '|';
  const char *t = d;
  if (*t == '<' || *t == '>' || *t == '|' || *t == '=') order = *t++;
  int found = -1;
  for (int dt = 0; dt < GL_NDTYPE && found < 0; dt++)
    if (strcmp(t, gl_dtypes[dt].npy + 1) == 0 || (gl_dtypes[dt].npc && strcmp(t, gl_dtypes[dt].npc) == 0)) found = dt;
  if (found >= 0) {
    out->dtype = (gl_dtype)found;
    out->swap = order == '>' && gl_dtype_part_size(out->dtype) > 1;
    return GL_OK;
  }
  /* "bool, uint8, ..., complex128, and '<V2' as bfloat16": NumPy's types, then those stored
  ** under a descr of another meaning (NumPy's void, 'V') */
  char names[512] = "";
  size_t n = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int dt = 0; dt < GL_NDTYPE; dt++) {
      const char *descr = gl_dtypes[dt].npy;
      if ((descr[1] != 'V') != (pass == 0)) continue;
      const char *sep = n == 0 ? "" : ", ";
      int w = pass == 0 ? snprintf(names + n, sizeof names - n, "%s%s", sep, gl_dtypes[dt].name)
                        : snprintf(names + n, sizeof names - n, "%sand '%s' as %s", sep, descr, gl_dtypes[dt].name);
      if (w > 0) n += (size_t)w < sizeof names - n ? (size_t)w : sizeof names - n - 1;
    }
  return gl_fail(GL_EIO, "unsupported dtype '%s' (gpulua reads %s)", d, names);
}

gl_status gl_npy_parse_header(const uint8_t *buf, size_t len, gl_npy_info *out) {
  memset(out, 0, sizeof *out);
  if (len < 8 || memcmp(buf, magic, 6) != 0) {
    if (len < 8 && len > 0 && memcmp(buf, magic, len < 6 ? len : 6) == 0)
      return gl_fail(GL_EIO, "truncated header (%zu bytes)", len);
    return gl_fail(GL_EIO, "not a .npy file (bad magic)");
  }
  unsigned major = buf[6];
  size_t prefix, hlen;
  if (major == 1) {
    prefix = 10;
    if (len < prefix) return gl_fail(GL_EIO, "truncated header (%zu bytes)", len);
    hlen = gl_rd16(buf + 8);
  } else if (major == 2 || major == 3) {
    prefix = 12;
    if (len < prefix) return gl_fail(GL_EIO, "truncated header (%zu bytes)", len);
    hlen = gl_rd32(buf + 8);
  } else {
    return gl_fail(GL_EIO, "unsupported .npy version %u.%u", major, buf[7]);
  }
  if (hlen > GL_NPY_MAX_HEADER)
    return gl_fail(GL_EIO, "oversized header (%zu bytes, at most %d)", hlen, GL_NPY_MAX_HEADER);
  if (hlen > len - prefix)
    return gl_fail(GL_EIO, "truncated header (expected %zu bytes, found %zu)", hlen, len - prefix);

  lex x = { (const char *)buf + prefix, (const char *)buf + prefix + hlen };
  bool have_descr = false, have_fortran = false, have_shape = false;
  char key[32], descr[32];
  if (!gl_cursor_eat(&x, '{')) return gl_fail(GL_EIO, "bad header (expected a dict)");
  while (!gl_cursor_eat(&x, '}')) {
    GL_TRY(read_str(&x, key, sizeof key, "key"));
    if (!gl_cursor_eat(&x, ':')) return gl_fail(GL_EIO, "bad header (expected ':' after '%s')", key);
    bool *seen;
    if (strcmp(key, "descr") == 0) {
      seen = &have_descr;
      gl_cursor_ws(&x);
      if (x.p < x.end && *x.p == '[') return gl_fail(GL_EIO, "unsupported dtype (structured arrays)");
      GL_TRY(read_str(&x, descr, sizeof descr, "descr"));
      GL_TRY(parse_descr(descr, out));
    } else if (strcmp(key, "fortran_order") == 0) {
      seen = &have_fortran;
      GL_TRY(read_bool(&x, &out->fortran));
    } else if (strcmp(key, "shape") == 0) {
      seen = &have_shape;
      GL_TRY(read_shape(&x, out));
    } else {
      return gl_fail(GL_EIO, "bad header (unknown key '%s')", key);
    }
    if (*seen) return gl_fail(GL_EIO, "bad header (key '%s' twice)", key);
    *seen = true;
    if (!gl_cursor_eat(&x, ',')) {
      if (!gl_cursor_eat(&x, '}')) return gl_fail(GL_EIO, "bad header (expected ',' or '}')");
      break;
    }
  }
  gl_cursor_ws(&x);
  if (x.p != x.end) return gl_fail(GL_EIO, "bad header (text after the dict)");
  if (!have_descr || !have_fortran || !have_shape)
    return gl_fail(GL_EIO, "bad header (missing '%s')", !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");
  if (gl_shape_check(out->ndim, out->shape, &out->size) != GL_OK)
    return gl_fail(GL_EIO, "bad header (%s)", gl_errmsg());
  unsigned isz = gl_dtypes[out->dtype].size;
  if (out->size > (int64_t)(SIZE_MAX / 2) / (int64_t)isz)
    return gl_fail(GL_EIO, "bad header (shape too large)");
  out->nbytes = (size_t)out->size * isz;
  out->data_offset = prefix + hlen;
  if (out->ndim < 2) out->fortran = false;          /* the same bytes either way */
  return GL_OK;
}

gl_status gl_npy_parse(const uint8_t *buf, size_t len, gl_npy_info *out) {
  GL_TRY(gl_npy_parse_header(buf, len, out));
  size_t have = len - out->data_offset;
  if (have < out->nbytes)
    return gl_fail(GL_EIO, "truncated data (expected %zu bytes, found %zu)", out->nbytes, have);
  if (have > out->nbytes) {
    char s[GL_SHAPE_BUFSZ];
    return gl_fail(GL_EIO, "size mismatch (shape %s of %s needs %zu data bytes, found %zu)",
                   gl_shape_str(out->ndim, out->shape, s), gl_dtypes[out->dtype].name, out->nbytes, have);
  }
  out->data = buf + out->data_offset;
  return GL_OK;
}

/* ---- writing -------------------------------------------------------------------------- */

/* np.save: "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", then room for
** the first axis to grow to 21 digits, then spaces and '\n' up to a multiple of 64. */
gl_status gl_npy_header(char *buf, size_t *len, gl_dtype dt, int ndim, const int64_t *shape) {
  char dict[GL_NPY_HEADER_BUFSZ];
  size_t n = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                              gl_dtypes[dt].npy);
  for (int i = 0; i < ndim; i++)
    n += (size_t)snprintf(dict + n, sizeof dict - n, i ? ", %lld" : "%lld", (long long)shape[i]);
  n += (size_t)snprintf(dict + n, sizeof dict - n, "%s), }", ndim == 1 ? "," : "");
  if (ndim > 0) {
    char d0[24];
    int w = snprintf(d0, sizeof d0, "%lld", (long long)shape[0]);
    for (int i = w; i < 21; i++) dict[n++] = ' ';
  }
  size_t hlen = n + 1;                                   /* + '\n' */
  size_t pad = 64 - (10 + hlen) % 64;
  size_t total = 10 + hlen + pad;
  if (total > GL_NPY_HEADER_BUFSZ || total - 10 > 65535) return gl_fail(GL_EINVAL, "npy header too long");
  memcpy(buf, magic, 6);
  buf[6] = 1;
  buf[7] = 0;
  gl_wr16((uint8_t *)buf + 8, (uint16_t)(hlen + pad));
  memcpy(buf + 10, dict, n);
  memset(buf + 10 + n, ' ', pad);
  buf[total - 1] = '\n';
  *len = total;
  return GL_OK;
}

/*
** lprint.c — tostring(x), after NumPy's repr: one format for all elements (aligned
** columns, the fewest digits that read back exactly, at most 8 decimals, scientific
** notation when magnitudes are far apart), rows wrapped at 75 columns, and arrays over
** 1000 elements summarised with "..." keeping 3 items at each edge of every axis.
** A 0-d array prints as gpu.array(3., dtype=float32, device=cpu), as NumPy's repr does
** (array(3.)): at the REPL it cannot pass for the number 3.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lgpu.h"

#define LINEWIDTH 75
#define THRESHOLD 1000
#define EDGE 3

typedef struct fmt {
  gl_dtype dt;
  bool sci, integral;       /* float modes */
  int frac;                 /* fixed: widest fractional part; sci: mantissa digits */
  int width;                /* widest element */
} fmt;

/* Does the decimal string read back as v in dtype dt? */
static bool reads_back(gl_dtype dt, const char *s, double v) {
  char a[8], b[8];
  gl_scalar_store(dt, a, gl_scalar_float(strtod(s, NULL)));
  gl_scalar_store(dt, b, gl_scalar_float(v));
  return memcmp(a, b, gl_dtypes[dt].size) == 0;
}

/* Digits after the point that v needs to read back exactly in its dtype (at most 8),
** in fixed (sci = false) or scientific notation. */
static int digits_needed(gl_dtype dt, double v, bool sci) {
  char buf[400];
  for (int p = 0; p <= 8; p++) {
    snprintf(buf, sizeof buf, sci ? "%.*e" : "%.*f", p, v);
    if (reads_back(dt, buf, v)) return p;
  }
  return 8;
}

static int format_one(const fmt *f, gl_scalar s, char *out, bool pad) {
  switch (gl_dtypes[f->dt].kind) {
    case GL_KIND_BOOL: return sprintf(out, "%s", s.i ? "true" : "false");
    case GL_KIND_INT: return sprintf(out, "%lld", (long long)s.i);
    case GL_KIND_UINT: return sprintf(out, "%llu", (unsigned long long)s.i);   /* uint64 past 2^63 too */
    default: break;
  }
  double v = s.f;
  if (isnan(v)) return sprintf(out, "nan");
  if (isinf(v)) return sprintf(out, v > 0 ? "inf" : "-inf");
  if (f->sci) {              /* own shortest digits, zero-padded to the common count */
    int own = digits_needed(f->dt, v, true);
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.*e", own, v);
    char *e = strchr(tmp, 'e');
    int n = (int)(e - tmp);
    memcpy(out, tmp, (size_t)n);
    if (own == 0) out[n++] = '.';                                  /* "1.e-05", as NumPy */
    for (int k = own; k < f->frac; k++) out[n++] = '0';
    return n + sprintf(out + n, "%s", e);
  }
  if (f->integral) return sprintf(out, "%.0f.", v);
  int own = digits_needed(f->dt, v, false);
  int n = own == 0 ? sprintf(out, "%.0f.", v) : sprintf(out, "%.*f", own, v);
  if (pad) for (int k = own; k < f->frac; k++) out[n++] = ' ';   /* align the points */
  out[n] = '\0';
  return n;
}

/* ---- which elements are shown ------------------------------------------------------------ */

typedef struct layout {
  const gl_array *a;
  const char *data;          /* host copy of the shown elements, C order */
  int64_t shape[GL_MAXDIMS]; /* ... its extents: a's, or 2 * EDGE on a summarised axis */
  bool summarise;
  fmt f;
} layout;

static bool shown(const layout *lo, int axis, int64_t i) {
  int64_t n = lo->a->shape[axis];
  return !lo->summarise || n <= 2 * EDGE || i < EDGE || i >= n - EDGE;
}

/* Position in the host copy of the shown element at index idx of a. */
static int64_t elem_index(const layout *lo, const int64_t *idx) {
  int64_t off = 0;
  for (int d = 0; d < lo->a->ndim; d++) {
    int64_t i = idx[d], cut = lo->a->shape[d] - lo->shape[d];
    off = off * lo->shape[d] + (i >= EDGE ? i - cut : i);
  }
  return off;
}

/* Copies the shown elements into 'host' (lo->shape's count of them): all of them, or,
** when summarising, the blocks of EDGE first and EDGE last along every long axis (2^k
** blocks for k long axes), gathered on the device into one small array first. A huge
** broadcast view (2^62 elements) prints at the cost of at most (2 EDGE)^ndim elements,
** never materialised. */
static gl_status copy_shown(const layout *lo, void *host) {
  const gl_array *a = lo->a;
  int cut[GL_MAXDIMS], ncut = 0;
  for (int d = 0; d < a->ndim; d++) if (lo->shape[d] < a->shape[d]) cut[ncut++] = d;
  if (ncut == 0) return gl_op_to_host(host, a);
  gl_array tmp = { 0 };
  GL_TRY(gl_array_alloc(&tmp, (gl_dtype)a->dtype, a->ndim, lo->shape, gl_array_device(a)));
  gl_status st = GL_OK;
  for (unsigned block = 0; st == GL_OK && block < 1u << ncut; block++) {
    gl_array src = *a, dst = tmp;        /* bit j of block: the tail of axis cut[j] */
    for (int j = 0; j < ncut; j++) {
      bool tail = block >> j & 1;
      gl_view_slice(&src, cut[j], tail ? a->shape[cut[j]] - EDGE : 0, 1, EDGE);
      gl_view_slice(&dst, cut[j], tail ? EDGE : 0, 1, EDGE);
    }
    st = gl_op_assign(&dst, &src);
  }
  if (st == GL_OK) st = gl_op_to_host(host, &tmp);
  gl_array_release(&tmp);
  return st;
}

static gl_scalar elem(const layout *lo, int64_t k) {
  return gl_scalar_load(lo->f.dt, lo->data + k * (int64_t)gl_dtypes[lo->f.dt].size);
}

/* Visits every shown element (C order) to decide the format. */
static void scan(layout *lo, int axis, int64_t *idx, double *maxabs, double *minabs,
                 bool *integral, int *frac, int *sfrac) {
  const gl_array *a = lo->a;
  int64_t n = a->ndim == 0 ? 1 : a->shape[axis];     /* a 0-d array: its one element */
  for (int64_t i = 0; i < n; i++) {
    if (a->ndim > 0 && !shown(lo, axis, i)) { i = n - EDGE - 1; continue; }
    if (a->ndim > 0) idx[axis] = i;
    if (axis + 1 < a->ndim) { scan(lo, axis + 1, idx, maxabs, minabs, integral, frac, sfrac); continue; }
    gl_scalar s = elem(lo, elem_index(lo, idx));
    if (gl_dtypes[lo->f.dt].kind != GL_KIND_FLOAT || !isfinite(s.f)) continue;
    double v = fabs(s.f);
    if (v > *maxabs) *maxabs = v;
    if (v != 0 && v < *minabs) *minabs = v;
    if (s.f != floor(s.f) || v >= 1e16) *integral = false;
    int fd = digits_needed(lo->f.dt, s.f, false), sd = digits_needed(lo->f.dt, s.f, true);
    if (fd > *frac) *frac = fd;
    if (sd > *sfrac) *sfrac = sd;
  }
}

static void measure(layout *lo, int axis, int64_t *idx) {
  const gl_array *a = lo->a;
  char buf[64];
  int64_t len = a->ndim == 0 ? 1 : a->shape[axis];
  for (int64_t i = 0; i < len; i++) {
    if (a->ndim > 0 && !shown(lo, axis, i)) { i = len - EDGE - 1; continue; }
    if (a->ndim > 0) idx[axis] = i;
    if (axis + 1 < a->ndim) { measure(lo, axis + 1, idx); continue; }
    int n = format_one(&lo->f, elem(lo, elem_index(lo, idx)), buf, true);
    if (n > lo->f.width) lo->f.width = n;
  }
}

static void decide_format(layout *lo) {
  int64_t idx[GL_MAXDIMS] = { 0 };
  double maxabs = 0, minabs = HUGE_VAL;
  bool integral = true;
  int frac = 0, sfrac = 0;
  if (lo->a->size > 0) scan(lo, 0, idx, &maxabs, &minabs, &integral, &frac, &sfrac);
  lo->f.integral = integral;
  /* NumPy's rule: scientific when the magnitudes are large, tiny or far apart */
  lo->f.sci = minabs < HUGE_VAL && (maxabs >= 1e8 || minabs < 1e-4 || maxabs / minabs > 1e3);
  lo->f.frac = lo->f.sci ? sfrac : frac;
  lo->f.width = 0;
  memset(idx, 0, sizeof idx);
  if (lo->a->size > 0) measure(lo, 0, idx);
}

/* ---- output --------------------------------------------------------------------------------- */

static void add_spaces(luaL_Buffer *b, int n) { while (n-- > 0) luaL_addchar(b, ' '); }

/* Puts one word of the innermost axis on the current line, wrapping first when it would
** pass the width NumPy allows: 75 columns less the closing brackets and the final ",".
** Separators are written as "," plus a space owed to the next word, so a wrapped line
** ends without trailing blanks. */
static void put_word(luaL_Buffer *b, const layout *lo, const char *word, int len, int indent,
                     int *col, bool *owed) {
  if (*owed) {
    if (*col + 1 + len + lo->a->ndim + 1 > LINEWIDTH && *col > indent + 1) {
      luaL_addchar(b, '\n');
      add_spaces(b, indent + 1);
      *col = indent + 1;
    } else {
      luaL_addchar(b, ' ');
      (*col)++;
    }
  }
  luaL_addstring(b, word);
  *col += len;
  *owed = false;
}

static void emit(lua_State *L, luaL_Buffer *b, layout *lo, int axis, int64_t *idx, int indent) {
  const gl_array *a = lo->a;
  int64_t n = a->shape[axis];
  luaL_addchar(b, '[');
  int col = indent + 1;
  bool owed = false;
  for (int64_t i = 0; i < n; i++) {
    if (!shown(lo, axis, i)) {
      if (axis + 1 == a->ndim) {
        put_word(b, lo, "...,", 4, indent, &col, &owed);
        owed = true;
      } else {
        luaL_addstring(b, "...,\n");
        for (int k = axis + 1; k < a->ndim - 1; k++) luaL_addchar(b, '\n');
        add_spaces(b, indent + 1);
      }
      i = n - EDGE - 1;
      continue;
    }
    idx[axis] = i;
    bool last = i == n - 1;
    if (axis + 1 < a->ndim) {
      emit(L, b, lo, axis + 1, idx, indent + 1);
      if (!last) {
        luaL_addchar(b, ',');
        for (int k = axis; k < a->ndim - 1; k++) luaL_addchar(b, '\n');
        add_spaces(b, indent + 1);
      }
      continue;
    }
    char buf[64], cell[96];
    int len = format_one(&lo->f, elem(lo, elem_index(lo, idx)), buf, true);
    snprintf(cell, sizeof cell, "%*s%s%s", lo->f.width - len, "", buf, last ? "" : ",");
    put_word(b, lo, cell, lo->f.width, indent, &col, &owed);
    if (!last) { col++; owed = true; }
  }
  luaL_addchar(b, ']');
}

int gl_lua_tostring(lua_State *L) {
  gl_array *a = gl_lua_checkany(L, 1);
  if (a->storage == NULL) { lua_pushliteral(L, "gpu.array(closed)"); return 1; }
  layout lo;
  memset(&lo, 0, sizeof lo);
  lo.a = a;
  lo.f.dt = (gl_dtype)a->dtype;
  lo.summarise = a->size > THRESHOLD;
  int64_t count = 1;
  for (int d = 0; d < a->ndim; d++) {
    lo.shape[d] = lo.summarise && a->shape[d] > 2 * EDGE ? 2 * EDGE : a->shape[d];
    count *= lo.shape[d];                /* at most 1000, or (2 EDGE)^ndim */
  }
  char *buf = lua_newuserdatauv(L, (size_t)count * gl_array_itemsize(a) + 1, 0);  /* freed by the GC, even on error */
  gl_lua_check_status(L, copy_shown(&lo, buf), 0);
  lo.data = buf;
  decide_format(&lo);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  char tmp[96];
  static const char prefix[] = "gpu.array(";
  luaL_addstring(&b, prefix);
  int64_t idx[GL_MAXDIMS] = { 0 };
  if (a->ndim == 0) {          /* gpu.array(3., dtype=...): never mistaken for the number 3 */
    format_one(&lo.f, elem(&lo, 0), tmp, false);
    luaL_addstring(&b, tmp);
  } else if (a->size == 0) {
    luaL_addstring(&b, "[]");
  } else {
    emit(L, &b, &lo, 0, idx, (int)sizeof prefix - 1);
  }
  char dev[16], shp[GL_SHAPE_BUFSZ];
  luaL_addstring(&b, ", ");
  if (a->size == 0 && a->ndim > 1) {
    luaL_addstring(&b, "shape=");
    luaL_addstring(&b, gl_shape_str(a->ndim, a->shape, shp));
    luaL_addstring(&b, ", ");
  }
  snprintf(tmp, sizeof tmp, "dtype=%s, device=%s)", gl_dtypes[a->dtype].name,
           gl_device_name(gl_array_device(a), dev));
  luaL_addstring(&b, tmp);
  luaL_pushresult(&b);
  return 1;
}

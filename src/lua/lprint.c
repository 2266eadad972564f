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

/* How one column of reals prints, after NumPy's FloatingFormat: fixed or scientific, the
** digits, the widest string. A complex array has two: its real parts' and its imaginary
** parts' (these signed: "+2.", as NumPy's ComplexFloatingFormat). */
typedef struct fmt {
  gl_dtype dt;              /* the values' float dtype: the array's, or its parts' */
  bool sci, integral;       /* float modes */
  bool plus;                /* a sign on positive values too */
  int frac;                 /* fixed: widest fractional part; sci: mantissa digits */
  int exp_digits;           /* sci: exponent digits (2, or 3 where one needs them) */
  int width;                /* widest string */
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

/* The digits of the exponent v has written with p digits after the point (2 at least, as
** C's %e writes it; 3 past 1e99, where NumPy pads the whole column's to 3). */
static int exponent_digits(double v, int p) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.*e", p, v);
  return (int)strlen(strchr(buf, 'e') + 2);
}

/* One real in column format f; pad: spaces after a fixed-notation number up to the
** column's fractional digits, so the points align. */
static int format_real(const fmt *f, double v, char *out, bool pad) {
  const char *plus = f->plus ? "+" : "";
  if (isnan(v)) return sprintf(out, "%snan", plus);
  if (isinf(v)) return sprintf(out, "%sinf", v < 0 ? "-" : plus);
  if (f->sci) {              /* own shortest digits, zero-padded to the common count */
    int own = digits_needed(f->dt, v, true);
    char tmp[64];
    snprintf(tmp, sizeof tmp, f->plus ? "%+.*e" : "%.*e", own, v);
    char *e = strchr(tmp, 'e');
    int n = (int)(e - tmp);
    memcpy(out, tmp, (size_t)n);
    if (own == 0) out[n++] = '.';                                  /* "1.e-05", as NumPy */
    for (int k = own; k < f->frac; k++) out[n++] = '0';
    int x = atoi(e + 1);
    return n + sprintf(out + n, "e%c%0*d", x < 0 ? '-' : '+', f->exp_digits, abs(x));
  }
  if (f->integral) return sprintf(out, f->plus ? "%+.0f." : "%.0f.", v);
  int own = digits_needed(f->dt, v, false);
  int n = sprintf(out, f->plus ? "%+.*f" : "%.*f", own, v);
  if (own == 0) out[n++] = '.';
  if (pad) for (int k = own; k < f->frac; k++) out[n++] = ' ';   /* align the points */
  out[n] = '\0';
  return n;
}

/* What a column's format is decided from: its finite values' magnitudes and digits. */
typedef struct col_stats {
  double maxabs, minabs;
  bool integral;
  int frac, sfrac, edig;
} col_stats;

static void stats_add(col_stats *st, gl_dtype dt, double x) {
  if (!isfinite(x)) return;
  double v = fabs(x);
  if (v > st->maxabs) st->maxabs = v;
  if (v != 0 && v < st->minabs) st->minabs = v;
  if (x != floor(x) || v >= 1e16) st->integral = false;
  int fd = digits_needed(dt, x, false), sd = digits_needed(dt, x, true), ed = exponent_digits(x, sd);
  if (fd > st->frac) st->frac = fd;
  if (sd > st->sfrac) st->sfrac = sd;
  if (ed > st->edig) st->edig = ed;
}

/* NumPy's rule: scientific when the magnitudes are large, tiny or far apart. */
static void stats_decide(fmt *f, const col_stats *st) {
  f->integral = st->integral;
  f->sci = st->minabs < HUGE_VAL && (st->maxabs >= 1e8 || st->minabs < 1e-4 || st->maxabs / st->minabs > 1e3);
  f->frac = f->sci ? st->sfrac : st->frac;
  f->exp_digits = st->edig;
  f->width = 0;
}

/* ---- which elements are shown ------------------------------------------------------------ */

typedef struct layout {
  const gl_array *a;
  const char *data;          /* host copy of the shown elements, C order */
  int64_t shape[GL_MAXDIMS]; /* ... its extents: a's, or 2 * EDGE on a summarised axis */
  bool summarise;
  gl_dtype dt;               /* a's */
  fmt re, im;                /* a float array's column (re), a complex one's two */
  col_stats st_re, st_im;    /* what decides them */
  int width;                 /* widest element */
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
  return gl_scalar_load(lo->dt, lo->data + k * (int64_t)gl_dtypes[lo->dt].size);
}

/* One element as NumPy prints it: a complex one as its real part, then its signed
** imaginary part and "j", each right-aligned in its column (pad: "1. +2.j  ", so the
** points of both columns align, as NumPy's "1. +2.j  , 1.5-2.25j"). */
static int format_one(const layout *lo, gl_scalar s, char *out, bool pad) {
  switch (gl_dtypes[lo->dt].kind) {
    case GL_KIND_BOOL: return sprintf(out, "%s", s.i ? "true" : "false");
    case GL_KIND_INT: return sprintf(out, "%lld", (long long)s.i);
    case GL_KIND_UINT: return sprintf(out, "%llu", (unsigned long long)s.i);   /* uint64 past 2^63 too */
    case GL_KIND_COMPLEX: break;
    default: return format_real(&lo->re, s.f, out, pad);
  }
  char re[64], im[64];
  int nr = format_real(&lo->re, s.f, re, pad), ni = format_real(&lo->im, s.im, im, pad);
  int digits = ni;                                     /* "j" goes before the padding */
  while (digits > 0 && im[digits - 1] == ' ') digits--;
  int wr = pad ? lo->re.width : nr, wi = pad ? lo->im.width : ni;
  return sprintf(out, "%*s%s%*s%.*sj%s", wr - nr, "", re, wi - ni, "", digits, im, im + digits);
}

/* Calls fn on every shown element (C order). */
static void visit(layout *lo, int axis, int64_t *idx, void (*fn)(layout *, gl_scalar)) {
  const gl_array *a = lo->a;
  int64_t n = a->ndim == 0 ? 1 : a->shape[axis];     /* a 0-d array: its one element */
  for (int64_t i = 0; i < n; i++) {
    if (a->ndim > 0 && !shown(lo, axis, i)) { i = n - EDGE - 1; continue; }
    if (a->ndim > 0) idx[axis] = i;
    if (axis + 1 < a->ndim) visit(lo, axis + 1, idx, fn);
    else fn(lo, elem(lo, elem_index(lo, idx)));
  }
}

static void scan_one(layout *lo, gl_scalar s) {
  stats_add(&lo->st_re, lo->re.dt, s.f);
  if (s.iscomplex) stats_add(&lo->st_im, lo->im.dt, s.im);
}

static void measure_one(layout *lo, gl_scalar s) {
  char buf[128];
  if (s.iscomplex) {
    int nr = format_real(&lo->re, s.f, buf, true), ni = format_real(&lo->im, s.im, buf, true);
    if (nr > lo->re.width) lo->re.width = nr;
    if (ni > lo->im.width) lo->im.width = ni;
    if (lo->re.width + lo->im.width + 1 > lo->width) lo->width = lo->re.width + lo->im.width + 1;
    return;
  }
  int n = format_one(lo, s, buf, true);
  if (n > lo->width) lo->width = n;
}

static void decide_format(layout *lo) {
  int64_t idx[GL_MAXDIMS] = { 0 };
  gl_dtype part = gl_real_for(lo->dt);
  lo->re.dt = lo->im.dt = part;
  lo->im.plus = true;
  const col_stats none = { 0, HUGE_VAL, true, 0, 0, 2 };
  lo->st_re = lo->st_im = none;
  bool floats = gl_dtype_is_float(part);
  if (lo->a->size > 0 && floats) visit(lo, 0, idx, scan_one);
  stats_decide(&lo->re, &lo->st_re);
  stats_decide(&lo->im, &lo->st_im);
  lo->width = 0;
  memset(idx, 0, sizeof idx);
  if (lo->a->size > 0) visit(lo, 0, idx, measure_one);
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
    char buf[128], cell[160];
    int len = format_one(lo, elem(lo, elem_index(lo, idx)), buf, true);
    snprintf(cell, sizeof cell, "%*s%s%s", lo->width - len, "", buf, last ? "" : ",");
    put_word(b, lo, cell, lo->width, indent, &col, &owed);
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
  lo.dt = (gl_dtype)a->dtype;
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
  char tmp[128];
  static const char prefix[] = "gpu.array(";
  luaL_addstring(&b, prefix);
  int64_t idx[GL_MAXDIMS] = { 0 };
  if (a->ndim == 0) {          /* gpu.array(3., dtype=...): never mistaken for the number 3 */
    format_one(&lo, elem(&lo, 0), tmp, false);
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

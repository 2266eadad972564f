/*
** text.c — loadtxt / savetxt for numbers (see text.h).
*/
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "text.h"

#define FIELD_MAX 128

typedef struct line { const char *p, *end; int64_t no; } line;

/* The next line of [*p, end): comments and the '\r' of CRLF removed. */
static bool next_line(const char **p, const char *end, const gl_text_opts *o, line *l) {
  if (*p >= end) return false;
  const char *nl = memchr(*p, '\n', (size_t)(end - *p));
  const char *e = nl ? nl : end;
  l->p = *p;
  l->end = e;
  if (o->comment) {
    const char *c = memchr(l->p, o->comment, (size_t)(e - l->p));
    if (c) l->end = c;
  }
  if (l->end > l->p && l->end[-1] == '\r') l->end--;
  *p = nl ? nl + 1 : end;
  l->no++;
  return true;
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* A walk over the fields of one line. Columns count fields from 1, as NumPy's messages
** ("at row 0, column 3") and the ragged-row message do. */
typedef struct fields { const char *cur; bool done; int64_t col; } fields;

/* The next field of a line into f (NUL-terminated, *n bytes). Returns 0 at the end of
** the line, 1 for a field, -1 for a fault (message set, without the line and column).
** With a delimiter, a line of k delimiters has k + 1 fields and none may be empty: "1,,2"
** and "1,2," are faults, as in NumPy. */
static int next_field(const line *l, fields *fs, const gl_text_opts *o, char *f, size_t *n) {
  const char *s = fs->cur, *e;
  if (o->delimiter == 0) {
    while (s < l->end && is_blank(*s)) s++;
    if (s >= l->end) return 0;
    e = s;
    while (e < l->end && !is_blank(*e)) e++;
    fs->cur = e;
  } else {
    if (fs->done) return 0;
    const char *d = memchr(s, o->delimiter, (size_t)(l->end - s));
    e = d ? d : l->end;
    fs->cur = d ? d + 1 : l->end;
    fs->done = d == NULL;
    while (s < e && is_blank(*s)) s++;
    while (e > s && is_blank(e[-1])) e--;
  }
  fs->col++;
  if (e == s) {
    gl_fail(GL_EIO, fs->done && fs->col > 1 ? "empty field (the line ends with '%c')" : "empty field", o->delimiter);
    return -1;
  }
  if ((size_t)(e - s) >= FIELD_MAX) {
    gl_fail(GL_EIO, "field too long (%zu bytes, at most %d)", (size_t)(e - s), FIELD_MAX - 1);
    return -1;
  }
  *n = (size_t)(e - s);
  memcpy(f, s, *n);
  f[*n] = 0;
  return 1;
}

static bool line_is_empty(const line *l) {
  for (const char *s = l->p; s < l->end; s++) if (!is_blank(*s)) return false;
  return true;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Whether f[0 .. n) is a decimal number: [+-] digits [. digits] [e [+-] digits] (digits
** on at least one side of the point), or nan, inf, infinity in any case (NumPy reads
** those). strtod alone would also take hex ("0x1A", "0x1p3") and "nan(...)", which are
** refused. *integer: digits only. */
static bool is_decimal(const char *f, size_t n, bool *integer) {
  size_t i = 0, digits = 0;
  *integer = false;
  if (i < n && (f[i] == '+' || f[i] == '-')) i++;
  size_t w = n - i;
  if ((w == 3 && (strncasecmp(f + i, "nan", 3) == 0 || strncasecmp(f + i, "inf", 3) == 0)) ||
      (w == 8 && strncasecmp(f + i, "infinity", 8) == 0))
    return true;
  while (i < n && is_digit(f[i])) { i++; digits++; }
  *integer = digits > 0 && i == n;
  if (i < n && f[i] == '.') {
    i++;
    while (i < n && is_digit(f[i])) { i++; digits++; }
  }
  if (digits == 0) return false;
  if (i < n && (f[i] == 'e' || f[i] == 'E')) {
    i++;
    if (i < n && (f[i] == '+' || f[i] == '-')) i++;
    size_t ed = 0;
    while (i < n && is_digit(f[i])) { i++; ed++; }
    if (ed == 0) return false;
  }
  return i == n;
}

/* A complex number as NumPy writes and reads it: "(re+imj)", "re+imj", "re-imj", NumPy's
** own "re+-imj", "imj" or "re" (parentheses optional; j or J); both parts decimal. */
static bool parse_complex(const char *f, size_t n, double *re, double *im) {
  char b[FIELD_MAX];
  bool integer;
  if (n >= 2 && f[0] == '(' && f[n - 1] == ')') { f++; n -= 2; }
  if (n == 0 || n >= sizeof b) return false;
  memcpy(b, f, n);
  b[n] = 0;
  *re = *im = 0;
  if (b[n - 1] != 'j' && b[n - 1] != 'J') {
    if (!is_decimal(b, n, &integer)) return false;
    *re = strtod(b, NULL);
    return true;
  }
  b[--n] = 0;                                          /* the imaginary part ends before j */
  size_t k = n;                                        /* where it starts: the last sign not after an e */
  while (k > 0 && !((b[k - 1] == '+' || b[k - 1] == '-') && k - 1 > 0 && b[k - 2] != 'e' && b[k - 2] != 'E')) k--;
  if (k > 0) k--;
  size_t rs = k;                                       /* "1+-2": the real part ends at its '+' */
  if (k > 0 && b[k] == '-' && b[k - 1] == '+') rs = k - 1;
  if (k == 0) {                                        /* "2j", "-2j": no real part */
    if (!is_decimal(b, n, &integer)) return false;
    *im = strtod(b, NULL);
    return true;
  }
  if (!is_decimal(b, rs, &integer) || !is_decimal(b + k, n - k, &integer)) return false;
  *im = strtod(b + k, NULL);
  b[rs] = 0;
  *re = strtod(b, NULL);
  return true;
}

/* An unsigned integer field (digits, or an integral decimal "1e3") no larger than max. */
static bool parse_unsigned(const char *f, bool integer, uint64_t max, uint64_t *u) {
  if (f[0] == '-') return strtod(f, NULL) == 0 && (*u = 0, true);           /* "-0" */
  if (integer) {
    errno = 0;
    unsigned long long v = strtoull(f, NULL, 10);
    if (errno == ERANGE || v > max) return false;
    *u = v;
    return true;
  }
  double d = strtod(f, NULL);
  if (d != floor(d) || !(d >= 0 && d < (double)max + 1.0)) return false;
  *u = (uint64_t)d;
  return true;
}

/* One field f[0 .. n) as a value of dtype dt at 'out' (NULL: check only). */
static gl_status convert(const char *f, size_t n, gl_dtype dt, void *out) {
  gl_scalar v;
  bool integer;
  double re, im;
  if (dt == GL_BOOL && (strcmp(f, "True") == 0 || strcmp(f, "true") == 0)) v = gl_scalar_bool(true);
  else if (dt == GL_BOOL && (strcmp(f, "False") == 0 || strcmp(f, "false") == 0)) v = gl_scalar_bool(false);
  else if (memchr(f, 0, n)) return gl_fail(GL_EIO, "a NUL byte in a field");
  else if (gl_dtype_is_complex(dt)) {
    if (!parse_complex(f, n, &re, &im)) return gl_fail(GL_EIO, "'%s' is not a complex number", f);
    v = gl_scalar_complex(re, im);
  } else if (!is_decimal(f, n, &integer)) return gl_fail(GL_EIO, "'%s' is not a decimal number", f);
  else if (gl_dtype_is_float(dt)) v = gl_scalar_float(strtod(f, NULL));
  else if (gl_dtypes[dt].kind == GL_KIND_UINT) {
    uint64_t u, max = gl_dtypes[dt].size == 8 ? UINT64_MAX : (uint64_t)gl_dtypes[dt].max;
    if (!parse_unsigned(f, integer, max, &u))
      return integer ? gl_fail(GL_EIO, "%s out of range of %s", f, gl_dtypes[dt].name)
                     : gl_fail(GL_EIO, "'%s' is not an integer in range of %s", f, gl_dtypes[dt].name);
    v = u > (uint64_t)INT64_MAX ? gl_scalar_float((double)u) : gl_scalar_int((int64_t)u);
    if (!v.isint) { if (out) *(uint64_t *)out = u; return GL_OK; }        /* exactly, past a double's 53 bits */
  } else {
    long long i;
    errno = 0;
    if (integer) {
      i = strtoll(f, NULL, 10);
      if (errno == ERANGE) return gl_fail(GL_EIO, "%s out of range of %s", f, gl_dtypes[dt].name);
    } else {                                            /* "1e3", "2.0": integral values */
      double d = strtod(f, NULL);
      if (d != floor(d) || !(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        return gl_fail(GL_EIO, "'%s' is not an integer in range of %s", f, gl_dtypes[dt].name);
      i = (long long)d;
    }
    if (dt != GL_BOOL && (i < gl_dtypes[dt].min || i > gl_dtypes[dt].max))     /* bool: any integer, != 0 */
      return gl_fail(GL_EIO, "%s out of range of %s", f, gl_dtypes[dt].name);
    v = dt == GL_BOOL ? gl_scalar_bool(i != 0) : gl_scalar_int(i);
  }
  if (out) gl_scalar_store(dt, out, v);
  return GL_OK;
}

/* A fault in a field, located: "line 3, column 2: empty field". */
static gl_status at_field(const line *l, const fields *fs) {
  return gl_fail(GL_EIO, "line %lld, column %lld: %s", (long long)l->no, (long long)fs->col, gl_errmsg());
}

static gl_status ragged(const line *l, int64_t c, int64_t ncol) {
  return gl_fail(GL_EIO, "line %lld: %lld columns where earlier rows have %lld", (long long)l->no, (long long)c,
                 (long long)ncol);
}

/* pass 0 counts and checks; pass 1 writes into data */
static gl_status scan(const uint8_t *buf, size_t len, const gl_text_opts *o, gl_dtype dt, int pass,
                      uint8_t *data, int64_t *rows, int64_t *cols) {
  const char *p = (const char *)buf, *end = p + len;
  line l = { NULL, NULL, 0 };
  char f[FIELD_MAX];
  unsigned isz = gl_dtypes[dt].size;
  int64_t r = 0, ncol = -1, at = 0;
  gl_text_opts nocomment = *o;
  nocomment.comment = 0;
  while (l.no < o->skip && next_line(&p, end, &nocomment, &l)) {}
  while (next_line(&p, end, o, &l)) {
    if (line_is_empty(&l)) continue;
    fields fs = { l.p, false, 0 };
    size_t n;
    int k;
    while ((k = next_field(&l, &fs, o, f, &n)) == 1) {
      if (ncol >= 0 && fs.col > ncol) return ragged(&l, fs.col, ncol);
      if (convert(f, n, dt, pass ? data + (size_t)at * isz : NULL) != GL_OK) return at_field(&l, &fs);
      at++;
    }
    if (k < 0) return at_field(&l, &fs);
    if (ncol >= 0 && fs.col != ncol) return ragged(&l, fs.col, ncol);
    ncol = fs.col;
    r++;
  }
  *rows = r;
  *cols = ncol < 0 ? 0 : ncol;
  return GL_OK;
}

gl_status gl_text_parse(const uint8_t *buf, size_t len, const gl_text_opts *o, gl_dtype dt,
                        void **data, int *ndim, int64_t shape[2]) {
  int64_t rows, cols;
  *data = NULL;
  if (o->skip < 0) return gl_fail(GL_EINVAL, "skip must be >= 0");
  GL_TRY(scan(buf, len, o, dt, 0, NULL, &rows, &cols));
  size_t n = (size_t)rows * (size_t)cols;               /* <= len: each value takes a byte */
  uint8_t *d = malloc(n * gl_dtypes[dt].size + 1);
  if (d == NULL) return gl_fail(GL_ENOMEM, "out of memory");
  gl_status st = scan(buf, len, o, dt, 1, d, &rows, &cols);
  if (st != GL_OK) { free(d); return st; }
  *data = d;
  if (rows == 0) { *ndim = 1; shape[0] = 0; }
  else if (rows == 1 && cols == 1) *ndim = 0;
  else if (rows == 1 || cols == 1) { *ndim = 1; shape[0] = rows * cols; }
  else { *ndim = 2; shape[0] = rows; shape[1] = cols; }
  return GL_OK;
}

/* ---- writing -------------------------------------------------------------------------- */

gl_status gl_text_fmt(const char *fmt, char *out, size_t cap, bool *is_int) {
  size_t n = 0;
  int convs = 0;
  for (const char *s = fmt; *s; ) {
    if (n + 4 >= cap) return gl_fail(GL_EINVAL, "format too long");
    if (*s != '%') { out[n++] = *s++; continue; }
    if (s[1] == '%') { out[n++] = '%'; out[n++] = '%'; s += 2; continue; }
    const char *start = s++;
    while (*s && strchr("-+ #0", *s)) s++;
    int digits = 0;
    while (*s >= '0' && *s <= '9') { s++; if (++digits > 3) return gl_fail(GL_EINVAL, "format '%s': width too large", fmt); }
    if (*s == '.') {
      s++;
      digits = 0;
      while (*s >= '0' && *s <= '9') { s++; if (++digits > 2) return gl_fail(GL_EINVAL, "format '%s': precision too large", fmt); }
    }
    char c = *s;
    if (c && strchr("diuoxX", c)) *is_int = true;
    else if (c && strchr("eEfFgGaA", c)) *is_int = false;
    else return gl_fail(GL_EINVAL, "format '%s': expected a conversion for a number (d i u o x X e E f F g G a A)", fmt);
    if (++convs > 1) return gl_fail(GL_EINVAL, "format '%s': more than one conversion", fmt);
    size_t m = (size_t)(s - start);
    if (n + m + 4 >= cap) return gl_fail(GL_EINVAL, "format too long");
    memcpy(out + n, start, m);
    n += m;
    if (*is_int) { out[n++] = 'l'; out[n++] = 'l'; }
    out[n++] = c;
    s++;
  }
  if (convs == 0) return gl_fail(GL_EINVAL, "format '%s': no conversion (e.g. %%.18e or %%d)", fmt);
  out[n] = 0;
  return GL_OK;
}

gl_status gl_text_write(gl_outfile *o, const void *data, gl_dtype dt, int ndim, const int64_t *shape,
                        const char *fmt, bool is_int, const char *delim) {
  if (ndim < 1 || ndim > 2) return gl_fail(GL_EINVAL, "expected a 1-D or 2-D array, got %d-D", ndim);
  int64_t rows = shape[0], cols = ndim == 2 ? shape[1] : 1;
  const uint8_t *p = data;
  unsigned isz = gl_dtypes[dt].size;
  size_t dl = strlen(delim);
  char buf[512];
  bool cx = gl_dtype_is_complex(dt), unsig = gl_dtypes[dt].kind == GL_KIND_UINT;
  if (cx && is_int) return gl_fail(GL_EINVAL, "an integer format for %s (use a float one, as %%.18e)", gl_dtypes[dt].name);
  char ufmt[160];                              /* an unsigned dtype's %d: %u, for uint64 past 2^63 */
  if (unsig && is_int && strlen(fmt) < sizeof ufmt) {
    strcpy(ufmt, fmt);
    char *c = strpbrk(ufmt, "di");
    while (c && c > ufmt && c[-1] != 'l') c = strpbrk(c + 1, "di");
    if (c) *c = 'u';
    fmt = ufmt;
  }
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t c = 0; c < cols; c++, p += isz) {
      if (c) GL_TRY(gl_out_write(o, delim, dl));
      gl_scalar v = gl_scalar_load(dt, p);
      int n;
      if (cx) {                                /* NumPy's " (re+imj)", "+-" written "-" */
        double part[2] = { v.f, v.im };
        GL_TRY(gl_out_write(o, " (", 2));
        for (int k = 0; k < 2; k++) {
          if (part[k] != part[k]) part[k] = fabs(part[k]);
          n = snprintf(buf, sizeof buf, fmt, part[k]);
          if (n < 0 || (size_t)n >= sizeof buf) return gl_fail(GL_EINVAL, "format gives more than %zu characters", sizeof buf - 1);
          if (k == 1 && buf[0] != '-') GL_TRY(gl_out_write(o, "+", 1));
          GL_TRY(gl_out_write(o, buf, (size_t)n));
        }
        GL_TRY(gl_out_write(o, "j)", 2));
        continue;
      }
      if (is_int && unsig) {
        n = snprintf(buf, sizeof buf, fmt, (unsigned long long)v.i);          /* uint64's bits in i */
      } else if (is_int) {
        long long i = v.isint ? (long long)v.i : (v.f != v.f ? 0 : v.f >= 9.2233720368547758e18 ? INT64_MAX :
                                                 v.f <= -9.2233720368547758e18 ? INT64_MIN : (long long)v.f);
        n = snprintf(buf, sizeof buf, fmt, i);
      } else {
        double d = v.isint ? (double)v.i : v.f;
        if (d != d) d = fabs(d);             /* "nan" as NumPy prints it, never "-nan" */
        n = snprintf(buf, sizeof buf, fmt, d);
      }
      if (n < 0 || (size_t)n >= sizeof buf) return gl_fail(GL_EINVAL, "format gives more than %zu characters", sizeof buf - 1);
      GL_TRY(gl_out_write(o, buf, (size_t)n));
    }
    GL_TRY(gl_out_write(o, "\n", 1));
  }
  return GL_OK;
}

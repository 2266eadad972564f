/*
** text.h — numbers as text: CSV and whitespace-separated tables (NumPy's loadtxt and
** savetxt, numbers only: no quoting, no converters).
**
** Reading makes two passes over a bounded buffer: the first checks every row and counts
** rows and columns, the second converts; so the one allocation is rows x cols elements,
** which the file's length bounds. Fields are copied to a small terminated buffer before
** conversion: strtod never sees past a field.
*/
#ifndef GL_TEXT_H
#define GL_TEXT_H

#include "array.h"
#include "fileio.h"

typedef struct gl_text_opts {
  char delimiter;     /* 0: runs of spaces and tabs */
  char comment;       /* 0: none; NumPy's default '#' */
  int64_t skip;       /* lines skipped at the start (NumPy's skiprows) */
} gl_text_opts;

/* Parses buf[0 .. len) into a malloc'd block of dtype dt (*data, the caller frees it):
** shape (rows, cols), squeezed as NumPy's loadtxt does (one row or one column gives
** 1-D, a single value 0-d, no rows (0,)). */
gl_status gl_text_parse(const uint8_t *buf, size_t len, const gl_text_opts *o, gl_dtype dt,
                        void **data, int *ndim, int64_t shape[2]);

/* Checks a printf format for one number ("%.18e", "%d", "%8.3f", with literal text and
** %% around it) and rewrites it into out (at least strlen(fmt) + 4 bytes) with the
** length modifier the value will be passed with; *is_int says whether that is long long
** (d i u o x X) or double (e E f F g G a A). */
gl_status gl_text_fmt(const char *fmt, char *out, size_t cap, bool *is_int);

/* Writes a 1-D (one value a line) or 2-D contiguous host array as text with the
** checked format 'fmt' (from gl_text_fmt) and delimiter 'delim' between columns. */
gl_status gl_text_write(gl_outfile *o, const void *data, gl_dtype dt, int ndim, const int64_t *shape,
                        const char *fmt, bool is_int, const char *delim);

#endif

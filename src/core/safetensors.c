/*
** safetensors.c — reading and writing safetensors (see safetensors.h), with a small
** JSON reader: strings (escapes and \u surrogate pairs decoded to UTF-8), non-negative
** integers where the format needs them, and any other value skipped to a bounded depth.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "safetensors.h"
#include "fileio.h"

/* The dtype safetensors calls d; -1 if none. */
static int dtype_of_st_name(const char *d) {
  for (int k = 0; k < GL_NDTYPE; k++)
    if (gl_dtypes[k].st && strcmp(d, gl_dtypes[k].st) == 0) return k;
  return -1;
}

/* The safetensors dtypes read, "BOOL, U8, ...", into buf (cap bytes), for error messages. */
static const char *st_names(char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = 0;
  for (int k = 0; k < GL_NDTYPE; k++) {
    int w = gl_dtypes[k].st ? snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", gl_dtypes[k].st) : 0;
    if (w > 0) n += (size_t)w < cap - n ? (size_t)w : cap - n - 1;
  }
  return buf;
}

/* ---- JSON ------------------------------------------------------------------------------- */

#define JSON_MAX_DEPTH 64

typedef gl_cursor json;

static gl_status bad(const char *what) { return gl_fail(GL_EIO, "bad JSON header (%s)", what); }

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool hex4(json *j, unsigned *v) {
  if (j->end - j->p < 4) return false;
  *v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hexval(j->p[i]);
    if (h < 0) return false;
    *v = *v << 4 | (unsigned)h;
  }
  j->p += 4;
  return true;
}

/* A string, decoded into a malloc'd NUL-terminated block (out may be NULL: skip). The
** decoded text is never longer than the source, which bounds the allocation. */
static gl_status str(json *j, char **out) {
  gl_cursor_ws(j);
  if (j->p >= j->end || *j->p != '"') return bad("expected a string");
  j->p++;
  const char *q = j->p;
  while (q < j->end && *q != '"') {
    if (*q == '\\' && j->end - q < 2) { q = j->end; break; }
    q += *q == '\\' ? 2 : 1;
  }
  if (q >= j->end) return bad("unterminated string");
  char *s = NULL, *w = NULL;
  if (out) {
    s = w = malloc((size_t)(q - j->p) + 1);
    if (s == NULL) return gl_fail(GL_ENOMEM, "out of memory");
  }
  gl_status st = GL_OK;
  while (*j->p != '"') {
    unsigned char c = (unsigned char)*j->p++;
    if (c < 0x20) { st = bad("control character in a string"); break; }
    if (c != '\\') { if (w) *w++ = (char)c; continue; }
    char e = *j->p++;
    unsigned cp;
    switch (e) {
      case '"': case '\\': case '/': if (w) *w++ = e; continue;
      case 'b': if (w) *w++ = '\b'; continue;
      case 'f': if (w) *w++ = '\f'; continue;
      case 'n': if (w) *w++ = '\n'; continue;
      case 'r': if (w) *w++ = '\r'; continue;
      case 't': if (w) *w++ = '\t'; continue;
      case 'u': break;
      default: st = bad("bad escape in a string"); break;
    }
    if (st != GL_OK) break;
    if (!hex4(j, &cp)) { st = bad("bad \\u escape"); break; }
    if (cp >= 0xd800 && cp < 0xdc00) {                  /* a surrogate pair */
      unsigned lo;
      if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u') { st = bad("unpaired surrogate"); break; }
      j->p += 2;
      if (!hex4(j, &lo) || lo < 0xdc00 || lo > 0xdfff) { st = bad("unpaired surrogate"); break; }
      cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    } else if (cp >= 0xdc00 && cp < 0xe000) { st = bad("unpaired surrogate"); break; }
    if (cp == 0) { st = bad("NUL in a string"); break; }
    if (!w) continue;
    /* UTF-8 of cp is at most as long as its escape (6 or 12 source bytes) */
    if (cp < 0x80) *w++ = (char)cp;
    else if (cp < 0x800) { *w++ = (char)(0xc0 | cp >> 6); *w++ = (char)(0x80 | (cp & 0x3f)); }
    else if (cp < 0x10000) { *w++ = (char)(0xe0 | cp >> 12); *w++ = (char)(0x80 | (cp >> 6 & 0x3f)); *w++ = (char)(0x80 | (cp & 0x3f)); }
    else { *w++ = (char)(0xf0 | cp >> 18); *w++ = (char)(0x80 | (cp >> 12 & 0x3f)); *w++ = (char)(0x80 | (cp >> 6 & 0x3f)); *w++ = (char)(0x80 | (cp & 0x3f)); }
  }
  if (st != GL_OK) { free(s); return st; }
  j->p++;                                                /* closing quote */
  if (w) { *w = 0; *out = s; }
  return GL_OK;
}

static gl_status uint_(json *j, uint64_t *v, const char *what) {
  gl_cursor_ws(j);
  if (j->p >= j->end || *j->p < '0' || *j->p > '9')
    return gl_fail(GL_EIO, "bad JSON header (%s: expected a non-negative integer)", what);
  uint64_t n = 0;
  while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
    if (n > (UINT64_MAX - 9) / 10) return gl_fail(GL_EIO, "bad JSON header (%s: integer too large)", what);
    n = n * 10 + (uint64_t)(*j->p++ - '0');
  }
  if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E'))
    return gl_fail(GL_EIO, "bad JSON header (%s: expected an integer)", what);
  *v = n;
  return GL_OK;
}

/* Skips any value: used for keys the format does not know. */
static gl_status skip(json *j, int depth) {
  if (depth > JSON_MAX_DEPTH) return bad("nested too deeply");
  gl_cursor_ws(j);
  if (j->p >= j->end) return bad("unexpected end");
  char c = *j->p;
  if (c == '"') return str(j, NULL);
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    j->p++;
    if (gl_cursor_eat(j, close)) return GL_OK;
    for (;;) {
      if (c == '{') {
        GL_TRY(str(j, NULL));
        if (!gl_cursor_eat(j, ':')) return bad("expected ':'");
      }
      GL_TRY(skip(j, depth + 1));
      if (gl_cursor_eat(j, close)) return GL_OK;
      if (!gl_cursor_eat(j, ',')) return bad("expected ',' or a closing bracket");
    }
  }
  static const char *const words[] = { "true", "false", "null" };
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(words[i]);
    if ((size_t)(j->end - j->p) >= n && memcmp(j->p, words[i], n) == 0) { j->p += n; return GL_OK; }
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    const char *s = j->p;
    if (*j->p == '-') j->p++;
    while (j->p < j->end && ((*j->p >= '0' && *j->p <= '9') || *j->p == '.' || *j->p == 'e' ||
                             *j->p == 'E' || *j->p == '+' || *j->p == '-')) j->p++;
    if (j->p - s == 1 && *s == '-') return bad("bad number");
    return GL_OK;
  }
  return bad("unexpected character");
}

/* ---- reading ------------------------------------------------------------------------------ */

void gl_st_free(gl_safetensors *s) {
  for (size_t i = 0; i < s->nt; i++) free(s->t[i].name);
  for (size_t i = 0; i < s->nmeta; i++) { free(s->meta[i].key); free(s->meta[i].value); }
  free(s->t);
  free(s->meta);
  memset(s, 0, sizeof *s);
}

static gl_status read_tensor(json *j, gl_st_tensor *t) {
  bool have_dtype = false, have_shape = false, have_off = false;
  if (!gl_cursor_eat(j, '{')) return gl_fail(GL_EIO, "tensor '%s': bad JSON header (expected an object)", t->name);
  if (!gl_cursor_eat(j, '}')) for (;;) {
    char *key = NULL;
    GL_TRY(str(j, &key));
    gl_status st = GL_OK;
    if (!gl_cursor_eat(j, ':')) st = bad("expected ':'");
    else if (strcmp(key, "dtype") == 0 && !have_dtype) {
      char *d = NULL;
      st = str(j, &d);
      if (st == GL_OK) {
        int found = dtype_of_st_name(d);
        char names[128];
        if (found < 0)
          st = gl_fail(GL_EIO, "tensor '%s': unsupported dtype '%.40s' (gpulua reads %s)", t->name, d,
                       st_names(names, sizeof names));
        else t->dtype = (gl_dtype)found;
        free(d);
      }
      have_dtype = true;
    } else if (strcmp(key, "shape") == 0 && !have_shape) {
      have_shape = true;
      if (!gl_cursor_eat(j, '[')) st = bad("shape: expected an array");
      else if (!gl_cursor_eat(j, ']')) for (;;) {
        uint64_t v;
        if (t->ndim == GL_MAXDIMS) { st = gl_fail(GL_EIO, "tensor '%s': more than %d dimensions", t->name, GL_MAXDIMS); break; }
        if ((st = uint_(j, &v, "shape")) != GL_OK) break;
        if (v > (uint64_t)GL_MAXSIZE) { st = gl_fail(GL_EIO, "tensor '%s': dimension too large", t->name); break; }
        t->shape[t->ndim++] = (int64_t)v;
        if (gl_cursor_eat(j, ']')) break;
        if (!gl_cursor_eat(j, ',')) { st = bad("shape: expected ',' or ']'"); break; }
      }
    } else if (strcmp(key, "data_offsets") == 0 && !have_off) {
      have_off = true;
      if (!gl_cursor_eat(j, '[') || (st = uint_(j, &t->begin, "data_offsets")) != GL_OK || !gl_cursor_eat(j, ',') ||
          (st = uint_(j, &t->end, "data_offsets")) != GL_OK || !gl_cursor_eat(j, ']'))
        if (st == GL_OK) st = bad("data_offsets: expected [begin, end]");
    } else if (strcmp(key, "dtype") == 0 || strcmp(key, "shape") == 0 || strcmp(key, "data_offsets") == 0) {
      st = gl_fail(GL_EIO, "tensor '%s': bad JSON header ('%s' twice)", t->name, key);
    } else {
      st = skip(j, 2);
    }
    free(key);
    GL_TRY(st);
    if (gl_cursor_eat(j, '}')) break;
    if (!gl_cursor_eat(j, ',')) return bad("expected ',' or '}'");
  }
  if (!have_dtype || !have_shape || !have_off)
    return gl_fail(GL_EIO, "tensor '%s': missing '%s'", t->name, !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
  return GL_OK;
}

static gl_status read_meta(json *j, gl_safetensors *s, size_t cap) {
  if (!gl_cursor_eat(j, '{')) return bad("__metadata__: expected an object");
  if (gl_cursor_eat(j, '}')) return GL_OK;
  for (;;) {
    if (s->nmeta == cap) return bad("__metadata__: too many entries");
    gl_st_meta *m = &s->meta[s->nmeta];
    GL_TRY(str(j, &m->key));
    s->nmeta++;                                   /* owns key from here */
    if (!gl_cursor_eat(j, ':')) return bad("expected ':'");
    gl_cursor_ws(j);
    if (j->p >= j->end || *j->p != '"') return gl_fail(GL_EIO, "bad JSON header (__metadata__ value of '%s' is not a string)", m->key);
    GL_TRY(str(j, &m->value));
    for (size_t i = 0; i + 1 < s->nmeta; i++)
      if (strcmp(s->meta[i].key, m->key) == 0) return gl_fail(GL_EIO, "bad JSON header (__metadata__ key '%s' twice)", m->key);
    if (gl_cursor_eat(j, '}')) return GL_OK;
    if (!gl_cursor_eat(j, ',')) return bad("expected ',' or '}'");
  }
}

static int by_offsets(const void *a, const void *b) {
  const gl_st_tensor *x = *(const gl_st_tensor *const *)a, *y = *(const gl_st_tensor *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return 0;
}

static gl_status parse(const uint8_t *buf, size_t len, gl_safetensors *s) {
  if (len < 8) return gl_fail(GL_EIO, "truncated file (%zu bytes, the header length alone takes 8)", len);
  uint64_t n = gl_rd64(buf);
  if (n > GL_ST_MAX_HEADER) return gl_fail(GL_EIO, "oversized header (%llu bytes, at most %u)", (unsigned long long)n, GL_ST_MAX_HEADER);
  if (n > len - 8) return gl_fail(GL_EIO, "truncated header (expected %llu bytes, found %zu)", (unsigned long long)n, len - 8);
  if (n < 2 || buf[8] != '{') return gl_fail(GL_EIO, "not a safetensors file (the header is not a JSON object)");
  json j = { (const char *)buf + 8, (const char *)buf + 8 + n };
  /* every entry takes at least 5 bytes ("":{} plus a comma), which bounds the tables */
  size_t cap = (size_t)n / 5 + 1;
  s->t = calloc(cap, sizeof *s->t);
  s->meta = calloc(cap, sizeof *s->meta);
  if (!s->t || !s->meta) return gl_fail(GL_ENOMEM, "out of memory");
  bool have_meta = false;
  j.p++;
  if (!gl_cursor_eat(&j, '}')) for (;;) {
    char *name = NULL;
    GL_TRY(str(&j, &name));
    if (!gl_cursor_eat(&j, ':')) { free(name); return bad("expected ':'"); }
    if (strcmp(name, "__metadata__") == 0) {
      free(name);
      if (have_meta) return bad("'__metadata__' twice");
      have_meta = true;
      GL_TRY(read_meta(&j, s, cap));
    } else {
      if (s->nt == cap) { free(name); return bad("too many tensors"); }
      gl_st_tensor *t = &s->t[s->nt++];
      t->name = name;
      for (size_t i = 0; i + 1 < s->nt; i++)
        if (strcmp(s->t[i].name, name) == 0) return gl_fail(GL_EIO, "bad JSON header (tensor '%s' twice)", name);
      GL_TRY(read_tensor(&j, t));
    }
    if (gl_cursor_eat(&j, '}')) break;
    if (!gl_cursor_eat(&j, ',')) return bad("expected ',' or '}'");
  }
  gl_cursor_ws(&j);
  if (j.p != j.end) return bad("text after the object");
  s->data = buf + 8 + n;
  s->data_len = len - 8 - (size_t)n;
  /* sizes, then the tiling of the data buffer */
  for (size_t i = 0; i < s->nt; i++) {
    gl_st_tensor *t = &s->t[i];
    if (gl_shape_check(t->ndim, t->shape, &t->size) != GL_OK)
      return gl_fail(GL_EIO, "tensor '%s': %s", t->name, gl_errmsg());
    if (t->end < t->begin) return gl_fail(GL_EIO, "tensor '%s': data_offsets [%llu, %llu] run backwards", t->name,
                                          (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > s->data_len) return gl_fail(GL_EIO, "tensor '%s': truncated data (offsets end at %llu, the data has %zu bytes)",
                                             t->name, (unsigned long long)t->end, s->data_len);
    unsigned isz = gl_dtypes[t->dtype].size;
    uint64_t have = t->end - t->begin;
    if ((uint64_t)t->size > UINT64_MAX / isz || (uint64_t)t->size * isz != have) {
      char sh[GL_SHAPE_BUFSZ];
      return gl_fail(GL_EIO, "tensor '%s': size mismatch (shape %s of %s needs %llu bytes, data_offsets give %llu)", t->name,
                     gl_shape_str(t->ndim, t->shape, sh), gl_dtypes[t->dtype].st,
                     (unsigned long long)((uint64_t)t->size * isz), (unsigned long long)have);
    }
  }
  gl_st_tensor **order = malloc((s->nt ? s->nt : 1) * sizeof *order);
  if (order == NULL) return gl_fail(GL_ENOMEM, "out of memory");
  for (size_t i = 0; i < s->nt; i++) order[i] = &s->t[i];
  qsort(order, s->nt, sizeof *order, by_offsets);
  uint64_t at = 0;
  gl_status st = GL_OK;
  for (size_t i = 0; i < s->nt && st == GL_OK; i++) {
    if (order[i]->begin < at) st = gl_fail(GL_EIO, "tensor '%s': overlapping data_offsets", order[i]->name);
    else if (order[i]->begin > at) st = gl_fail(GL_EIO, "tensor '%s': gap in the data before offset %llu", order[i]->name,
                                                 (unsigned long long)order[i]->begin);
    at = order[i]->end;
  }
  free(order);
  GL_TRY(st);
  if (at != s->data_len) return gl_fail(GL_EIO, "size mismatch (tensors cover %llu data bytes, the file has %zu)",
                                        (unsigned long long)at, s->data_len);
  return GL_OK;
}

gl_status gl_st_parse(const uint8_t *buf, size_t len, gl_safetensors *out) {
  memset(out, 0, sizeof *out);
  gl_status st = parse(buf, len, out);
  if (st != GL_OK) gl_st_free(out);
  return st;
}

/* ---- writing ---------------------------------------------------------------------------- */

typedef struct sbuf { char *p; size_t n, cap; bool oom; } sbuf;

static void put(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) { b->oom = true; return; }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}

static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

static void put_jstr(sbuf *b, const char *s) {
  put(b, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char e[8];
    if (c == '"' || c == '\\') { e[0] = '\\'; e[1] = (char)c; put(b, e, 2); }
    else if (c < 0x20) { snprintf(e, sizeof e, "\\u%04x", c); put(b, e, 6); }
    else put(b, (const char *)s, 1);
  }
  put(b, "\"", 1);
}

gl_status gl_st_header(uint8_t **out, size_t *len, gl_st_tensor *t, size_t nt,
                       const gl_st_meta *m, size_t nm) {
  for (size_t i = 0; i < nt; i++)
    if (gl_dtypes[t[i].dtype].st == NULL)
      return gl_fail(GL_EINVAL, "tensor '%s': safetensors has no dtype for %s", t[i].name, gl_dtypes[t[i].dtype].name);
  sbuf b = { NULL, 0, 0, false };
  char num[48];
  put(&b, "        ", 8);                          /* the length, filled in below */
  put(&b, "{", 1);
  if (nm) {
    puts_(&b, "\"__metadata__\":{");
    for (size_t i = 0; i < nm; i++) {
      if (i) put(&b, ",", 1);
      put_jstr(&b, m[i].key);
      put(&b, ":", 1);
      put_jstr(&b, m[i].value);
    }
    put(&b, "}", 1);
  }
  uint64_t at = 0;
  for (size_t i = 0; i < nt; i++) {
    if (i || nm) put(&b, ",", 1);
    put_jstr(&b, t[i].name);
    puts_(&b, ":{\"dtype\":\"");
    puts_(&b, gl_dtypes[t[i].dtype].st);
    puts_(&b, "\",\"shape\":[");
    for (int k = 0; k < t[i].ndim; k++) {
      snprintf(num, sizeof num, k ? ",%lld" : "%lld", (long long)t[i].shape[k]);
      puts_(&b, num);
    }
    t[i].begin = at;
    at += (uint64_t)t[i].size * gl_dtypes[t[i].dtype].size;
    t[i].end = at;
    snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)t[i].begin, (unsigned long long)t[i].end);
    puts_(&b, num);
  }
  put(&b, "}", 1);
  while (!b.oom && b.n % 8) put(&b, " ", 1);
  if (b.oom) { free(b.p); return gl_fail(GL_ENOMEM, "out of memory"); }
  if (b.n - 8 > GL_ST_MAX_HEADER) { free(b.p); return gl_fail(GL_EINVAL, "header too large (%zu bytes)", b.n - 8); }
  gl_wr64((uint8_t *)b.p, (uint64_t)(b.n - 8));
  *out = (uint8_t *)b.p;
  *len = b.n;
  return GL_OK;
}

/*
** npz.c — zip reading and writing for .npz (see npz.h). Only what NumPy's archives use:
** one disk, stored (0) and deflated (8) members, no encryption, zip64 when sizes or
** offsets pass 4 GiB.
*/
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "npz.h"

#define SIG_LOCAL   0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END     0x06054b50u
#define SIG_END64   0x06064b50u
#define SIG_LOC64   0x07064b50u
#define U32_MAX     0xffffffffu
/* deflate cannot compress better than about 1032:1 */
#define MAX_RATIO   1032

/* ---- reading ------------------------------------------------------------------------------ */

void gl_zip_free(gl_zip *z) {
  for (size_t i = 0; i < z->n; i++) free(z->m[i].name);
  free(z->m);
  z->m = NULL;
  z->n = 0;
}

/* The zip64 extra field (id 1) of a central entry: the 8-byte values present are those
** whose 32-bit fields read 0xffffffff, in the order usize, csize, offset. */
static gl_status read_zip64_extra(const uint8_t *p, size_t n, gl_zip_member *m, bool need_u,
                                  bool need_c, bool need_o) {
  while (n >= 4) {
    uint16_t id = gl_rd16(p), sz = gl_rd16(p + 2);
    if ((size_t)sz > n - 4) return gl_fail(GL_EIO, "bad zip (extra field overruns its entry)");
    if (id == 1) {
      const uint8_t *q = p + 4;
      size_t left = sz;
      uint64_t *want[3] = { need_u ? &m->usize : NULL, need_c ? &m->csize : NULL, need_o ? &m->data_off : NULL };
      for (int i = 0; i < 3; i++) {
        if (!want[i]) continue;
        if (left < 8) return gl_fail(GL_EIO, "bad zip (short zip64 extra field)");
        *want[i] = gl_rd64(q);
        q += 8;
        left -= 8;
      }
      return GL_OK;
    }
    p += 4 + sz;
    n -= 4 + (size_t)sz;
  }
  if (need_u || need_c || need_o) return gl_fail(GL_EIO, "bad zip (missing zip64 extra field)");
  return GL_OK;
}

static int by_offset(const void *a, const void *b) {
  const gl_zip_member *x = *(const gl_zip_member *const *)a, *y = *(const gl_zip_member *const *)b;
  return x->data_off < y->data_off ? -1 : x->data_off > y->data_off;
}

gl_status gl_zip_open(const uint8_t *buf, size_t len, gl_zip *z) {
  z->m = NULL;
  z->n = 0;
  if (len < 22) return gl_fail(GL_EIO, len >= 4 && gl_rd32(buf) == SIG_LOCAL ? "truncated zip (no end record)" : "not a zip file (bad magic)");
  /* the end record: last 22 bytes plus a comment of at most 65535 */
  size_t eo = len - 22, stop = len - 22 > 65535 ? len - 22 - 65535 : 0;
  for (;;) {
    if (gl_rd32(buf + eo) == SIG_END && (size_t)gl_rd16(buf + eo + 20) == len - eo - 22) break;
    if (eo == stop) {
      if (gl_rd32(buf) == SIG_LOCAL) return gl_fail(GL_EIO, "truncated zip (no end record)");
      return gl_fail(GL_EIO, "not a zip file (bad magic)");
    }
    eo--;
  }
  const uint8_t *e = buf + eo;
  if (gl_rd16(e + 4) != 0 || gl_rd16(e + 6) != 0) return gl_fail(GL_EIO, "bad zip (multi-disk archives are not supported)");
  uint64_t count = gl_rd16(e + 10), cd_size = gl_rd32(e + 12), cd_off = gl_rd32(e + 16);
  size_t cd_end_limit = eo;
  if (count == 0xffff || cd_size == U32_MAX || cd_off == U32_MAX) {
    if (eo < 20 || gl_rd32(buf + eo - 20) != SIG_LOC64) return gl_fail(GL_EIO, "bad zip (missing zip64 locator)");
    uint64_t o64 = gl_rd64(buf + eo - 20 + 8);
    if (o64 > eo - 20 || eo - 20 - o64 < 56 || gl_rd32(buf + o64) != SIG_END64)
      return gl_fail(GL_EIO, "bad zip (bad zip64 end record)");
    const uint8_t *e64 = buf + o64;
    count = gl_rd64(e64 + 32);
    cd_size = gl_rd64(e64 + 40);
    cd_off = gl_rd64(e64 + 48);
    cd_end_limit = (size_t)o64;
  }
  if (cd_off > cd_end_limit || cd_size > cd_end_limit - cd_off)
    return gl_fail(GL_EIO, "truncated zip (central directory past the end)");
  if (count > cd_size / 46) return gl_fail(GL_EIO, "bad zip (%llu entries cannot fit a %llu-byte directory)",
                                           (unsigned long long)count, (unsigned long long)cd_size);
  z->m = calloc(count ? (size_t)count : 1, sizeof *z->m);
  if (z->m == NULL) return gl_fail(GL_ENOMEM, "out of memory");
  const uint8_t *p = buf + cd_off, *end = p + cd_size;
  gl_status st = GL_OK;
  for (uint64_t i = 0; i < count; i++) {
    if ((size_t)(end - p) < 46 || gl_rd32(p) != SIG_CENTRAL) { st = gl_fail(GL_EIO, "bad zip (bad central directory entry %llu)", (unsigned long long)i + 1); break; }
    uint16_t flags = gl_rd16(p + 8), nlen = gl_rd16(p + 28), xlen = gl_rd16(p + 30), clen = gl_rd16(p + 32);
    if ((size_t)(end - p) - 46 < (size_t)nlen + xlen + clen) { st = gl_fail(GL_EIO, "bad zip (central directory entry %llu overruns)", (unsigned long long)i + 1); break; }
    gl_zip_member *m = &z->m[z->n];
    m->method = gl_rd16(p + 10);
    m->crc = gl_rd32(p + 16);
    m->csize = gl_rd32(p + 20);
    m->usize = gl_rd32(p + 24);
    m->data_off = gl_rd32(p + 42);                  /* the local header's offset, for now */
    st = read_zip64_extra(p + 46 + nlen, xlen, m, m->usize == U32_MAX, m->csize == U32_MAX, m->data_off == U32_MAX);
    if (st != GL_OK) break;
    if (memchr(p + 46, 0, nlen)) { st = gl_fail(GL_EIO, "bad zip (member name with a NUL byte)"); break; }
    m->name = malloc((size_t)nlen + 1);
    if (m->name == NULL) { st = gl_fail(GL_ENOMEM, "out of memory"); break; }
    memcpy(m->name, p + 46, nlen);
    m->name[nlen] = 0;
    z->n++;
    if (flags & 1) { st = gl_fail(GL_EIO, "member '%s': encrypted members are not supported", m->name); break; }
    if (m->method != 0 && m->method != 8) { st = gl_fail(GL_EIO, "member '%s': unsupported compression method %u", m->name, m->method); break; }
    /* the local header: its own name and extra lengths say where the bytes start */
    uint64_t lo = m->data_off;
    if (lo > len || len - lo < 30 || gl_rd32(buf + lo) != SIG_LOCAL) { st = gl_fail(GL_EIO, "member '%s': bad local header", m->name); break; }
    uint64_t start = lo + 30 + gl_rd16(buf + lo + 26) + gl_rd16(buf + lo + 28);
    if (start > len || m->csize > len - start) { st = gl_fail(GL_EIO, "member '%s': truncated data (expected %llu bytes, found %llu)", m->name,
                                                            (unsigned long long)m->csize, (unsigned long long)(start > len ? 0 : len - start)); break; }
    m->data_off = start;
    if (m->method == 0 && m->csize != m->usize) { st = gl_fail(GL_EIO, "member '%s': stored sizes disagree (%llu and %llu)", m->name,
                                                               (unsigned long long)m->csize, (unsigned long long)m->usize); break; }
    if (m->method == 8 && m->usize / MAX_RATIO > m->csize + 1) { st = gl_fail(GL_EIO, "member '%s': size %llu cannot inflate from %llu bytes", m->name,
                                                                              (unsigned long long)m->usize, (unsigned long long)m->csize); break; }
    for (size_t k = 0; k + 1 < z->n; k++)
      if (strcmp(z->m[k].name, m->name) == 0) { st = gl_fail(GL_EIO, "bad zip (member '%s' twice)", m->name); break; }
    if (st != GL_OK) break;
    p += 46 + (size_t)nlen + xlen + clen;
  }
  /* members must not share bytes: overlapping entries would let a small file claim
  ** many times its size in arrays */
  if (st == GL_OK && z->n > 1) {
    gl_zip_member **o = malloc(z->n * sizeof *o);
    if (o == NULL) st = gl_fail(GL_ENOMEM, "out of memory");
    for (size_t i = 0; o && i < z->n; i++) o[i] = &z->m[i];
    if (o) qsort(o, z->n, sizeof *o, by_offset);
    for (size_t i = 1; o && i < z->n && st == GL_OK; i++)
      if (o[i]->data_off < o[i - 1]->data_off + o[i - 1]->csize)
        st = gl_fail(GL_EIO, "bad zip (members '%s' and '%s' overlap)", o[i - 1]->name, o[i]->name);
    free(o);
  }
  if (st != GL_OK) gl_zip_free(z);
  return st;
}

gl_status gl_zip_extract(const uint8_t *buf, size_t len, const gl_zip_member *m,
                         const uint8_t **data, size_t *n, void **owned) {
  *owned = NULL;
  (void)len;                                        /* bounds were checked by gl_zip_open */
  const uint8_t *src = buf + m->data_off;
  if (m->method == 0) {
    if (crc32_z(crc32(0L, Z_NULL, 0), src, (z_size_t)m->csize) != m->crc)
      return gl_fail(GL_EIO, "member '%s': CRC mismatch", m->name);
    *data = src;
    *n = (size_t)m->csize;
    return GL_OK;
  }
  if (m->usize > SIZE_MAX / 2) return gl_fail(GL_EIO, "member '%s': too large", m->name);
  uint8_t *out = malloc((size_t)m->usize + 1);
  if (out == NULL) return gl_fail(GL_ENOMEM, "member '%s': out of memory (%llu bytes)", m->name, (unsigned long long)m->usize);
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) { free(out); return gl_fail(GL_ENOMEM, "zlib: cannot initialise"); }
  uint64_t in_left = m->csize, out_done = 0;
  const uint8_t *in = src;
  int rc = Z_OK;
  /* avail_in/avail_out are 32-bit: feed and drain in chunks */
  while (rc == Z_OK) {
    if (zs.avail_in == 0 && in_left) {
      zs.next_in = (Bytef *)in;
      zs.avail_in = in_left > (1u << 30) ? (1u << 30) : (uInt)in_left;
      in += zs.avail_in;
      in_left -= zs.avail_in;
    }
    uint64_t room = m->usize + 1 - out_done;          /* +1: catch members longer than said */
    zs.next_out = out + out_done;
    zs.avail_out = room > (1u << 30) ? (1u << 30) : (uInt)room;
    uInt before = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    out_done += before - zs.avail_out;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) break;
    if (rc == Z_OK && out_done > m->usize) break;
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || out_done != m->usize) {
    free(out);
    if (rc == Z_DATA_ERROR) return gl_fail(GL_EIO, "member '%s': corrupt deflate data", m->name);
    return gl_fail(GL_EIO, "member '%s': inflated size differs from the directory's %llu bytes", m->name,
                   (unsigned long long)m->usize);
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32_z(crc, out, (z_size_t)out_done);
  if (crc != m->crc) { free(out); return gl_fail(GL_EIO, "member '%s': CRC mismatch", m->name); }
  *data = out;
  *n = (size_t)out_done;
  *owned = out;
  return GL_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

void gl_zipw_init(gl_zipw *w, gl_outfile *out) {
  memset(w, 0, sizeof *w);
  w->out = out;
}

void gl_zipw_free(gl_zipw *w) {
  for (size_t i = 0; i < w->n; i++) free(w->e[i].name);
  free(w->e);
  w->e = NULL;
  w->n = w->cap = 0;
}

/* DOS date 1980-01-01 00:00: archives do not depend on the clock, saves are reproducible. */
#define DOS_TIME 0
#define DOS_DATE 0x21

/* Local header with a zip64 extra field always present (as NumPy's force_zip64 does),
** so sizes can be patched in after deflating without moving any byte. */
/* The 26 bytes the local and the central header share, from "version needed" to the
** extra field's length: zip 4.5, no flags, the method, the fixed time, the CRC, the sizes
** (U32_MAX: in the zip64 field), the lengths of the name and the extra field. */
static void shared_fields(uint8_t *p, const gl_zipw_entry *e, uint32_t csize, uint32_t usize, size_t nlen,
                          size_t xlen) {
  gl_wr16(p, 45);
  gl_wr16(p + 2, 0);
  gl_wr16(p + 4, e->method);
  gl_wr16(p + 6, DOS_TIME);
  gl_wr16(p + 8, DOS_DATE);
  gl_wr32(p + 10, e->crc);
  gl_wr32(p + 14, csize);
  gl_wr32(p + 18, usize);
  gl_wr16(p + 22, (uint16_t)nlen);
  gl_wr16(p + 24, (uint16_t)xlen);
}

static void local_header(uint8_t *h, const gl_zipw_entry *e, size_t nlen) {
  gl_wr32(h, SIG_LOCAL);
  shared_fields(h + 4, e, U32_MAX, U32_MAX, nlen, 20);
}

static void local_extra(uint8_t *x, const gl_zipw_entry *e) {
  gl_wr16(x, 1);
  gl_wr16(x + 2, 16);
  gl_wr64(x + 4, e->usize);
  gl_wr64(x + 12, e->csize);
}

static gl_status deflate_write(gl_zipw *w, z_stream *zs, const void *p, size_t n, int flush, uint64_t *csize) {
  uint8_t chunk[1 << 16];
  const uint8_t *in = p;
  do {
    size_t take = n > (1u << 30) ? (1u << 30) : n;
    zs->next_in = (Bytef *)in;
    zs->avail_in = (uInt)take;
    in += take;
    n -= take;
    int f = n ? Z_NO_FLUSH : flush;
    do {
      zs->next_out = chunk;
      zs->avail_out = sizeof chunk;
      int rc = deflate(zs, f);
      if (rc == Z_STREAM_ERROR) return gl_fail(GL_EIO, "zlib: deflate failed");
      size_t got = sizeof chunk - zs->avail_out;
      GL_TRY(gl_out_write(w->out, chunk, got));
      *csize += got;
    } while (zs->avail_out == 0);
  } while (n);
  return GL_OK;
}

gl_status gl_zipw_add(gl_zipw *w, const char *name, bool deflate_it, const void *head, size_t hlen,
                      const void *data, size_t dlen) {
  size_t nlen = strlen(name);
  if (nlen == 0 || nlen > 65535) return gl_fail(GL_EINVAL, "member name must have 1 to 65535 bytes");
  if (w->n == w->cap) {
    size_t cap = w->cap ? w->cap * 2 : 8;
    gl_zipw_entry *e = realloc(w->e, cap * sizeof *e);
    if (e == NULL) return gl_fail(GL_ENOMEM, "out of memory");
    w->e = e;
    w->cap = cap;
  }
  gl_zipw_entry *e = &w->e[w->n];
  memset(e, 0, sizeof *e);
  e->name = malloc(nlen + 1);
  if (e->name == NULL) return gl_fail(GL_ENOMEM, "out of memory");
  memcpy(e->name, name, nlen + 1);
  w->n++;
  e->method = deflate_it ? 8 : 0;
  e->usize = (uint64_t)hlen + dlen;
  e->off = w->out->pos;
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32_z(crc, head, hlen);
  if (dlen) crc = crc32_z(crc, data, dlen);
  e->crc = (uint32_t)crc;
  if (!deflate_it) e->csize = e->usize;
  uint8_t h[30], x[20];
  local_header(h, e, nlen);
  local_extra(x, e);
  GL_TRY(gl_out_write(w->out, h, 30));
  GL_TRY(gl_out_write(w->out, name, nlen));
  uint64_t extra_at = w->out->pos;
  GL_TRY(gl_out_write(w->out, x, 20));
  if (!deflate_it) {
    GL_TRY(gl_out_write(w->out, head, hlen));
    return gl_out_write(w->out, data, dlen);
  }
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return gl_fail(GL_ENOMEM, "zlib: cannot initialise");
  gl_status st = deflate_write(w, &zs, head, hlen, Z_NO_FLUSH, &e->csize);
  if (st == GL_OK) st = deflate_write(w, &zs, data, dlen, Z_FINISH, &e->csize);
  deflateEnd(&zs);
  if (st != GL_OK) return st;
  local_extra(x, e);
  return gl_out_patch(w->out, extra_at, x, 20);
}

gl_status gl_zipw_finish(gl_zipw *w) {
  uint64_t cd_off = w->out->pos;
  for (size_t i = 0; i < w->n; i++) {
    const gl_zipw_entry *e = &w->e[i];
    bool bu = e->usize >= U32_MAX, bc = e->csize >= U32_MAX, bo = e->off >= U32_MAX;
    uint8_t x[28];
    size_t xl = 0;
    if (bu || bc || bo) {
      xl = 4;
      if (bu) { gl_wr64(x + xl, e->usize); xl += 8; }
      if (bc) { gl_wr64(x + xl, e->csize); xl += 8; }
      if (bo) { gl_wr64(x + xl, e->off); xl += 8; }
      gl_wr16(x, 1);
      gl_wr16(x + 2, (uint16_t)(xl - 4));
    }
    size_t nlen = strlen(e->name);
    uint8_t h[46];
    gl_wr32(h, SIG_CENTRAL);
    gl_wr16(h + 4, 45 | (3 << 8));          /* made by: unix, zip 4.5 */
    shared_fields(h + 6, e, bc ? U32_MAX : (uint32_t)e->csize, bu ? U32_MAX : (uint32_t)e->usize, nlen, xl);
    gl_wr16(h + 32, 0);
    gl_wr16(h + 34, 0);
    gl_wr16(h + 36, 0);
    gl_wr32(h + 38, 0644u << 16);
    gl_wr32(h + 42, bo ? U32_MAX : (uint32_t)e->off);
    GL_TRY(gl_out_write(w->out, h, 46));
    GL_TRY(gl_out_write(w->out, e->name, nlen));
    GL_TRY(gl_out_write(w->out, x, xl));
  }
  uint64_t cd_size = w->out->pos - cd_off, end64 = w->out->pos;
  bool z64 = w->n >= 0xffff || cd_size >= U32_MAX || cd_off >= U32_MAX;
  if (z64) {
    uint8_t r[56], l[20];
    gl_wr32(r, SIG_END64);
    gl_wr64(r + 4, 44);
    gl_wr16(r + 12, 45);
    gl_wr16(r + 14, 45);
    gl_wr32(r + 16, 0);
    gl_wr32(r + 20, 0);
    gl_wr64(r + 24, w->n);
    gl_wr64(r + 32, w->n);
    gl_wr64(r + 40, cd_size);
    gl_wr64(r + 48, cd_off);
    gl_wr32(l, SIG_LOC64);
    gl_wr32(l + 4, 0);
    gl_wr64(l + 8, end64);
    gl_wr32(l + 16, 1);
    GL_TRY(gl_out_write(w->out, r, 56));
    GL_TRY(gl_out_write(w->out, l, 20));
  }
  uint8_t d[22];
  gl_wr32(d, SIG_END);
  gl_wr16(d + 4, 0);
  gl_wr16(d + 6, 0);
  gl_wr16(d + 8, z64 ? 0xffff : (uint16_t)w->n);
  gl_wr16(d + 10, z64 ? 0xffff : (uint16_t)w->n);
  gl_wr32(d + 12, z64 ? U32_MAX : (uint32_t)cd_size);
  gl_wr32(d + 16, z64 ? U32_MAX : (uint32_t)cd_off);
  gl_wr16(d + 20, 0);
  GL_TRY(gl_out_write(w->out, d, 22));
  return gl_out_commit(w->out);
}

/*
** fuzz_safetensors.c — libFuzzer target for the safetensors parser and its JSON reader
** (src/core/safetensors.c); a parsed file must also write back and parse again.
*/
#include <stdlib.h>
#include <string.h>
#include "core/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gl_safetensors s;
  if (gl_st_parse(data, size, &s) != GL_OK) return 0;
  uint64_t sum = 0;
  for (size_t i = 0; i < s.nt; i++) {
    if (s.t[i].end > s.data_len) abort();
    for (uint64_t k = s.t[i].begin; k < s.t[i].end; k++) sum += s.data[k];
  }
  uint8_t *hdr;
  size_t hlen;
  if (gl_st_header(&hdr, &hlen, s.t, s.nt, s.meta, s.nmeta) == GL_OK) {
    size_t total = hlen + s.data_len;
    uint8_t *file = malloc(total + 1);
    if (file) {
      memcpy(file, hdr, hlen);
      /* tensors are laid out in header order when written: copy them that way */
      size_t at = hlen;
      for (size_t i = 0; i < s.nt; i++) {
        uint64_t n = (uint64_t)s.t[i].size * gl_dtypes[s.t[i].dtype].size;
        memset(file + at, 0, n);
        at += n;
      }
      gl_safetensors back;
      if (at != total || gl_st_parse(file, total, &back) != GL_OK || back.nt != s.nt || back.nmeta != s.nmeta) abort();
      gl_st_free(&back);
      free(file);
    }
    free(hdr);
  }
  gl_st_free(&s);
  return sum == UINT64_MAX;   /* keeps the reads */
}

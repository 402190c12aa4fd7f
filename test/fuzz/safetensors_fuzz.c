/* Fuzz target for the checkpoint reader: the bytes are a safetensors file image, fed to
 * prt_safetensors_parse, the same function prt_checkpoint_load runs on the first 8 + header
 * length bytes of a file (the header length, the JSON header, the names, the data_offsets
 * layout). Whatever the input, the parse must return (a status, never a crash, an overflow or
 * a hang), leak nothing, and on success hand back a header whose every name the binary search
 * finds again. Each tensor of a dtype Piper reads (F32, BF16, F16) is then converted to fp32
 * from its bytes, as prt_safetensors_read converts them, so the converters meet arbitrary bit
 * patterns and offsets (a tensor whose byte count is not a whole number of elements is one
 * prt_check_entry refuses: skipped).
 * Built by test/fuzz/CMakeLists.txt (with the runtime instrumented in the fuzz tree); seeds
 * in corpus/safetensors: valid, truncated, overlapping, junk, huge header length, BF16 and
 * F16 tensors (special values, an odd byte count, an unknown dtype), ...
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prt_internal.h"

/* Converts every tensor of a known dtype in the data section at `sec` (the parse checked that
 * each lies inside it) to fp32, a chunk at a time. */
static void convert_all(const prt_st_header *h, const uint8_t *sec) {
  float out[256];
  for (int64_t j = 0; j < h->n; j++) {
    const prt_st_in *t = &h->ts[j];
    if (!t->type || (t->end - t->begin) % t->type->size) continue;
    uint64_t n = (t->end - t->begin) / t->type->size;
    for (uint64_t i = 0; i < n; i += 256) {
      size_t k = n - i < 256 ? (size_t)(n - i) : 256;
      t->type->load(sec + t->begin + i * t->type->size, out, k);
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  prt_status st = {0};
  prt_st_header h;
  /* the whole input is there: avail == size */
  if (prt_safetensors_parse(data, size, size, "fuzz-input.safetensors", &h, &st) == 0) {
    for (int64_t j = 0; j < h.n; j++)
      if (prt_st_header_find(&h, h.ts[j].name) != &h.ts[j]) abort(); /* sorted, unique */
    uint64_t hlen;
    memcpy(&hlen, data, 8); /* parse succeeded: the 8 bytes and the header are there */
    convert_all(&h, data + 8 + hlen);
    prt_st_header_free(&h);
  } else if (!st.code || !st.msg[0]) {
    abort(); /* a failure always says why */
  }
  return 0;
}

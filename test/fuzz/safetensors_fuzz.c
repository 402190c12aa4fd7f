/* Fuzz target for the checkpoint reader: the bytes are a safetensors file image, fed to
 * prt_safetensors_parse, the same function prt_checkpoint_load runs on the first 8 + header
 * length bytes of a file (the header length, the JSON header, the names, the data_offsets
 * layout). Whatever the input, the parse must return (a status, never a crash, an overflow or
 * a hang), leak nothing, and on success hand back a header whose every name the binary search
 * finds again.
 * Built by test/fuzz/CMakeLists.txt (with the runtime instrumented in the fuzz tree); seeds
 * in corpus/safetensors: valid, truncated, overlapping, junk, huge header length, ...
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "prt_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  prt_status st = {0};
  prt_st_header h;
  /* the whole input is there: avail == size */
  if (prt_safetensors_parse(data, size, size, "fuzz-input.safetensors", &h, &st) == 0) {
    for (int64_t j = 0; j < h.n; j++)
      if (prt_st_header_find(&h, h.ts[j].name) != &h.ts[j]) abort(); /* sorted, unique */
    prt_st_header_free(&h);
  } else if (!st.code || !st.msg[0]) {
    abort(); /* a failure always says why */
  }
  return 0;
}

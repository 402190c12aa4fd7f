/* Fuzz target: the training binary's command line (prt_parse_args).
 *
 * Input: the arguments, separated by NUL bytes (argv[0] is supplied). Whatever they are, the
 * parse must return without crashing, touching a file or printing, and a refusal must say
 * why with exit code 2 (a bad command line); an accepted command line must hold values the
 * rest of the run relies on (steps and counts not negative, log_every at least 1, a
 * --save-dtype the writer has a converter for). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prt_internal.h"

enum { MAX_ARGS = 64 }; /* more arguments add nothing the first 64 do not exercise */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) abort();
  memcpy(text, data, size);
  text[size] = 0;
  char *argv[MAX_ARGS + 2] = {"train"};
  int argc = 1;
  for (char *p = text; p < text + size && argc <= MAX_ARGS; p += strlen(p) + 1) argv[argc++] = p;
  argv[argc] = NULL;
  prt_opts o;
  prt_status st = {0};
  if (prt_parse_args(argc, argv, &o, &st) != 0) {
    if (st.code != 2 || !st.msg[0]) abort(); /* a refusal is a bad command line, said */
  } else if (o.steps < 0 || o.ckpt_every < 0 || o.log_every < 1 || !(o.timeout >= 0) ||
             !o.save_dtype || !o.save_dtype->store) { /* the final save's dtype is writable */
    abort(); /* accepted, but a value the run would misuse */
  }
  free(text);
  return 0;
}

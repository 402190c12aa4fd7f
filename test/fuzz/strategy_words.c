/* Prints the strategy fuzzer's dictionary words that the directive list
 * (include/piper/directives.def) holds: each directive's JSON "op" value and sched op name, and
 * each field's JSON key, one libFuzzer dictionary entry a line. The build writes them, then
 * test/fuzz/strategy.dict (tags, values, whole directives), to <build>/fuzz/strategy.dict,
 * which `make fuzz` (test/fuzz/run.sh) hands the strategy fuzzer. */
#include <stdio.h>
#include <string.h>

#define FIELD(n, KIND, REQ) #n,
#define DIRECTIVE(ID, n, applied, fields) {#n, {fields NULL}},
static const struct {
  const char *name;
  const char *fields[16];
} directives[] = {
#include "piper/directives.def"
};

int main(void) {
  printf("# generated from include/piper/directives.def by test/fuzz/strategy_words.c\n");
  printf("\"\\\"op\\\"\"\n");
  const char *seen[256];
  int nSeen = 0;
  for (size_t d = 0; d < sizeof directives / sizeof directives[0]; ++d) {
    printf("\"\\\"%s\\\"\"\n\"sched.%s\"\n", directives[d].name, directives[d].name);
    for (int f = 0; directives[d].fields[f]; ++f) {
      int dup = 0;
      for (int s = 0; s < nSeen && !dup; ++s) dup = !strcmp(seen[s], directives[d].fields[f]);
      if (dup || nSeen == 256) continue;
      seen[nSeen++] = directives[d].fields[f];
      printf("\"\\\"%s\\\"\"\n", directives[d].fields[f]);
    }
  }
  return 0;
}

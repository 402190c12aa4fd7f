/* main() of a Piper training binary: the object emitted by piper-compile defines
 * piper_setup and piper_step; everything else is prt_main. Built as its own library
 * (piper_rt_main) so tests can link piper_rt without a main. */
#include "piper/runtime.h"

extern void piper_setup(prt_ctx *ctx);
extern void piper_step(prt_ctx *ctx);
/* The forward-only step (--eval-every); weak: an object without one still links, and then
 * --eval-every says the plan has no evaluation step. */
extern void piper_eval_step(prt_ctx *ctx) __attribute__((weak));

int main(int argc, char **argv) {
  prt_set_eval_step(piper_eval_step);
  return prt_main(argc, argv, piper_setup, piper_step);
}

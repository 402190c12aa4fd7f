/* main() of a Piper training binary: the object emitted by piper-compile defines
 * piper_setup and piper_step; everything else is prt_main. Built as its own library
 * (piper_rt_main) so tests can link piper_rt without a main. */
#include "piper/runtime.h"

extern void piper_setup(prt_ctx *ctx);
extern void piper_step(prt_ctx *ctx);

int main(int argc, char **argv) { return prt_main(argc, argv, piper_setup, piper_step); }

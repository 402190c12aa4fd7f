/* The cuDNN seam (runtime/kernels/cuda_cudnn.c) as the warm-up would call it: the attention
 * engine's choice and its one line, and what prt_cudnn_open says, wherever cuDNN loads or not
 * (test/gpu/cudnn-fallback.test). No GPU needed: without one, cudnnCreate is what fails. */
#include <stdio.h>

#include "kernels/cuda_cudnn.h"

int main(void) {
  char why[1024];
  prt_cudnn *c = prt_cudnn_open(why, sizeof why);
  if (c) {
    printf("opened: cuDNN %zu from %s\n", prt_cudnn_version(c), prt_cudnn_path(c));
    prt_cudnn_close(c);
  } else {
    printf("not opened: %s\n", why);
  }
  fflush(stdout);
  prt_cudnn *engine = prt_cudnn_attention_engine();
  printf("engine: %s\n", engine ? "cudnn" : "piper");
  prt_cudnn_close(engine);
  return 0;
}

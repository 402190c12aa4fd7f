/* cuDNN, found at run time (issue 34): the engine the GPU attention can use in place of piper's
 * own kernels (kernels/cuda_fa2.cu), as XLA and llm.c reach cuDNN's fused attention on Hopper.
 * libcudnn.so.9 is loaded with dlopen, never linked, so a --target cuda binary starts where
 * there is none. Standalone for now: no plan calls it.
 *
 * Where it looks, in order: PIPER_CUDNN (the library file, or the folder holding
 * libcudnn.so.9), the system's loader (LD_LIBRARY_PATH, ld.so.cache), then the nvidia/cudnn/lib
 * folder of an installed PyTorch (its pip wheels carry cuDNN: site-packages and dist-packages
 * under /usr/local/lib, /usr/lib, /opt/conda/lib, $VIRTUAL_ENV/lib and ~/.local/lib). */
#ifndef PIPER_PRT_KERNELS_CUDA_CUDNN_H
#define PIPER_PRT_KERNELS_CUDA_CUDNN_H

#include <stddef.h>

typedef struct prt_cudnn prt_cudnn;

/* Loads libcudnn.so.9, resolves the calls piper uses (the handle's and the backend API's) and
 * creates a handle on the current CUDA device. NULL on any failure, with `why` (n bytes, NUL
 * terminated) saying what failed and where it looked. */
prt_cudnn *prt_cudnn_open(char *why, size_t n);
void prt_cudnn_close(prt_cudnn *c);

/* cudnnGetVersion of the loaded library (91900 for 9.19.0), and the file it came from. */
size_t prt_cudnn_version(const prt_cudnn *c);
const char *prt_cudnn_path(const prt_cudnn *c);

/* The warm-up's choice of the attention engine: cuDNN's fused attention when libcudnn.so.9
 * loads, a handle opens and the attention graph builds for the call; otherwise NULL, after one
 * line on stderr ("piper: attention: WHY; using piper's own kernels (kernels/cuda_fa2.cu)").
 * Not yet: the attention graph itself (the backend descriptors of causal SDPA, forward and
 * backward), so for now the answer is always NULL, with what did load named in the line. */
prt_cudnn *prt_cudnn_attention_engine(void);

#endif

/* The multi-tensor tables of the GPU target's optimizer and gradient norm, written once: the
 * host fills them (runtime/kernels/cuda.c: prt_cuda_adamw, prt_cuda_grad_sq_accum) and the
 * device kernels read them (lowering/gpu_kernels.c: adamw_multi, sumsq_chunks, whose MLIR text
 * takes its field offsets from the numbers below). Plain C, no CUDA or MLIR: both sides
 * include it. */
#ifndef PIPER_GPU_TABLES_H
#define PIPER_GPU_TABLES_H

#include <stddef.h>
#include <stdint.h>

/* One entry of a table: PRT_TABLE_CHUNK elements (or the tensor's last, shorter piece) of one
 * tensor, device pointers as integers; PRT_CHUNK_FIELDS int64 in this order. */
#define PRT_CHUNK_P 0      /* the parameter (AdamW) */
#define PRT_CHUNK_G 1      /* its gradient (AdamW and the norm) */
#define PRT_CHUNK_M 2      /* AdamW's first moment */
#define PRT_CHUNK_V 3      /* and second */
#define PRT_CHUNK_START 4  /* the chunk's first element in its tensor */
#define PRT_CHUNK_LEN 5    /* its element count */
#define PRT_CHUNK_DECAY 6  /* AdamW: != 0 applies weight decay */
#define PRT_CHUNK_GROUP 7  /* AdamW: the row of its scalars (PRT_ADAM_*) */
#define PRT_CHUNK_P16 8    /* AdamW: the parameter's bf16 copy, written with it; 0: none */
#define PRT_CHUNK_FIELDS 9
typedef struct {
  int64_t p, g, m, v, start, len, decay, group, p16;
} prt_tensor_chunk;
_Static_assert(sizeof(prt_tensor_chunk) == PRT_CHUNK_FIELDS * sizeof(int64_t),
               "prt_tensor_chunk: one int64 a field, no padding");
_Static_assert(offsetof(prt_tensor_chunk, p) == PRT_CHUNK_P * 8, "PRT_CHUNK_P");
_Static_assert(offsetof(prt_tensor_chunk, g) == PRT_CHUNK_G * 8, "PRT_CHUNK_G");
_Static_assert(offsetof(prt_tensor_chunk, m) == PRT_CHUNK_M * 8, "PRT_CHUNK_M");
_Static_assert(offsetof(prt_tensor_chunk, v) == PRT_CHUNK_V * 8, "PRT_CHUNK_V");
_Static_assert(offsetof(prt_tensor_chunk, start) == PRT_CHUNK_START * 8, "PRT_CHUNK_START");
_Static_assert(offsetof(prt_tensor_chunk, len) == PRT_CHUNK_LEN * 8, "PRT_CHUNK_LEN");
_Static_assert(offsetof(prt_tensor_chunk, decay) == PRT_CHUNK_DECAY * 8, "PRT_CHUNK_DECAY");
_Static_assert(offsetof(prt_tensor_chunk, group) == PRT_CHUNK_GROUP * 8, "PRT_CHUNK_GROUP");
_Static_assert(offsetof(prt_tensor_chunk, p16) == PRT_CHUNK_P16 * 8, "PRT_CHUNK_P16");

/* The elements one entry covers. */
#define PRT_TABLE_CHUNK 16384

/* adamw_multi's scalars: a row of PRT_ADAM_SCALARS floats per (beta1, beta2, eps) group, the
 * step's values (prt_adam_scalars_of, computed on the host as the CPU's prt_adamw does). */
#define PRT_ADAM_BETA1 0
#define PRT_ADAM_BETA2 1
#define PRT_ADAM_EPS 2
#define PRT_ADAM_KEEP 3    /* 1 - lr wd */
#define PRT_ADAM_OMB1 4    /* 1 - beta1 */
#define PRT_ADAM_OMB2 5    /* 1 - beta2 */
#define PRT_ADAM_BC2S 6    /* sqrt(1 - beta2^t) */
#define PRT_ADAM_NEGSTEP 7 /* -lr / (1 - beta1^t) */
#define PRT_ADAM_SCALARS 8

/* A field number as the text the kernels' MLIR spells it in: PRT_GPU_STR(PRT_CHUNK_G) is "1" */
#define PRT_GPU_STR_(x) #x
#define PRT_GPU_STR(x) PRT_GPU_STR_(x)

#endif

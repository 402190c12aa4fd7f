/* What the lowering files share (internal to lowering/): where each tensor lives, the ids of
 * communicator groups and streams, and the state of lowering one device function.
 * Each file uses only those above it in this list, so the calls between them form no circle:
 *   target.c         the target records (include/piper/target.h) and their kernel columns;
 *                    the CUDA record names emit_ptx.c's code generator (no call back)
 *   kernel_policy.c  the kernel an op calls under the bf16 policy and its bf16 parameters
 *   memory_plan.c    liveness-based arena layout, ZeRO shard geometry, the bf16 conversions
 *                    each kernel call needs and their scratch
 *   lower_common.c   piper_step's helpers: pointers to values, constants, kernel calls
 *   lower_compute.c  tdag op -> runtime kernel call
 *   lower_comm.c     comm op -> nonblocking runtime transfer; comm.wait -> prt_wait
 *   lower_to_llvm.c  the pass: piper_setup, piper_step, the rank dispatch */
#ifndef PIPER_LOWERING_LOWERING_H
#define PIPER_LOWERING_LOWERING_H

#include "lowering/llvm_builder.h"
#include "piper/ops.h"
#include "piper/target.h"

enum { ALIGN = 64 };
/* The most parameters a kernel of the list takes (moe_expert_bwd_weight has 14), with room for
 * the NUL of the letter strings kernel_policy.c and lower_common.c make of them (checked at
 * compile time in lower_common.c). */
enum { LW_MAX_KERNEL_PARAMS = 16 };

/* Where one tensor value lives. */
typedef struct {
  int64_t tensorId;  /* prt_declare_tensor id, or -1 for an arena value */
  int64_t offset;    /* byte offset in the arena (arena values) */
  int64_t bytes;     /* size, rounded up to ALIGN */
  size_t lastUse;    /* index of the last op reading it (its def if unread) */
  bool gradient;     /* a weight gradient (or a sum or bucket of them), else an activation */
  MlirValue ptr;     /* the llvm pointer, once materialised in piper_step */
} Buffer;

/* A communicator group: the op's `group` (device array), or in a plan per role with
 * group_stride S a group family, replica k's instance being `members` + k * S. */
typedef struct {
  MlirAttribute members;
  int64_t familyStride; /* S, 0 for a plain group */
} PlanGroup;

/* What every device function of the module shares. The tables grow (piperGrow): a plan for
 * thousands of devices has thousands of groups, and a strategy may name any number of streams. */
typedef struct {
  PlanGroup *groups;         /* communicator groups, id = index; owned array */
  size_t nGroups, capGroups; /* used, allocated */
  PiperPtrMap groupOf;       /* key attribute ptr (uniqued by MLIR: the group, or [group, S]
                                for a family) -> id, O(1) lookup */
  char **streams;            /* stream names, id = index; 0 is "compute"; owned strings */
  size_t nStreams, capStreams; /* used, allocated */
  PiperPtrMap declared;      /* llvm functions declared or defined so far (see lbInitShared) */
  const PiperTarget *target; /* the module's piper.target: which kernel column ops call, what
                                piper_setup calls first (include/piper/target.h) */
  bool p2pFifo;              /* piper.p2p_order = "fifo" (--piper-order-p2p): each plan declares
                                its peers, so NCCL may carry its send/recv */
} Shared;

/* How a kernel's operand or result crosses the bf16 policy's boundary (passes/precision.c):
 * every kernel computes in fp32, so a bf16 operand is widened into fp32 scratch, a matmul's
 * fp32 weight rounded to bf16 values in fp32 scratch, and a bf16 result written by the kernel
 * into fp32 scratch then narrowed into its buffer; except where the kernel loads and stores
 * bf16 itself (lwValueInOwnPrecision: FP_IN / FP_OUT on a bf16Io target), whose values cross
 * as they are. */
typedef enum {
  LW_CONV_NONE,   /* the kernel reads or writes the value's own buffer */
  LW_CONV_WIDEN,  /* bf16 operand -> prt_bf16_widen into scratch before the call */
  LW_CONV_ROUND,  /* fp32 matmul weight -> prt_bf16_round into scratch before the call */
  LW_CONV_NARROW, /* bf16 result: the kernel writes scratch, prt_bf16_narrow after it */
  LW_CONV_NARROW_IN, /* fp32 matmul weight to a bf16 parameter: prt_bf16_narrow into scratch
                        (reserved at 4 bytes an element, as every conversion's) */
} LwConversion;

/* A parameter's bf16 copy (prt_declare_bf16_copy) under bf16Io: the matmul weight a BF16_IN
 * parameter reads, which the plan's AdamW rounds into the copy as it updates the parameter
 * (one narrow a weight a step, where converting at the call narrowed it at every matmul). */
typedef struct {
  MlirValue param;  /* the tdag.param result */
  int64_t tensorId; /* the copy's declared tensor id (after every other tensor's) */
  MlirValue ptr;    /* its pointer, materialised on first use in each function (or null) */
} Bf16Copy;

/* The fp32 scratch of the op whose kernel call is being built (lwConvertBegin/End). */
typedef struct {
  MlirOperation op;    /* that op, or null between ops */
  MlirValue *in, *out; /* per operand / result: its scratch pointer, or null (own buffer);
                          owned, sized by the op's operand / result counts */
} Conversions;

typedef struct {
  MlirOperation func;   /* the tdag function being lowered */
  Shared *shared;       /* groups and streams of the module */
  MlirOperation *ops;   /* its ops in program order */
  size_t nOps;
  Buffer *bufs;         /* one per tensor value */
  size_t nBufs;
  PiperPtrMap bufOf;    /* value ptr -> index into bufs (in-place results share one) */
  PiperPtrMap viewOffset; /* tdag.view result ptr -> its byte offset into the shared buffer */
  PiperPtrMap outputId; /* tdag.output op ptr -> its declared tensor id */
  int64_t nTensors;     /* declared tensors */
  int64_t arenaBytes;   /* planned peak */
  int64_t peakActivations, peakGradients; /* each class's own peak bytes in the arena */
  LlvmBuilder lb;
  MlirValue ctxArg;     /* piper_step's ctx */
  MlirValue arena;      /* prt_arena(ctx) in piper_step */
  PiperPtrMap handleOf; /* comm token ptr -> its i64 handle value (0: already complete) */
  size_t normAt;        /* index into ops where the gradient norm is taken (placeGradNorm) */
  bool role;            /* a plan per role (piper.role): k-dependent values are read at run
                           time from the rank's replica index (prt_replica_affine) */
  bool failed;          /* a kernel call was refused (lwCallKernel); its diagnostic is out */
  bool bf16;            /* the module's piper.precision is "bf16": matmul weights are rounded */
  bool bf16Io;          /* bf16 and the target's kernels read and write bf16 themselves
                           (PiperTarget.bf16Io) unless the module says piper.bf16_io =
                           "convert" (piper-compile --bf16-io convert): then the lowering
                           converts around every call, as for the CPU target */
  PiperPtrMap bf16Ptr;  /* llvm pointer values that point at bf16 data (lwIn, lwOut,
                           lwOffsetElems): the bits of each kernel call's bf16 mask */
  Bf16Copy *copies;     /* the parameters whose bf16 copy the plan keeps (lwPlanMemory);
                           owned */
  size_t nCopies, capCopies;
  int64_t workspace;    /* bytes of fp32 scratch at arena offset scratchAt: the most one op's
                           conversions need (counted in arenaBytes, not as activations) */
  int64_t scratchAt;    /* where the scratch starts: the end of the planned tensors */
  Conversions conv;     /* the current op's scratch pointers */
  PiperPtrMap epilogue; /* op ptr -> its partner's index in ops, + 1 for the later op of a
                           pair lowered as one call (lwPairEpilogues), which makes the call;
                           -(index + 1) for the earlier, which emits nothing */
} Lowering;

/* ZeRO shard geometry of an op with `shards` (R) and `shard` (k) over a tensor of n elements:
 * shards of c = ceil(n/R), this one at offset k*c with len elements (0 past the end). */
typedef struct {
  int64_t n, R, k, c, offset, len;
} Shard;

int64_t lwRoundUp(int64_t n);
Buffer *lwBufferOf(Lowering *L, MlirValue v);
/* param, adam_state, input: storage the runtime owns and prt_declare_tensor names */
bool lwDeclaresTensor(MlirOperation op);
/* Lays out the arena; false if a size or offset would overflow int64 (nothing usable). */
bool lwPlanMemory(Lowering *L);
Shard lwShardOf(MlirOperation op, int64_t n);
/* This replica's shard for the emitted code: its offset in units of elemBytes bytes and its
 * length in elements; constants in a device's plan, computed from the replica index k at run
 * time in a role's plan (offset k * c, length min(c, n - k * c) clamped at 0: the last shard
 * may be shorter or empty). */
void lwShardValues(Lowering *L, MlirValue ctx, Shard sh, int64_t elemBytes, MlirValue *offset,
                   MlirValue *len);
int64_t lwGatherElems(MlirOperation op);
/* The conversion operand (result = false) or result #i of `op` needs at its kernel call. */
void lwPairEpilogues(Lowering *L);
LwConversion lwConversionOf(const Lowering *L, MlirOperation op, bool result, intptr_t i);
/* The bf16 copy of parameter value v, or NULL where the plan keeps none. */
Bf16Copy *lwBf16CopyOf(const Lowering *L, MlirValue v);
/* Its pointer (marked bf16), or a null pointer marked bf16 where v has no copy: the adamw
 * kernel's p16 and a BF16_IN weight argument. */
MlirValue lwBf16CopyPtr(Lowering *L, MlirValue v);
/* kernel_policy.c: the kernel op calls: its op-facts row's, or under the bf16 policy its
 * bf16Kernel, unless that kernel takes a bf16 parameter where op has an fp32 operand the policy
 * does not round. */
prt_kernel_id lwPolicyKernel(const Lowering *L, MlirOperation op);
/* Whether op's operand i is passed to a bf16 parameter of that kernel (BF16_IN). */
bool lwOperandIsBf16Param(const Lowering *L, MlirOperation op, intptr_t i);
/* Whether op's result (result = true) or operand #i goes to an FP_OUT / FP_IN parameter of
 * that kernel on a target whose kernels read and write bf16 themselves (L->bf16Io): the
 * kernel then gets the value's own buffer in its own precision, with no conversion. */
bool lwValueInOwnPrecision(const Lowering *L, MlirOperation op, bool result, intptr_t i);
bool lwIsShardedParam(MlirValue v);
/* Whether `g` is a reduce-scattered gradient (this replica's shard): a comm.reduce_scatter's
 * result, or the tdag.cast that widens a bf16 one back to fp32 (--grad-reduce bf16). */
bool lwIsReduceScattered(MlirValue g);

/* The type of operand i of op. */
static inline MlirType lwInType(MlirOperation op, intptr_t i) {
  return mlirValueGetType(mlirOperationGetOperand(op, i));
}

/* lower_common.c: piper_step helpers: pointers to values (materialised on first use),
 * constants, calls */
MlirValue lwPtrOf(Lowering *L, MlirValue v);
MlirValue lwIn(Lowering *L, MlirOperation op, intptr_t i);
MlirValue lwOut(Lowering *L, MlirOperation op, intptr_t i);
MlirValue lwI64(Lowering *L, int64_t v);
/* p advanced by `elems` elements of what it points at: 2 bytes for a pointer lwIn / lwOut
 * gave to bf16 data (its mark carries over), 4 for fp32 (kernels see fp32 buffers where the
 * lowering converted a bf16 value). */
MlirValue lwOffsetElems(Lowering *L, MlirValue p, int64_t elems);
/* Marks p as pointing at bf16 data (a declared tensor's pointer the rule fetched itself). */
void lwMarkBf16(Lowering *L, MlirValue p);
/* A call of runtime function `fn` returning void, declared from the arguments' types. */
void lwCall(Lowering *L, const char *fn, intptr_t n, const MlirValue *args);
/* The target's function for kernel `k` of the kernel list, or NULL where it has none. */
const char *lwKernelName(const Lowering *L, prt_kernel_id k);
/* The runtime function serving `op` on the module's target (its row's kernel); NULL where the
 * op is storage only, or has no kernel on that target. */
const char *lwKernelOf(const Shared *sh, MlirOperation op);
/* A call of kernel `k` on the module's target with `n` arguments, which must be the kernel
 * list's (include/piper/kernels.def) in number and type; otherwise an error at `at` (a rule
 * of lower_compute.c that disagrees with the list: a compiler defect) and L->failed. */
void lwCallKernel(Lowering *L, MlirOperation at, prt_kernel_id k, intptr_t n,
                  const MlirValue *args);

int64_t lwStreamOf(Lowering *L, MlirOperation op);
int64_t lwGroupOf(Lowering *L, MlirOperation op);
void lwLowerCompute(Lowering *L, MlirOperation op);
/* Around one op's kernel call(s): widen / round its operands into scratch (lwIn then returns
 * the scratch) and give its bf16 results scratch (lwOut); then narrow those into their
 * buffers. No-ops for an op that converts nothing (every op of an fp32 plan). */
void lwConvertBegin(Lowering *L, MlirOperation op);
void lwConvertEnd(Lowering *L, MlirOperation op);
/* The --grad-clip norm term of one tdag.adamw (see lower_compute.c). */
void lwLowerGradSq(Lowering *L, MlirOperation op);
void lwLowerComm(Lowering *L, MlirOperation op);

#endif

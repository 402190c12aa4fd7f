/* The GPU target's device kernels, written in the gpu dialect as MLIR text templates that
 * emit_ptx.c parses and lowers (upstream convert-gpu-to-nvvm, then NVPTX through the LLVM C
 * API). Text rather than C API builder calls: a kernel reads as the MLIR it is (the form the
 * upstream passes document and shared/examples/gpu-smoke verified on an H100), a reviewer
 * can check it line by line against the CPU kernel it mirrors (runtime/kernels/cpu.c), and
 * FileCheck tests see the same text. Nothing in a kernel depends on the plan's shapes:
 * sizes are arguments, so one module serves every plan and the PTX is a pure function of
 * which runtime functions the plan calls.
 *
 * Conventions. Pointers are bare !llvm.ptr (device addresses from the arena or a declared
 * tensor; a memref argument would expand to five values per buffer), sizes are i64, one
 * thread per output element, per row, or per (chunk of rows, column) for sums over rows (the
 * grid is ceil(threads / 256) blocks of 256, chosen by the host launcher in
 * runtime/kernels/cuda.c). Each kernel does the CPU kernel's arithmetic in the same order
 * (f64 accumulators where the CPU has them; sums over rows associated by chunks), so the two
 * targets agree to float rounding (test/gpu/gpu-kernels-emu.test runs these kernels on the
 * host against the CPU's). exp, tanh and log are the helpers below (polynomials in arith
 * ops): no libdevice, so piper-compile needs no CUDA toolkit. A kernel is written as
 * KERNEL(name, arguments, sizing, bound, body), `name` a PRT_DEVICE_KERNEL of the kernel list
 * (include/piper/kernels.def; its entry point is piper_<name>): the macro writes what every
 * kernel has (the header, the thread index, the bounds check, the return), and the fragments
 * before the table what several share, so that each states only its own lines; the text is the
 * same as if written out.
 *
 * Which kernels a plan needs: the runtime functions its host code calls (the op table's kernel
 * column through the GPU target's names) map to device kernels through the kernel list's
 * `launches` column (`uses` below); matmuls (cuBLAS, cuBLASLt), attention and the norms'
 * rows (runtime/kernels/cuda_attention.cu, cuda_norms.cu: they need warp shuffles) need none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piper/gpu_tables.h"
#include "piper/kernels.h"
#include "piper/piper.h"
#include "piper/target.h"

/* Global thread index %i (i64) in a 1-D grid. */
#define TID                                                                                \
  "    %tid_b = gpu.block_id x\n"                                                          \
  "    %tid_d = gpu.block_dim x\n"                                                         \
  "    %tid_t = gpu.thread_id x\n"                                                         \
  "    %tid_o = arith.muli %tid_b, %tid_d : index\n"                                       \
  "    %tid_x = arith.addi %tid_o, %tid_t : index\n"                                       \
  "    %i = arith.index_cast %tid_x : index to i64\n"
/* %pN = &ptr[idx] for f32 (or another element type) */
#define GEP(res, ptr, idx, ty)                                                             \
  "    " res " = llvm.getelementptr " ptr "[" idx "] : (!llvm.ptr, i64) -> !llvm.ptr, " ty "\n"

/* Helpers every kernel module carries (private: inlined by O3 and then dropped).
 *   @piper_exp(x)   e^x in f32 for x <= 88 (0 below -87: the CPU's expf gives < 1.7e-38
 *                   there, nothing against a softmax sum >= 1): Cephes' range reduction
 *                   x = n ln2 + r with ln2 split in two, a degree-7 Taylor polynomial for e^r,
 *                   2^n put into the exponent bits; the CPU's tanh_vec does the same. floor
 *                   is a truncation corrected by one below zero (exact for |t| < 2^23):
 *                   convert-gpu-to-nvvm turns llvm.intr.floor and sqrt into libdevice calls,
 *                   so sqrt is PTX's sqrt.rn.f32 (IEEE, as sqrtf) through inline asm.
 *   @piper_tanh(u)  1 - 2 / (e^(2u) + 1) with u clamped to [-9, 9]: runtime/kernels/cpu.c's
 *                   tanh_vec, operation for operation.
 *   @piper_log(s)   ln s in f64 for a finite s >= 1 (a softmax sum): s = m 2^e with m in
 *                   [sqrt(1/2), sqrt(2)), ln m = 2 atanh((m-1)/(m+1)) by 16 terms of its
 *                   series (|z| <= 0.172: the last term is below 1e-24 relative).
 *   @piper_bf16(x)  the bf16 nearest to x (i32, upper half zero), ties to even, a NaN as the
 *                   one quiet NaN 0x7fc0: prt_f32_to_bf16 (runtime/prt_internal.h), operation
 *                   for operation (the carry of 0x7fff plus the kept half's lowest bit rounds,
 *                   and walks an overflow into inf). The one place a kernel narrows.
 *   @piper_ld(p, i, io, bit)      element i of tensor argument p as f32: bf16 widened (its
 *                   bits the fp32's upper half: exact) when bit `bit` of the kernel's bf16
 *                   mask %io is set, else fp32
 *   @piper_st(v, p, i, io, bit)   v stored as element i of p, likewise: rounded by
 *                   @piper_bf16 where the bit is set. The mask is the launch's: one branch
 *                   every thread takes alike. */
static const char helpers[] =
    "  func.func private @piper_exp(%x0: f32) -> f32\n"
    "      attributes {llvm.linkage = #llvm.linkage<internal>} {\n"
    "    %lo = arith.constant -87.0 : f32\n"
    "    %under = arith.cmpf olt, %x0, %lo : f32\n"
    "    %x = arith.select %under, %lo, %x0 : f32\n"
    "    %log2e = arith.constant 1.44269502 : f32\n"
    "    %half = arith.constant 0.5 : f32\n"
    "    %t0 = arith.mulf %x, %log2e : f32\n"
    "    %t = arith.addf %t0, %half : f32\n"
    "    %tr = arith.fptosi %t : f32 to i32\n"
    "    %trf = arith.sitofp %tr : i32 to f32\n"
    "    %above = arith.cmpf ogt, %trf, %t : f32\n"
    "    %c1 = arith.constant 1 : i32\n"
    "    %trm = arith.subi %tr, %c1 : i32\n"
    "    %ni = arith.select %above, %trm, %tr : i32\n"
    "    %n = arith.sitofp %ni : i32 to f32\n"
    "    %ln2hi = arith.constant 0.693359375 : f32\n"
    "    %ln2lo = arith.constant -0.000212194442 : f32\n"
    "    %a1 = arith.mulf %n, %ln2hi : f32\n"
    "    %r1 = arith.subf %x, %a1 : f32\n"
    "    %a2 = arith.mulf %n, %ln2lo : f32\n"
    "    %r = arith.subf %r1, %a2 : f32\n"
    "    %k7 = arith.constant 0.000198412701 : f32\n"
    "    %k6 = arith.constant 0.00138888892 : f32\n"
    "    %k5 = arith.constant 0.00833333377 : f32\n"
    "    %k4 = arith.constant 0.0416666679 : f32\n"
    "    %k3 = arith.constant 0.166666672 : f32\n"
    "    %one = arith.constant 1.0 : f32\n"
    "    %m6 = arith.mulf %k7, %r : f32\n"
    "    %p6 = arith.addf %m6, %k6 : f32\n"
    "    %m5 = arith.mulf %p6, %r : f32\n"
    "    %p5 = arith.addf %m5, %k5 : f32\n"
    "    %m4 = arith.mulf %p5, %r : f32\n"
    "    %p4 = arith.addf %m4, %k4 : f32\n"
    "    %m3 = arith.mulf %p4, %r : f32\n"
    "    %p3 = arith.addf %m3, %k3 : f32\n"
    "    %m2 = arith.mulf %p3, %r : f32\n"
    "    %p2 = arith.addf %m2, %half : f32\n"
    "    %m1 = arith.mulf %p2, %r : f32\n"
    "    %p1 = arith.addf %m1, %one : f32\n"
    "    %m0 = arith.mulf %p1, %r : f32\n"
    "    %p0 = arith.addf %m0, %one : f32\n"
    "    %bias = arith.constant 127 : i32\n"
    "    %sh = arith.constant 23 : i32\n"
    "    %eb = arith.addi %ni, %bias : i32\n"
    "    %bits = arith.shli %eb, %sh : i32\n"
    "    %scale = arith.bitcast %bits : i32 to f32\n"
    "    %e = arith.mulf %p0, %scale : f32\n"
    "    %zero = arith.constant 0.0 : f32\n"
    "    %res = arith.select %under, %zero, %e : f32\n"
    "    return %res : f32\n"
    "  }\n"
    "  func.func private @piper_tanh(%u0: f32) -> f32\n"
    "      attributes {llvm.linkage = #llvm.linkage<internal>} {\n"
    "    %lo = arith.constant -9.0 : f32\n"
    "    %hi = arith.constant 9.0 : f32\n"
    "    %c1 = arith.cmpf olt, %u0, %lo : f32\n"
    "    %u1 = arith.select %c1, %lo, %u0 : f32\n"
    "    %c2 = arith.cmpf ogt, %u1, %hi : f32\n"
    "    %u = arith.select %c2, %hi, %u1 : f32\n"
    "    %two = arith.constant 2.0 : f32\n"
    "    %one = arith.constant 1.0 : f32\n"
    "    %z = arith.mulf %two, %u : f32\n"
    "    %e = func.call @piper_exp(%z) : (f32) -> f32\n"
    "    %d = arith.addf %e, %one : f32\n"
    "    %q = arith.divf %two, %d : f32\n"
    "    %t = arith.subf %one, %q : f32\n"
    "    return %t : f32\n"
    "  }\n"
    "  func.func private @piper_log(%s: f64) -> f64\n"
    "      attributes {llvm.linkage = #llvm.linkage<internal>} {\n"
    "    %bits = arith.bitcast %s : f64 to i64\n"
    "    %c52 = arith.constant 52 : i64\n"
    "    %c1023 = arith.constant 1023 : i64\n"
    "    %mmask = arith.constant 4503599627370495 : i64\n"
    "    %one_bits = arith.constant 4607182418800017408 : i64\n"
    "    %eb = arith.shrui %bits, %c52 : i64\n"
    "    %e0 = arith.subi %eb, %c1023 : i64\n"
    "    %mant = arith.andi %bits, %mmask : i64\n"
    "    %mb = arith.ori %mant, %one_bits : i64\n"
    "    %m0 = arith.bitcast %mb : i64 to f64\n"
    "    %sqrt2 = arith.constant 1.4142135623730951 : f64\n"
    "    %big = arith.cmpf ogt, %m0, %sqrt2 : f64\n"
    "    %half = arith.constant 0.5 : f64\n"
    "    %mh = arith.mulf %m0, %half : f64\n"
    "    %m = arith.select %big, %mh, %m0 : f64\n"
    "    %c1i = arith.constant 1 : i64\n"
    "    %e1 = arith.addi %e0, %c1i : i64\n"
    "    %e = arith.select %big, %e1, %e0 : i64\n"
    "    %one = arith.constant 1.0 : f64\n"
    "    %num = arith.subf %m, %one : f64\n"
    "    %den = arith.addf %m, %one : f64\n"
    "    %z = arith.divf %num, %den : f64\n"
    "    %z2 = arith.mulf %z, %z : f64\n"
    "    %zero = arith.constant 0.0 : f64\n"
    "    %k0 = arith.constant 0 : i64\n"
    "    %k16 = arith.constant 16 : i64\n"
    "    %sum, %pw = scf.for %k = %k0 to %k16 step %c1i iter_args(%acc = %zero, %p = %z)"
    " -> (f64, f64) : i64 {\n"
    "      %two_k = arith.addi %k, %k : i64\n"
    "      %odd = arith.addi %two_k, %c1i : i64\n"
    "      %oddf = arith.sitofp %odd : i64 to f64\n"
    "      %term = arith.divf %p, %oddf : f64\n"
    "      %acc2 = arith.addf %acc, %term : f64\n"
    "      %p2 = arith.mulf %p, %z2 : f64\n"
    "      scf.yield %acc2, %p2 : f64, f64\n"
    "    }\n"
    "    %two = arith.constant 2.0 : f64\n"
    "    %lnm = arith.mulf %two, %sum : f64\n"
    "    %ef = arith.sitofp %e : i64 to f64\n"
    "    %ln2 = arith.constant 0.69314718055994531 : f64\n"
    "    %ee = arith.mulf %ef, %ln2 : f64\n"
    "    %r = arith.addf %ee, %lnm : f64\n"
    "    return %r : f64\n"
    "  }\n"
    "  func.func private @piper_bf16(%x: f32) -> i32\n"
    "      attributes {llvm.linkage = #llvm.linkage<internal>} {\n"
    "    %u = arith.bitcast %x : f32 to i32\n"
    "    %absmask = arith.constant 2147483647 : i32\n"
    "    %abs = arith.andi %u, %absmask : i32\n"
    "    %infbits = arith.constant 2139095040 : i32\n"
    "    %isnan = arith.cmpi ugt, %abs, %infbits : i32\n"
    "    %c16 = arith.constant 16 : i32\n"
    "    %kept = arith.shrui %u, %c16 : i32\n"
    "    %c1 = arith.constant 1 : i32\n"
    "    %lsb = arith.andi %kept, %c1 : i32\n"
    "    %half = arith.constant 32767 : i32\n"
    "    %bias = arith.addi %half, %lsb : i32\n"
    "    %ur = arith.addi %u, %bias : i32\n"
    "    %hr = arith.shrui %ur, %c16 : i32\n"
    "    %qnan = arith.constant 32704 : i32\n"
    "    %h = arith.select %isnan, %qnan, %hr : i32\n"
    "    return %h : i32\n"
    "  }\n"
    "  func.func private @piper_ld(%p: !llvm.ptr, %i: i64, %io: i32, %bit: i32) -> f32\n"
    "      attributes {llvm.linkage = #llvm.linkage<internal>} {\n"
    "    %c1 = arith.constant 1 : i32\n"
    "    %sh = arith.shrui %io, %bit : i32\n"
    "    %b = arith.andi %sh, %c1 : i32\n"
    "    %is16 = arith.cmpi eq, %b, %c1 : i32\n"
    "    %v = scf.if %is16 -> (f32) {\n"
    "      %q16 = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i16\n"
    "      %h16 = llvm.load %q16 : !llvm.ptr -> i16\n"
    "      %h = arith.extui %h16 : i16 to i32\n"
    "      %c16 = arith.constant 16 : i32\n"
    "      %wb = arith.shli %h, %c16 : i32\n"
    "      %w = arith.bitcast %wb : i32 to f32\n"
    "      scf.yield %w : f32\n"
    "    } else {\n"
    "      %q32 = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32\n"
    "      %f = llvm.load %q32 : !llvm.ptr -> f32\n"
    "      scf.yield %f : f32\n"
    "    }\n"
    "    return %v : f32\n"
    "  }\n"
    "  func.func private @piper_st(%v: f32, %p: !llvm.ptr, %i: i64, %io: i32, %bit: i32)\n"
    "      attributes {llvm.linkage = #llvm.linkage<internal>} {\n"
    "    %c1 = arith.constant 1 : i32\n"
    "    %sh = arith.shrui %io, %bit : i32\n"
    "    %b = arith.andi %sh, %c1 : i32\n"
    "    %is16 = arith.cmpi eq, %b, %c1 : i32\n"
    "    scf.if %is16 {\n"
    "      %h = func.call @piper_bf16(%v) : (f32) -> i32\n"
    "      %h16 = arith.trunci %h : i32 to i16\n"
    "      %q16 = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i16\n"
    "      llvm.store %h16, %q16 : i16, !llvm.ptr\n"
    "    } else {\n"
    "      %q32 = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32\n"
    "      llvm.store %v, %q32 : f32, !llvm.ptr\n"
    "    }\n"
    "    return\n"
    "  }\n";

/* One device kernel: its name (the PTX .entry the runtime launches) and its gpu.func. */
typedef struct {
  const char *name;
  const char *text;
} GpuKernel;

/* A kernel of one thread per index %i below `bound` (an i64 argument, or a value that the
 * `sizing` lines compute from the arguments; "" when there are none): the gpu.func header
 * with `args`, the thread index, `sizing`, the bounds check and, inside it, `body` (the lines
 * that are this kernel's own), then the return. Threads at or past the bound do nothing: the
 * grid is rounded up to whole blocks (runtime/kernels/cuda.c). */
#define KERNEL(name, args, sizing, bound, body)                                            \
  [PRT_DK_##name] = {"piper_" #name,                                                       \
         "  gpu.func @piper_" #name "(" args ", %io: i32) kernel {\n" TID sizing           \
         "    %in = arith.cmpi slt, %i, " bound " : i64\n"                                 \
         "    scf.if %in {\n" body "    }\n"                                               \
         "    gpu.return\n"                                                                \
         "  }\n"}
/* A kernel whose `body` only thread 0 runs (a sequential sum in a fixed order); %z, the i64
 * zero its guard compares with, is there for the body too. */
#define ONE_THREAD_KERNEL(name, args, body)                                                \
  [PRT_DK_##name] = {"piper_" #name,                                                       \
         "  gpu.func @piper_" #name "(" args ", %io: i32) kernel {\n" TID                  \
         "    %z = arith.constant 0 : i64\n"                                               \
         "    %first = arith.cmpi eq, %i, %z : i64\n"                                      \
         "    scf.if %first {\n" body "    }\n"                                            \
         "    gpu.return\n"                                                                \
         "  }\n"}

/* Fragments more than one kernel shares, each defining the values its comment names. */
/* %res = sqrt(x) in f32, IEEE-rounded as the CPU's sqrtf: PTX's sqrt.rn.f32 through inline
 * asm (convert-gpu-to-nvvm would make the math dialect's sqrt a libdevice call) */
#define SQRT_RN(res, x)                                                                    \
  "      " res " = llvm.inline_asm \"sqrt.rn.f32 $0, $1;\", \"=f,f\" " x " : (f32) -> f32\n"
/* The same in f64: PTX's sqrt.rn.f64 */
#define SQRT_RN_F64(res, x)                                                                \
  "      " res " = llvm.inline_asm \"sqrt.rn.f64 $0, $1;\", \"=d,d\" " x " : (f64) -> f64\n"
/* Entry `chunk` of a multi-tensor table (include/piper/gpu_tables.h, the one layout the host
 * that fills it and these kernels share): %eb, the entry's first i64; %q<f>, the address of
 * its field f (CHUNK_FIELD); %q0, %g (the gradient), %start, %len */
#define CHUNK_FIELD(field)                                                                 \
  "      %fc" PRT_GPU_STR(field) " = arith.constant " PRT_GPU_STR(field) " : i64\n"        \
  "      %fi" PRT_GPU_STR(field) " = arith.addi %eb, %fc" PRT_GPU_STR(field) " : i64\n"   \
  GEP("%q" PRT_GPU_STR(field), "%table", "%fi" PRT_GPU_STR(field), "i64")
#define TENSOR_CHUNK(chunk)                                                                \
  "      %kw = arith.constant " PRT_GPU_STR(PRT_CHUNK_FIELDS) " : i64\n"                  \
  "      %eb = arith.muli " chunk ", %kw : i64\n" CHUNK_FIELD(PRT_CHUNK_P)                 \
  CHUNK_FIELD(PRT_CHUNK_G) CHUNK_FIELD(PRT_CHUNK_START) CHUNK_FIELD(PRT_CHUNK_LEN)         \
  "      %g = llvm.load %q" PRT_GPU_STR(PRT_CHUNK_G) " : !llvm.ptr -> !llvm.ptr\n"         \
  "      %start = llvm.load %q" PRT_GPU_STR(PRT_CHUNK_START) " : !llvm.ptr -> i64\n"       \
  "      %len = llvm.load %q" PRT_GPU_STR(PRT_CHUNK_LEN) " : !llvm.ptr -> i64\n"
/* %name = scal[%sb + index] (f32): adamw_multi's scalar `index` (PRT_ADAM_*) */
#define SCALAR(name, index)                                                                \
  "      %si" PRT_GPU_STR(index) " = arith.constant " PRT_GPU_STR(index) " : i64\n"        \
  "      %sx" PRT_GPU_STR(index) " = arith.addi %sb, %si" PRT_GPU_STR(index) " : i64\n"    \
  GEP("%sp" PRT_GPU_STR(index), "%scal", "%sx" PRT_GPU_STR(index), "f32")                  \
  "      " name " = llvm.load %sp" PRT_GPU_STR(index) " : !llvm.ptr -> f32\n"
/* %z, %one: an i64 loop's bounds and step; sum0: a sum's 0.0 of type fty */
#define LOOP_CONSTANTS(sum0, fty)                                                          \
  "      %z = arith.constant 0 : i64\n"                                                    \
  "      %one = arith.constant 1 : i64\n"                                                  \
  "      " sum0 " = arith.constant 0.0 : " fty "\n"
/* One row of `cols` elements per thread (thread %i, row %i): LOOP_CONSTANTS with an f64
 * sum's %zd, and %base, the row's first element */
#define ROW_START(cols)                                                                    \
  LOOP_CONSTANTS("%zd", "f64") "      %base = arith.muli %i, " cols " : i64\n"
/* Sums over `rows` rows in chunks of %R rows (the sizing lines; %one defined before):
 * %chunks = ceil(rows / %R) (`rounded` names rows + %R - 1) and %n = %chunks * cols
 * threads, one per (chunk, column) */
#define CHUNK_COUNT(rows, rounded, cols)                                                   \
  "    %Rm1 = arith.subi %R, %one : i64\n"                                                 \
  "    " rounded " = arith.addi " rows ", %Rm1 : i64\n"                                    \
  "    %chunks = arith.divsi " rounded ", %R : i64\n"                                      \
  "    %n = arith.muli %chunks, " cols " : i64\n"
/* Chunk `chunk`'s rows [%lo, %hi): %R of them, the last chunk's cut at `rows` */
#define CHUNK_ROWS(chunk, rows)                                                            \
  "      %lo = arith.muli " chunk ", %R : i64\n"                                           \
  "      %hi0 = arith.addi %lo, %R : i64\n"                                                \
  "      %short = arith.cmpi slt, " rows ", %hi0 : i64\n"                                  \
  "      %hi = arith.select %short, " rows ", %hi0 : i64\n"
/* GELU's %th = tanh(%s (x + k x^3)) for x = %xv, k = %k (0.044715, defined before it) and
 * %s = sqrt(2/pi); defines %half and %one (f32) for the rest of the formula too */
#define GELU_TANH                                                                          \
  "      %s = arith.constant 0.797884583 : f32\n"                                          \
  "      %half = arith.constant 0.5 : f32\n"                                               \
  "      %one = arith.constant 1.0 : f32\n"                                                \
  "      %c1 = arith.mulf %k, %xv : f32\n"                                                 \
  "      %c2 = arith.mulf %c1, %xv : f32\n"                                                \
  "      %cube = arith.mulf %c2, %xv : f32\n"                                              \
  "      %inner = arith.addf %xv, %cube : f32\n"                                           \
  "      %u = arith.mulf %s, %inner : f32\n"                                               \
  "      %th = func.call @piper_tanh(%u) : (f32) -> f32\n"
/* SwiGLU's %d = 1 + e^-g for g = %g, with e^-g clamped at e^88 (the CPU's expf overflows
 * to inf there and gives -0; this gives below 1e-35); defines %one (f32) */
#define ONE_PLUS_EXP_NEG_G                                                                 \
  "      %ng0 = arith.negf %g : f32\n"                                                     \
  "      %hi = arith.constant 88.0 : f32\n"                                                \
  "      %over = arith.cmpf ogt, %ng0, %hi : f32\n"                                        \
  "      %ng = arith.select %over, %hi, %ng0 : f32\n"                                      \
  "      %e = func.call @piper_exp(%ng) : (f32) -> f32\n"                                  \
  "      %one = arith.constant 1.0 : f32\n"                                                \
  "      %d = arith.addf %one, %e : f32\n"

/* %h (i32, its upper half zero) = the bf16 nearest to %x (f32): @piper_bf16 */
#define BF16_NARROW "      %h = func.call @piper_bf16(%x) : (f32) -> i32\n"
/* %res (f32) = element `idx` of tensor argument `ptr`, bf16 or fp32 by bit `bit` of the
 * kernel's bf16 mask %io (@piper_ld); the FP_IN arguments of the kernel list */
#define LD(res, ptr, idx, bit)                                                             \
  "      " res "_ld = arith.constant " #bit " : i32\n"                                     \
  "      " res " = func.call @piper_ld(" ptr ", " idx ", %io, " res "_ld) : (!llvm.ptr, i64,"\
  " i32, i32) -> f32\n"
/* element `idx` of tensor argument `ptr` = `val` (f32), stored as bf16 or fp32 by bit `bit`
 * of %io (@piper_st); the FP_OUT arguments */
#define ST(val, ptr, idx, bit)                                                             \
  "      " val "_st = arith.constant " #bit " : i32\n"                                     \
  "      func.call @piper_st(" val ", " ptr ", " idx ", %io, " val "_st) : (f32, !llvm.ptr,"\
  " i64, i32, i32) -> ()\n"
/* %w (f32) = the bf16 %h (i32, upper half zero) widened: its bits become the fp32's upper half */
#define BF16_WIDEN                                                                         \
  "      %c16w = arith.constant 16 : i32\n"                                                \
  "      %wb = arith.shli %h, %c16w : i32\n"                                               \
  "      %w = arith.bitcast %wb : i32 to f32\n"

static const GpuKernel kernels[PRT_DK_COUNT] = {
/* the general tensor ops' kernels, written beside this file in its conventions */
#include "lowering/gpu_kernels_general.inc"
    /* y[i] = a[i] + b[i] (prt_add) */
    KERNEL(add, "%y: !llvm.ptr, %a: !llvm.ptr, %b: !llvm.ptr, %n: i64",
           "", "%n",
           LD("%va", "%a", "%i", 1) LD("%vb", "%b", "%i", 2)
           "      %s = arith.addf %va, %vb : f32\n" ST("%s", "%y", "%i", 0)),
    /* dst[i] = src[i] (prt_copy: outputs, pack_into; a tdag.cast rounds or widens) */
    KERNEL(copy, "%dst: !llvm.ptr, %src: !llvm.ptr, %n: i64",
           "", "%n",
           LD("%v", "%src", "%i", 1) ST("%v", "%dst", "%i", 0)),
    /* y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (prt_gelu_fwd) */
    KERNEL(gelu_fwd, "%y: !llvm.ptr, %x: !llvm.ptr, %n: i64",
           "", "%n",
           LD("%xv", "%x", "%i", 1)
           "      %k = arith.constant 0.0447149985 : f32\n"
           GELU_TANH
           "      %hx = arith.mulf %half, %xv : f32\n"
           "      %opt = arith.addf %one, %th : f32\n"
           "      %r = arith.mulf %hx, %opt : f32\n" ST("%r", "%y", "%i", 0)),
    /* dx = gelu'(x) dy (prt_gelu_bwd) */
    KERNEL(gelu_bwd, "%dx: !llvm.ptr, %dy: !llvm.ptr, %x: !llvm.ptr, %n: i64",
           "", "%n",
           LD("%xv", "%x", "%i", 2) LD("%dyv", "%dy", "%i", 1)
           "      %k = arith.constant 0.0447149985 : f32\n"
           "      %k3 = arith.constant 0.134144992 : f32\n"
           GELU_TANH
           "      %th2 = arith.mulf %th, %th : f32\n"
           "      %sech2 = arith.subf %one, %th2 : f32\n"
           "      %opt = arith.addf %one, %th : f32\n"
           "      %l1 = arith.mulf %half, %opt : f32\n"
           "      %q1 = arith.mulf %xv, %half : f32\n"
           "      %q2 = arith.mulf %q1, %sech2 : f32\n"
           "      %q3 = arith.mulf %q2, %s : f32\n"
           "      %w1 = arith.mulf %k3, %xv : f32\n"
           "      %w2 = arith.mulf %w1, %xv : f32\n"
           "      %w3 = arith.addf %one, %w2 : f32\n"
           "      %q4 = arith.mulf %q3, %w3 : f32\n"
           "      %local = arith.addf %l1, %q4 : f32\n"
           "      %r = arith.mulf %local, %dyv : f32\n" ST("%r", "%dx", "%i", 0)),
    /* y = x <= 0 ? 0 : x (prt_relu_fwd; cmpf ole is false for a NaN, which passes) */
    KERNEL(relu_fwd, "%y: !llvm.ptr, %x: !llvm.ptr, %n: i64",
           "", "%n",
           LD("%xv", "%x", "%i", 1)
           "      %zero = arith.constant 0.0 : f32\n"
           "      %off = arith.cmpf ole, %xv, %zero : f32\n"
           "      %r = arith.select %off, %zero, %xv : f32\n" ST("%r", "%y", "%i", 0)),
    /* dx = x <= 0 ? 0 : dy (prt_relu_bwd) */
    KERNEL(relu_bwd, "%dx: !llvm.ptr, %dy: !llvm.ptr, %x: !llvm.ptr, %n: i64",
           "", "%n",
           LD("%xv", "%x", "%i", 2) LD("%dyv", "%dy", "%i", 1)
           "      %zero = arith.constant 0.0 : f32\n"
           "      %off = arith.cmpf ole, %xv, %zero : f32\n"
           "      %r = arith.select %off, %zero, %dyv : f32\n" ST("%r", "%dx", "%i", 0)),
    /* out[b,t,:] = wte[tok[b,t],:] + wpe[t,:], one thread per element (prt_embedding_fwd);
     * a negative token (the CPU stops on it) gives NaN, which the loss then shows */
    KERNEL(embedding_fwd,
           "%out: !llvm.ptr, %tok: !llvm.ptr, %wte: !llvm.ptr, %wpe: !llvm.ptr, %B: i64, %T: i64,"
           " %C: i64",
           "    %bt_n = arith.muli %B, %T : i64\n"
           "    %n = arith.muli %bt_n, %C : i64\n",
           "%n",
           "      %bt = arith.divsi %i, %C : i64\n"
           "      %c = arith.remsi %i, %C : i64\n"
           "      %t = arith.remsi %bt, %T : i64\n" GEP("%ptk", "%tok", "%bt", "i32")
           "      %tk32 = llvm.load %ptk : !llvm.ptr -> i32\n"
           "      %tk = arith.extsi %tk32 : i32 to i64\n"
           "      %z = arith.constant 0 : i64\n"
           "      %bad = arith.cmpi slt, %tk, %z : i64\n"
           "      %tks = arith.select %bad, %z, %tk : i64\n"
           "      %eo = arith.muli %tks, %C : i64\n"
           "      %ei = arith.addi %eo, %c : i64\n"
           "      %po = arith.muli %t, %C : i64\n"
           "      %pi = arith.addi %po, %c : i64\n" GEP("%pe", "%wte", "%ei", "f32")
           GEP("%pp", "%wpe", "%pi", "f32")
           "      %ev = llvm.load %pe : !llvm.ptr -> f32\n"
           "      %pv = llvm.load %pp : !llvm.ptr -> f32\n"
           "      %s = arith.addf %ev, %pv : f32\n"
           "      %nan = arith.constant 0x7FC00000 : f32\n"
           "      %r = arith.select %bad, %nan, %s : f32\n" ST("%r", "%out", "%i", 0)),
    /* dwpe[t, c] = sum over b of dy[b, t, c], one thread per (t, c), in b order */
    KERNEL(embedding_bwd_wpe, "%dwpe: !llvm.ptr, %dy: !llvm.ptr, %B: i64, %T: i64, %C: i64",
           "    %n = arith.muli %T, %C : i64\n",
           "%n",
           LOOP_CONSTANTS("%zf", "f32")
           "      %s = scf.for %b = %z to %B step %one iter_args(%acc = %zf) -> (f32) : i64 {\n"
           "        %bo = arith.muli %b, %n : i64\n"
           "        %bi = arith.addi %bo, %i : i64\n" LD("%dv", "%dy", "%bi", 1)
           "        %acc2 = arith.addf %acc, %dv : f32\n"
           "        scf.yield %acc2 : f32\n"
           "      }\n" GEP("%pw", "%dwpe", "%i", "f32")
           "      llvm.store %s, %pw : f32, !llvm.ptr\n"),
    /* Column sums in two deterministic steps, so that thousands of threads share a reduction
     * over M rows (one thread per column would leave the GPU idle): partial[r, j] = the f64
     * sum of dy[i, j] over rows i of chunk r (R rows, the last one shorter), one thread per
     * (r, j); then piper_col_finish adds the chunks in order (prt_bias_bwd's f64 sum,
     * associated by chunks). */
    KERNEL(col_partials, "%partial: !llvm.ptr, %dy: !llvm.ptr, %M: i64, %N: i64, %R: i64",
           "    %one = arith.constant 1 : i64\n"
           CHUNK_COUNT("%M", "%Mr", "%N"),
           "%n",
           "      %r = arith.divsi %i, %N : i64\n"
           "      %j = arith.remsi %i, %N : i64\n"
           CHUNK_ROWS("%r", "%M")
           "      %zd = arith.constant 0.0 : f64\n"
           "      %s = scf.for %row = %lo to %hi step %one iter_args(%acc = %zd) -> (f64) : i64 {\n"
           "        %ro = arith.muli %row, %N : i64\n"
           "        %xi = arith.addi %ro, %j : i64\n" LD("%dv", "%dy", "%xi", 1)
           "        %dd = arith.extf %dv : f32 to f64\n"
           "        %acc2 = arith.addf %acc, %dd : f64\n"
           "        scf.yield %acc2 : f64\n"
           "      }\n" GEP("%pp", "%partial", "%i", "f64")
           "      llvm.store %s, %pp : f64, !llvm.ptr\n"),
    /* out[j] = sum over chunks r of partial[r, j], in order, rounded to f32 */
    KERNEL(col_finish, "%out: !llvm.ptr, %partial: !llvm.ptr, %chunks: i64, %N: i64",
           "", "%N",
           LOOP_CONSTANTS("%zd", "f64")
           "      %s = scf.for %r = %z to %chunks step %one iter_args(%acc = %zd) -> (f64)"
           " : i64 {\n"
           "        %ro = arith.muli %r, %N : i64\n"
           "        %xi = arith.addi %ro, %i : i64\n" GEP("%pp", "%partial", "%xi", "f64")
           "        %v = llvm.load %pp : !llvm.ptr -> f64\n"
           "        %acc2 = arith.addf %acc, %v : f64\n"
           "        scf.yield %acc2 : f64\n"
           "      }\n"
           "      %f = arith.truncf %s : f64 to f32\n" GEP("%po", "%out", "%i", "f32")
           "      llvm.store %f, %po : f32, !llvm.ptr\n"),
    /* col_finish of two column sums at once (LayerNorm's dw and db): partial holds two
     * [chunks][N] blocks one after the other; thread i < N finishes column i of the first into
     * outa, thread N + j column j of the second into outb */
    KERNEL(col_finish2,
           "%outa: !llvm.ptr, %outb: !llvm.ptr, %partial: !llvm.ptr, %chunks: i64, %N: i64",
           "    %n = arith.addi %N, %N : i64\n", "%n",
           LOOP_CONSTANTS("%zd", "f64")
           "      %second = arith.cmpi sge, %i, %N : i64\n"
           "      %jb = arith.subi %i, %N : i64\n"
           "      %j = arith.select %second, %jb, %i : i64\n"
           "      %block = arith.muli %chunks, %N : i64\n"
           "      %base = arith.select %second, %block, %z : i64\n"
           "      %s = scf.for %r = %z to %chunks step %one iter_args(%acc = %zd) -> (f64)"
           " : i64 {\n"
           "        %ro = arith.muli %r, %N : i64\n"
           "        %rb = arith.addi %base, %ro : i64\n"
           "        %xi = arith.addi %rb, %j : i64\n" GEP("%pp", "%partial", "%xi", "f64")
           "        %v = llvm.load %pp : !llvm.ptr -> f64\n"
           "        %acc2 = arith.addf %acc, %v : f64\n"
           "        scf.yield %acc2 : f64\n"
           "      }\n"
           "      %f = arith.truncf %s : f64 to f32\n"
           "      %out = arith.select %second, %outb, %outa : !llvm.ptr\n"
           GEP("%po", "%out", "%j", "f32")
           "      llvm.store %f, %po : f32, !llvm.ptr\n"),
    /* LayerNorm's weight and bias gradients in chunks of R rows: pw[r, c] = f64 sum of
     * norm[i, c] dy[i, c], pb[r, c] of dy[i, c], one thread per (r, c); piper_col_finish2
     * then gives dw and db (prt_layernorm_bwd's f64 sums, associated by chunks) */
    KERNEL(layernorm_dwdb_partials,
           "%pw: !llvm.ptr, %pb: !llvm.ptr, %dy: !llvm.ptr, %x: !llvm.ptr, %mean: !llvm.ptr,"
           " %rstd: !llvm.ptr, %N: i64, %C: i64, %R: i64",
           "    %one = arith.constant 1 : i64\n"
           CHUNK_COUNT("%N", "%Nr", "%C"),
           "%n",
           "      %rc = arith.divsi %i, %C : i64\n"
           "      %c = arith.remsi %i, %C : i64\n"
           CHUNK_ROWS("%rc", "%N")
           "      %zd = arith.constant 0.0 : f64\n"
           "      %sw, %sb = scf.for %r = %lo to %hi step %one iter_args(%aw = %zd, %ab = %zd)"
           " -> (f64, f64) : i64 {\n"
           "        %ro = arith.muli %r, %C : i64\n"
           "        %xi = arith.addi %ro, %c : i64\n" LD("%xv", "%x", "%xi", 3)
           LD("%dv", "%dy", "%xi", 2) GEP("%pm", "%mean", "%r", "f32")
           GEP("%prs", "%rstd", "%r", "f32")
           "        %m = llvm.load %pm : !llvm.ptr -> f32\n"
           "        %rs = llvm.load %prs : !llvm.ptr -> f32\n"
           "        %d = arith.subf %xv, %m : f32\n"
           "        %norm = arith.mulf %d, %rs : f32\n"
           "        %dvd = arith.extf %dv : f32 to f64\n"
           "        %nd = arith.extf %norm : f32 to f64\n"
           "        %ab2 = arith.addf %ab, %dvd : f64\n"
           "        %p = arith.mulf %nd, %dvd : f64\n"
           "        %aw2 = arith.addf %aw, %p : f64\n"
           "        scf.yield %aw2, %ab2 : f64, f64\n"
           "      }\n" GEP("%ow", "%pw", "%i", "f64") GEP("%ob", "%pb", "%i", "f64")
           "      llvm.store %sw, %ow : f64, !llvm.ptr\n"
           "      llvm.store %sb, %ob : f64, !llvm.ptr\n"),
    /* The token-embedding gradient in chunks of R token rows: partial[r] (V x C, f32) is
     * zeroed and then gets chunk r's dy rows added at their tokens, in token order, one thread
     * per (r, channel c) (no two threads write one element: no atomics); tokens outside
     * [0, V) are skipped. piper_sum_slabs then adds the chunks in order. */
    KERNEL(embedding_wte_partials,
           "%partial: !llvm.ptr, %dy: !llvm.ptr, %tok: !llvm.ptr, %BT: i64, %C: i64, %V: i64,"
           " %R: i64",
           "    %one = arith.constant 1 : i64\n"
           "    %z = arith.constant 0 : i64\n"
           CHUNK_COUNT("%BT", "%Br", "%C"),
           "%n",
           "      %rc = arith.divsi %i, %C : i64\n"
           "      %c = arith.remsi %i, %C : i64\n"
           "      %VC = arith.muli %V, %C : i64\n"
           "      %slab = arith.muli %rc, %VC : i64\n"
           "      %zf = arith.constant 0.0 : f32\n"
           "      scf.for %v = %z to %V step %one : i64 {\n"
           "        %vo = arith.muli %v, %C : i64\n"
           "        %vc = arith.addi %vo, %c : i64\n"
           "        %vi = arith.addi %slab, %vc : i64\n" GEP("%pz", "%partial", "%vi", "f32")
           "        llvm.store %zf, %pz : f32, !llvm.ptr\n"
           "      }\n"
           CHUNK_ROWS("%rc", "%BT")
           "      scf.for %r = %lo to %hi step %one : i64 {\n" GEP("%ptk", "%tok", "%r", "i32")
           "        %tk32 = llvm.load %ptk : !llvm.ptr -> i32\n"
           "        %tk = arith.extsi %tk32 : i32 to i64\n"
           "        %ge = arith.cmpi sge, %tk, %z : i64\n"
           "        %lt = arith.cmpi slt, %tk, %V : i64\n"
           "        %ok = arith.andi %ge, %lt : i1\n"
           "        scf.if %ok {\n"
           "          %eo = arith.muli %tk, %C : i64\n"
           "          %ec = arith.addi %eo, %c : i64\n"
           "          %ei = arith.addi %slab, %ec : i64\n"
           "          %ro = arith.muli %r, %C : i64\n"
           "          %ri = arith.addi %ro, %c : i64\n" GEP("%pe", "%partial", "%ei", "f32")
           "          %ev = llvm.load %pe : !llvm.ptr -> f32\n" LD("%dv", "%dy", "%ri", 1)
           "          %s = arith.addf %ev, %dv : f32\n"
           "          llvm.store %s, %pe : f32, !llvm.ptr\n"
           "        }\n"
           "      }\n"),
    /* out[e] = sum over slabs r of partial[r * n + e] (f32, in order), one thread per e < n */
    KERNEL(sum_slabs, "%out: !llvm.ptr, %partial: !llvm.ptr, %slabs: i64, %n: i64",
           "", "%n",
           LOOP_CONSTANTS("%zf", "f32")
           "      %s = scf.for %r = %z to %slabs step %one iter_args(%acc = %zf) -> (f32) : i64 {\n"
           "        %ro = arith.muli %r, %n : i64\n"
           "        %xi = arith.addi %ro, %i : i64\n" GEP("%pp", "%partial", "%xi", "f32")
           "        %v = llvm.load %pp : !llvm.ptr -> f32\n"
           "        %acc2 = arith.addf %acc, %v : f32\n"
           "        scf.yield %acc2 : f32\n"
           "      }\n" GEP("%po", "%out", "%i", "f32")
           "      llvm.store %s, %po : f32, !llvm.ptr\n"),
    /* out[i, j] = b[j]: the bias rows a linear's sgemm then adds its product to (beta 1) */
    KERNEL(bias_rows, "%out: !llvm.ptr, %b: !llvm.ptr, %M: i64, %N: i64",
           "    %n = arith.muli %M, %N : i64\n",
           "%n",
           "      %j = arith.remsi %i, %N : i64\n" GEP("%pb", "%b", "%j", "f32")
           "      %v = llvm.load %pb : !llvm.ptr -> f32\n" GEP("%po", "%out", "%i", "f32")
           "      llvm.store %v, %po : f32, !llvm.ptr\n"),
    /* one row per thread: probs = softmax(logits) and the row's loss
     * nll = log(sum) - (l[y] - max) in f64 (NaN for a target outside [0, V)); with label
     * smoothing e != 0, (1 - e) nll + e (log(sum) - mean_j(l[j] - max)) (prt_cross_entropy_fwd) */
    KERNEL(cross_entropy_fwd,
           "%probs: !llvm.ptr, %rowloss: !llvm.ptr, %logits: !llvm.ptr, %tgt: !llvm.ptr, %N: i64,"
           " %V: i64, %eps: f32",
           "", "%N",
           ROW_START("%V") LD("%l0", "%logits", "%base", 2)
           "      %mx = scf.for %j = %one to %V step %one iter_args(%m = %l0) -> (f32) : i64 {\n"
           "        %li = arith.addi %base, %j : i64\n" LD("%lv", "%logits", "%li", 2)
           "        %gt = arith.cmpf ogt, %lv, %m : f32\n"
           "        %m2 = arith.select %gt, %lv, %m : f32\n"
           "        scf.yield %m2 : f32\n"
           "      }\n"
           "      %s, %sh = scf.for %j = %z to %V step %one iter_args(%acc = %zd, %sacc = %zd)"
           " -> (f64, f64) : i64 {\n"
           "        %li = arith.addi %base, %j : i64\n" LD("%lv", "%logits", "%li", 2)
           "        %d = arith.subf %lv, %mx : f32\n"
           "        %e = func.call @piper_exp(%d) : (f32) -> f32\n"
           GEP("%pp", "%probs", "%li", "f32")
           "        llvm.store %e, %pp : f32, !llvm.ptr\n"
           "        %ed = arith.extf %e : f32 to f64\n"
           "        %acc2 = arith.addf %acc, %ed : f64\n"
           "        %dd = arith.extf %d : f32 to f64\n"
           "        %sacc2 = arith.addf %sacc, %dd : f64\n"
           "        scf.yield %acc2, %sacc2 : f64, f64\n"
           "      }\n"
           "      %oned = arith.constant 1.0 : f64\n"
           "      %invd = arith.divf %oned, %s : f64\n"
           "      %inv = arith.truncf %invd : f64 to f32\n"
           "      scf.for %j = %z to %V step %one : i64 {\n"
           "        %li = arith.addi %base, %j : i64\n" GEP("%pp", "%probs", "%li", "f32")
           "        %pv = llvm.load %pp : !llvm.ptr -> f32\n"
           "        %pn = arith.mulf %pv, %inv : f32\n"
           "        llvm.store %pn, %pp : f32, !llvm.ptr\n"
           "      }\n" GEP("%pt", "%tgt", "%i", "i32")
           "      %y32 = llvm.load %pt : !llvm.ptr -> i32\n"
           "      %y = arith.extsi %y32 : i32 to i64\n"
           "      %ge = arith.cmpi sge, %y, %z : i64\n"
           "      %lt = arith.cmpi slt, %y, %V : i64\n"
           "      %ok = arith.andi %ge, %lt : i1\n"
           "      %ys = arith.select %ok, %y, %z : i64\n"
           "      %yi = arith.addi %base, %ys : i64\n" LD("%ly", "%logits", "%yi", 2)
           "      %lym = arith.subf %ly, %mx : f32\n"
           "      %lymd = arith.extf %lym : f32 to f64\n"
           "      %lg = func.call @piper_log(%s) : (f64) -> f64\n"
           "      %nll = arith.subf %lg, %lymd : f64\n"
           "      %epsd = arith.extf %eps : f32 to f64\n"
           "      %Vd = arith.sitofp %V : i64 to f64\n"
           "      %shm = arith.divf %sh, %Vd : f64\n"
           "      %smooth = arith.subf %lg, %shm : f64\n"
           "      %keep = arith.subf %oned, %epsd : f64\n"
           "      %kn = arith.mulf %keep, %nll : f64\n"
           "      %es = arith.mulf %epsd, %smooth : f64\n"
           "      %mix = arith.addf %kn, %es : f64\n"
           "      %zf = arith.constant 0.0 : f32\n"
           "      %plain = arith.cmpf oeq, %eps, %zf : f32\n"
           "      %rl = arith.select %plain, %nll, %mix : f64\n"
           "      %nan = arith.constant 0x7FF8000000000000 : f64\n"
           "      %res = arith.select %ok, %rl, %nan : f64\n" GEP("%pr", "%rowloss", "%i", "f64")
           "      llvm.store %res, %pr : f64, !llvm.ptr\n"),
    /* loss[0] = (sum of the N row losses, in row order) / N: one thread */
    ONE_THREAD_KERNEL(mean_rows, "%loss: !llvm.ptr, %rowloss: !llvm.ptr, %N: i64",
                      "      %one = arith.constant 1 : i64\n"
                      "      %zd = arith.constant 0.0 : f64\n"
                      "      %s = scf.for %r = %z to %N step %one iter_args(%acc = %zd)"
                      " -> (f64) : i64 {\n"
                      GEP("%pr", "%rowloss", "%r", "f64")
                      "        %v = llvm.load %pr : !llvm.ptr -> f64\n"
                      "        %acc2 = arith.addf %acc, %v : f64\n"
                      "        scf.yield %acc2 : f64\n"
                      "      }\n"
                      "      %Nd = arith.sitofp %N : i64 to f64\n"
                      "      %m = arith.divf %s, %Nd : f64\n"
                      "      %mf = arith.truncf %m : f64 to f32\n"
                      "      llvm.store %mf, %loss : f32, !llvm.ptr\n"),
    /* dlogits = (probs - (1 - e) onehot(y) - e / V) / total_rows, one thread per element */
    KERNEL(cross_entropy_bwd,
           "%dl: !llvm.ptr, %probs: !llvm.ptr, %tgt: !llvm.ptr, %N: i64, %V: i64, %total: i64,"
           " %eps: f32",
           "    %n = arith.muli %N, %V : i64\n",
           "%n",
           "      %row = arith.divsi %i, %V : i64\n"
           "      %j = arith.remsi %i, %V : i64\n" GEP("%pt", "%tgt", "%row", "i32")
           "      %y32 = llvm.load %pt : !llvm.ptr -> i32\n"
           "      %y = arith.extsi %y32 : i32 to i64\n" GEP("%pp", "%probs", "%i", "f32")
           "      %p = llvm.load %pp : !llvm.ptr -> f32\n"
           "      %tf = arith.sitofp %total : i64 to f32\n"
           "      %onef = arith.constant 1.0 : f32\n"
           "      %invn = arith.divf %onef, %tf : f32\n"
           "      %hit = arith.cmpi eq, %j, %y : i64\n"
           "      %keep = arith.subf %onef, %eps : f32\n"
           "      %Vf = arith.sitofp %V : i64 to f32\n"
           "      %unif = arith.divf %eps, %Vf : f32\n"
           "      %pm1 = arith.subf %p, %keep : f32\n"
           "      %v0 = arith.select %hit, %pm1, %p : f32\n"
           "      %v = arith.subf %v0, %unif : f32\n"
           "      %d = arith.mulf %v, %invn : f32\n" ST("%d", "%dl", "%i", 0)),
    /* torch's AdamW element for element over every tensor of the step's update at once (one
     * launch, llm.c's multi-tensor form): thread i handles element i % CH of chunk i / CH of
     * the table (TENSOR_CHUNK below: the tensor's pointers, where the chunk starts and its
     * length, decay != 0 for decoupled weight decay, its scalar group). The scalars are
     * prt_adamw's, computed on the host (runtime/kernels/cpu.c: in double as Python does,
     * rounded to float where torch's kernels see them) and read from the group's row of
     * scal (PRT_ADAM_*: beta1, beta2, eps, keep = 1 - lr wd, 1 - beta1, 1 - beta2,
     * sqrt(1 - beta2^t), -lr / (1 - beta1^t)); the clip scale from *clipp (norm_clip's, or
     * the host's). Where
     * the entry names the parameter's bf16 copy, the new value is rounded into it too
     * (@piper_bf16): the one narrow of that weight a step. */
    KERNEL(adamw_multi,
           "%table: !llvm.ptr, %scal: !llvm.ptr, %clipp: !llvm.ptr, %nchunk: i64, %CH: i64",
           "    %n = arith.muli %nchunk, %CH : i64\n", "%n",
           "      %c = arith.divsi %i, %CH : i64\n"
           "      %off = arith.remsi %i, %CH : i64\n"
           TENSOR_CHUNK("%c")
           "      %mine = arith.cmpi slt, %off, %len : i64\n"
           "      scf.if %mine {\n"
           CHUNK_FIELD(PRT_CHUNK_M) CHUNK_FIELD(PRT_CHUNK_V) CHUNK_FIELD(PRT_CHUNK_DECAY)
           CHUNK_FIELD(PRT_CHUNK_GROUP) CHUNK_FIELD(PRT_CHUNK_P16)
           "      %p = llvm.load %q" PRT_GPU_STR(PRT_CHUNK_P) " : !llvm.ptr -> !llvm.ptr\n"
           "      %m = llvm.load %q" PRT_GPU_STR(PRT_CHUNK_M) " : !llvm.ptr -> !llvm.ptr\n"
           "      %v = llvm.load %q" PRT_GPU_STR(PRT_CHUNK_V) " : !llvm.ptr -> !llvm.ptr\n"
           "      %decay = llvm.load %q" PRT_GPU_STR(PRT_CHUNK_DECAY) " : !llvm.ptr -> i64\n"
           "      %group = llvm.load %q" PRT_GPU_STR(PRT_CHUNK_GROUP) " : !llvm.ptr -> i64\n"
           "      %x = arith.addi %start, %off : i64\n"
           GEP("%pp", "%p", "%x", "f32") GEP("%pg", "%g", "%x", "f32")
           GEP("%pm", "%m", "%x", "f32") GEP("%pv", "%v", "%x", "f32")
           "      %ks = arith.constant " PRT_GPU_STR(PRT_ADAM_SCALARS) " : i64\n"
           "      %sb = arith.muli %group, %ks : i64\n"
           SCALAR("%beta1", PRT_ADAM_BETA1) SCALAR("%beta2", PRT_ADAM_BETA2)
           SCALAR("%eps", PRT_ADAM_EPS) SCALAR("%keep", PRT_ADAM_KEEP)
           SCALAR("%omb1", PRT_ADAM_OMB1) SCALAR("%omb2", PRT_ADAM_OMB2)
           SCALAR("%bc2s", PRT_ADAM_BC2S) SCALAR("%negstep", PRT_ADAM_NEGSTEP)
           "      %clip = llvm.load %clipp : !llvm.ptr -> f32\n"
           "      %p0 = llvm.load %pp : !llvm.ptr -> f32\n"
           "      %g0 = llvm.load %pg : !llvm.ptr -> f32\n"
           "      %m0 = llvm.load %pm : !llvm.ptr -> f32\n"
           "      %v0 = llvm.load %pv : !llvm.ptr -> f32\n"
           "      %onef = arith.constant 1.0 : f32\n"
           "      %noclip = arith.cmpf oeq, %clip, %onef : f32\n"
           "      %gc = arith.mulf %g0, %clip : f32\n"
           "      %gi = arith.select %noclip, %g0, %gc : f32\n"
           "      %zi = arith.constant 0 : i64\n"
           "      %dec = arith.cmpi ne, %decay, %zi : i64\n"
           "      %pk = arith.mulf %p0, %keep : f32\n"
           "      %pi = arith.select %dec, %pk, %p0 : f32\n"
           "      %m1 = arith.mulf %m0, %beta1 : f32\n"
           "      %m2 = arith.mulf %omb1, %gi : f32\n"
           "      %mi = arith.addf %m1, %m2 : f32\n"
           "      %v1 = arith.mulf %v0, %beta2 : f32\n"
           "      %v2 = arith.mulf %omb2, %gi : f32\n"
           "      %v3 = arith.mulf %v2, %gi : f32\n"
           "      %vi = arith.addf %v1, %v3 : f32\n"
           SQRT_RN("%sv", "%vi")
           "      %d1 = arith.divf %sv, %bc2s : f32\n"
           "      %den = arith.addf %d1, %eps : f32\n"
           "      %s1 = arith.mulf %negstep, %mi : f32\n"
           "      %s2 = arith.divf %s1, %den : f32\n"
           "      %pn = arith.addf %pi, %s2 : f32\n"
           "      llvm.store %pn, %pp : f32, !llvm.ptr\n"
           "      llvm.store %mi, %pm : f32, !llvm.ptr\n"
           "      llvm.store %vi, %pv : f32, !llvm.ptr\n"
           "      %p16 = llvm.load %q" PRT_GPU_STR(PRT_CHUNK_P16) " : !llvm.ptr -> !llvm.ptr\n"
           "      %nullp = llvm.mlir.zero : !llvm.ptr\n"
           "      %copy = llvm.icmp \"ne\" %p16, %nullp : !llvm.ptr\n"
           "      scf.if %copy {\n"
           "        %h = func.call @piper_bf16(%pn) : (f32) -> i32\n"
           "        %h16 = arith.trunci %h : i32 to i16\n" GEP("%ph", "%p16", "%x", "i16")
           "        llvm.store %h16, %ph : i16, !llvm.ptr\n"
           "      }\n"
           "      }\n"),
    /* The gradient norm's first pass over every gradient of the step at once: thread i is
     * lane i % L of chunk i / L (the table's gradient pointer, start and length), partial[i]
     * = the sum (f64) of g^2 over the chunk's elements lane, lane + L, ... */
    KERNEL(sumsq_chunks, "%partial: !llvm.ptr, %table: !llvm.ptr, %nchunk: i64, %L: i64",
           "    %n = arith.muli %nchunk, %L : i64\n", "%n",
           "      %c = arith.divsi %i, %L : i64\n"
           "      %lane = arith.remsi %i, %L : i64\n"
           TENSOR_CHUNK("%c")
           "      %zd = arith.constant 0.0 : f64\n"
           "      %s = scf.for %k = %lane to %len step %L iter_args(%acc = %zd) -> (f64) : i64 {\n"
           "        %x = arith.addi %start, %k : i64\n" GEP("%pg", "%g", "%x", "f32")
           "        %gv = llvm.load %pg : !llvm.ptr -> f32\n"
           "        %gd = arith.extf %gv : f32 to f64\n"
           "        %sq = arith.mulf %gd, %gd : f64\n"
           "        %acc2 = arith.addf %acc, %sq : f64\n"
           "        scf.yield %acc2 : f64\n"
           "      }\n" GEP("%pp", "%partial", "%i", "f64")
           "      llvm.store %s, %pp : f64, !llvm.ptr\n"),
    /* csum[c] = partial[c L] + ... + partial[c L + L - 1], in order: one thread per chunk */
    KERNEL(sum_lanes, "%csum: !llvm.ptr, %partial: !llvm.ptr, %nchunk: i64, %L: i64",
           "", "%nchunk",
           LOOP_CONSTANTS("%zd", "f64")
           "      %base = arith.muli %i, %L : i64\n"
           "      %s = scf.for %l = %z to %L step %one iter_args(%acc = %zd) -> (f64) : i64 {\n"
           "        %x = arith.addi %base, %l : i64\n" GEP("%pp", "%partial", "%x", "f64")
           "        %v = llvm.load %pp : !llvm.ptr -> f64\n"
           "        %acc2 = arith.addf %acc, %v : f64\n"
           "        scf.yield %acc2 : f64\n"
           "      }\n" GEP("%pc", "%csum", "%i", "f64")
           "      llvm.store %s, %pc : f64, !llvm.ptr\n"),
    /* *sq = csum[0] + ... + csum[nchunk - 1] in order (the squared norm, f64), and the clip
     * scale *clipp as prt_grad_norm_sync computes it (torch's clip_grad_norm_: the fp32
     * coefficient maxnorm / (norm + 1e-6), applied only below 1; maxnorm <= 0: no clipping,
     * 1); one thread */
    ONE_THREAD_KERNEL(norm_clip,
                      "%sq: !llvm.ptr, %clipp: !llvm.ptr, %csum: !llvm.ptr, %nchunk: i64,"
                      " %maxnorm: f32",
                      "      %one = arith.constant 1 : i64\n"
                      "      %zd = arith.constant 0.0 : f64\n"
                      "      %s = scf.for %k = %z to %nchunk step %one iter_args(%a = %zd)"
                      " -> (f64) : i64 {\n"
                      GEP("%pc", "%csum", "%k", "f64")
                      "        %v = llvm.load %pc : !llvm.ptr -> f64\n"
                      "        %a2 = arith.addf %a, %v : f64\n"
                      "        scf.yield %a2 : f64\n"
                      "      }\n"
                      "      llvm.store %s, %sq : f64, !llvm.ptr\n"
                      SQRT_RN_F64("%norm", "%s")
                      "      %nf = arith.truncf %norm : f64 to f32\n"
                      "      %tiny = arith.constant 9.99999997E-7 : f32\n"
                      "      %den = arith.addf %nf, %tiny : f32\n"
                      "      %coef = arith.divf %maxnorm, %den : f32\n"
                      "      %onef = arith.constant 1.0 : f32\n"
                      "      %zf = arith.constant 0.0 : f32\n"
                      "      %clips = arith.cmpf ogt, %maxnorm, %zf : f32\n"
                      "      %below = arith.cmpf olt, %coef, %onef : f32\n"
                      "      %use = arith.andi %clips, %below : i1\n"
                      "      %scale = arith.select %use, %coef, %onef : f32\n"
                      "      llvm.store %scale, %clipp : f32, !llvm.ptr\n"),
    /* ---- Qwen3's ops (runtime/kernels/cpu_qwen3.c), in the same conventions ---- */
    /* out[i, c] = wte[tok[i], c], one thread per element (prt_embed_fwd); a token outside
     * [0, V) (the CPU stops on it) gives NaN, which the loss then shows */
    KERNEL(embed_fwd,
           "%out: !llvm.ptr, %tok: !llvm.ptr, %wte: !llvm.ptr, %N: i64, %C: i64, %V: i64",
           "    %n = arith.muli %N, %C : i64\n",
           "%n",
           "      %row = arith.divsi %i, %C : i64\n"
           "      %c = arith.remsi %i, %C : i64\n" GEP("%ptk", "%tok", "%row", "i32")
           "      %tk32 = llvm.load %ptk : !llvm.ptr -> i32\n"
           "      %tk = arith.extsi %tk32 : i32 to i64\n"
           "      %z = arith.constant 0 : i64\n"
           "      %neg = arith.cmpi slt, %tk, %z : i64\n"
           "      %big = arith.cmpi sge, %tk, %V : i64\n"
           "      %bad = arith.ori %neg, %big : i1\n"
           "      %tks = arith.select %bad, %z, %tk : i64\n"
           "      %eo = arith.muli %tks, %C : i64\n"
           "      %ei = arith.addi %eo, %c : i64\n" GEP("%pe", "%wte", "%ei", "f32")
           "      %ev = llvm.load %pe : !llvm.ptr -> f32\n"
           "      %nan = arith.constant 0x7FC00000 : f32\n"
           "      %r = arith.select %bad, %nan, %ev : f32\n" ST("%r", "%out", "%i", 0)),
    /* RMSNorm's weight gradient in chunks of R rows: pw[r, c] = f64 sum of n[i, c] dy[i, c]
     * (n = x rstd), one thread per (r, c); piper_col_finish then adds the chunks in order
     * (prt_rmsnorm_bwd's f64 sum, associated by chunks: no atomics) */
    KERNEL(rmsnorm_dw_partials,
           "%pw: !llvm.ptr, %dy: !llvm.ptr, %x: !llvm.ptr, %rstd: !llvm.ptr, %M: i64, %D: i64,"
           " %R: i64",
           "    %one = arith.constant 1 : i64\n"
           CHUNK_COUNT("%M", "%Mr", "%D"),
           "%n",
           "      %rc = arith.divsi %i, %D : i64\n"
           "      %j = arith.remsi %i, %D : i64\n"
           CHUNK_ROWS("%rc", "%M")
           "      %zd = arith.constant 0.0 : f64\n"
           "      %s = scf.for %row = %lo to %hi step %one iter_args(%acc = %zd) -> (f64) : i64 {\n"
           "        %ro = arith.muli %row, %D : i64\n"
           "        %xi = arith.addi %ro, %j : i64\n" LD("%xv", "%x", "%xi", 2)
           LD("%dv", "%dy", "%xi", 1) GEP("%pr", "%rstd", "%row", "f32")
           "        %rv = llvm.load %pr : !llvm.ptr -> f32\n"
           "        %nv = arith.mulf %xv, %rv : f32\n"
           "        %nd = arith.extf %nv : f32 to f64\n"
           "        %dd = arith.extf %dv : f32 to f64\n"
           "        %p = arith.mulf %nd, %dd : f64\n"
           "        %acc2 = arith.addf %acc, %p : f64\n"
           "        scf.yield %acc2 : f64\n"
           "      }\n" GEP("%pp", "%pw", "%i", "f64")
           "      llvm.store %s, %pp : f64, !llvm.ptr\n"),
    /* Rotary embedding of x (BT rows of N = H heads x D), one thread per (row, head, pair
     * j < D/2): (x1, x2) = (x[j], x[j + D/2]) -> (x1 c - x2 s, x2 c + x1 s) with (c, s) =
     * cs[t, j], the cos/sin table the host computes as the CPU does (sin negated for the
     * gradient: prt_rope_bwd is the same kernel over the inverse rotation's table) */
    KERNEL(rope,
           "%out: !llvm.ptr, %x: !llvm.ptr, %cs: !llvm.ptr, %BT: i64, %T: i64, %N: i64, %D: i64",
           "    %two = arith.constant 2 : i64\n"
           "    %half = arith.divsi %D, %two : i64\n"
           "    %H = arith.divsi %N, %D : i64\n"
           "    %rows = arith.muli %BT, %H : i64\n"
           "    %n = arith.muli %rows, %half : i64\n",
           "%n",
           "      %j = arith.remsi %i, %half : i64\n"
           "      %rh = arith.divsi %i, %half : i64\n"
           "      %h = arith.remsi %rh, %H : i64\n"
           "      %bt = arith.divsi %rh, %H : i64\n"
           "      %t = arith.remsi %bt, %T : i64\n"
           "      %to = arith.muli %t, %half : i64\n"
           "      %tj = arith.addi %to, %j : i64\n"
           "      %ci = arith.muli %tj, %two : i64\n"
           "      %one = arith.constant 1 : i64\n"
           "      %si = arith.addi %ci, %one : i64\n" GEP("%pc", "%cs", "%ci", "f32")
           GEP("%ps", "%cs", "%si", "f32")
           "      %c = llvm.load %pc : !llvm.ptr -> f32\n"
           "      %s = llvm.load %ps : !llvm.ptr -> f32\n"
           "      %ro = arith.muli %bt, %N : i64\n"
           "      %ho = arith.muli %h, %D : i64\n"
           "      %base = arith.addi %ro, %ho : i64\n"
           "      %i1 = arith.addi %base, %j : i64\n"
           "      %i2 = arith.addi %i1, %half : i64\n" LD("%x1", "%x", "%i1", 1)
           LD("%x2", "%x", "%i2", 1)
           "      %a1 = arith.mulf %x1, %c : f32\n"
           "      %a2 = arith.mulf %x2, %s : f32\n"
           "      %o1 = arith.subf %a1, %a2 : f32\n"
           "      %b1 = arith.mulf %x2, %c : f32\n"
           "      %b2 = arith.mulf %x1, %s : f32\n"
           "      %o2 = arith.addf %b1, %b2 : f32\n" ST("%o1", "%out", "%i1", 0)
           ST("%o2", "%out", "%i2", 0)),
    /* y = g / (1 + e^-g) up (prt_swiglu_fwd; e^-g clamped, see ONE_PLUS_EXP_NEG_G) */
    KERNEL(swiglu_fwd, "%y: !llvm.ptr, %gate: !llvm.ptr, %up: !llvm.ptr, %n: i64",
           "", "%n",
           LD("%g", "%gate", "%i", 1) LD("%u", "%up", "%i", 2)
           ONE_PLUS_EXP_NEG_G
           "      %q = arith.divf %g, %d : f32\n"
           "      %r = arith.mulf %q, %u : f32\n" ST("%r", "%y", "%i", 0)),
    /* sig = 1 / (1 + e^-g): dgate = dy up sig (1 + g (1 - sig)), dup = dy g sig
     * (prt_swiglu_bwd) */
    KERNEL(swiglu_bwd,
           "%dgate: !llvm.ptr, %dup: !llvm.ptr, %dy: !llvm.ptr, %gate: !llvm.ptr, %up: !llvm.ptr,"
           " %n: i64",
           "", "%n",
           LD("%g", "%gate", "%i", 3) LD("%u", "%up", "%i", 4) LD("%dv", "%dy", "%i", 2)
           ONE_PLUS_EXP_NEG_G
           "      %sig = arith.divf %one, %d : f32\n"
           "      %a1 = arith.mulf %dv, %u : f32\n"
           "      %a2 = arith.mulf %a1, %sig : f32\n"
           "      %oms = arith.subf %one, %sig : f32\n"
           "      %go = arith.mulf %g, %oms : f32\n"
           "      %f = arith.addf %one, %go : f32\n"
           "      %dg = arith.mulf %a2, %f : f32\n"
           "      %b1 = arith.mulf %dv, %g : f32\n"
           "      %du = arith.mulf %b1, %sig : f32\n" ST("%dg", "%dgate", "%i", 0)
           ST("%du", "%dup", "%i", 1)),
    /* out[i, j] = x[i, j] + b[j] (prt_bias_add) */
    KERNEL(bias_add, "%out: !llvm.ptr, %x: !llvm.ptr, %b: !llvm.ptr, %M: i64, %N: i64",
           "    %n = arith.muli %M, %N : i64\n",
           "%n",
           "      %j = arith.remsi %i, %N : i64\n" GEP("%pb", "%b", "%j", "f32")
           "      %bv = llvm.load %pb : !llvm.ptr -> f32\n" LD("%xv", "%x", "%i", 1)
           "      %s = arith.addf %xv, %bv : f32\n" ST("%s", "%out", "%i", 0)),
    /* ---- mixture of experts (prt_moe_* in runtime/kernels/cpu.c). The copies' rows (pos,
     * i32, one per token copy) come from the host's counting sort (prt_moe_positions), which
     * runtime/kernels/cuda.c uploads: every kernel below is a gather or a scatter over them
     * with one writer per element, so no atomics and the CPU's order. ---- */
    /* One thread per token n: the softmax of its E logits (max, then the f64 sum of
     * e^(l - max)), its K largest logits in order (">": ties keep the lower index, an expert
     * taken once is skipped), their probabilities renormalized over the K (prt_moe_topk_fwd;
     * e^x is piper_exp in f32, libm's double exp on the CPU) */
    KERNEL(moe_topk_fwd,
           "%w: !llvm.ptr, %ex: !llvm.ptr, %l: !llvm.ptr, %N: i64, %E: i64, %K: i64",
           "", "%N",
           LOOP_CONSTANTS("%zd", "f64")
           "      %base = arith.muli %i, %E : i64\n"
           "      %kb = arith.muli %i, %K : i64\n" GEP("%pl0", "%l", "%base", "f32")
           "      %l0 = llvm.load %pl0 : !llvm.ptr -> f32\n"
           "      %mx = scf.for %e = %one to %E step %one iter_args(%m = %l0) -> (f32) : i64 {\n"
           "        %li = arith.addi %base, %e : i64\n" GEP("%pl", "%l", "%li", "f32")
           "        %lv = llvm.load %pl : !llvm.ptr -> f32\n"
           "        %gt = arith.cmpf ogt, %lv, %m : f32\n"
           "        %m2 = arith.select %gt, %lv, %m : f32\n"
           "        scf.yield %m2 : f32\n"
           "      }\n"
           "      %zs = scf.for %e = %z to %E step %one iter_args(%acc = %zd) -> (f64) : i64 {\n"
           "        %li = arith.addi %base, %e : i64\n" GEP("%pl", "%l", "%li", "f32")
           "        %lv = llvm.load %pl : !llvm.ptr -> f32\n"
           "        %d = arith.subf %lv, %mx : f32\n"
           "        %x = func.call @piper_exp(%d) : (f32) -> f32\n"
           "        %xd = arith.extf %x : f32 to f64\n"
           "        %acc2 = arith.addf %acc, %xd : f64\n"
           "        scf.yield %acc2 : f64\n"
           "      }\n"
           "      %none = arith.constant -1 : i64\n"
           "      %false = arith.constant false\n"
           "      %true = arith.constant true\n"
           "      %sum = scf.for %k = %z to %K step %one iter_args(%s = %zd) -> (f64) : i64 {\n"
           "        %best = scf.for %e = %z to %E step %one iter_args(%b = %none) -> (i64) : i64 {\n"
           "          %taken = scf.for %q = %z to %k step %one iter_args(%t = %false) -> (i1) : i64 {\n"
           "            %qi = arith.addi %kb, %q : i64\n" GEP("%pq", "%ex", "%qi", "i32")
           "            %eq32 = llvm.load %pq : !llvm.ptr -> i32\n"
           "            %eq = arith.extsi %eq32 : i32 to i64\n"
           "            %same = arith.cmpi eq, %eq, %e : i64\n"
           "            %t2 = arith.ori %t, %same : i1\n"
           "            scf.yield %t2 : i1\n"
           "          }\n"
           "          %li = arith.addi %base, %e : i64\n" GEP("%pl", "%l", "%li", "f32")
           "          %lv = llvm.load %pl : !llvm.ptr -> f32\n"
           "          %unset = arith.cmpi slt, %b, %z : i64\n"
           "          %bs = arith.select %unset, %z, %b : i64\n"
           "          %lbi = arith.addi %base, %bs : i64\n" GEP("%plb", "%l", "%lbi", "f32")
           "          %lb = llvm.load %plb : !llvm.ptr -> f32\n"
           "          %gt = arith.cmpf ogt, %lv, %lb : f32\n"
           "          %better = arith.ori %unset, %gt : i1\n"
           "          %free = arith.xori %taken, %true : i1\n"
           "          %take = arith.andi %free, %better : i1\n"
           "          %b2 = arith.select %take, %e, %b : i64\n"
           "          scf.yield %b2 : i64\n"
           "        }\n"
           "        %ki = arith.addi %kb, %k : i64\n" GEP("%pe", "%ex", "%ki", "i32")
           "        %b32 = arith.trunci %best : i64 to i32\n"
           "        llvm.store %b32, %pe : i32, !llvm.ptr\n"
           "        %lbi = arith.addi %base, %best : i64\n" GEP("%plb", "%l", "%lbi", "f32")
           "        %lb = llvm.load %plb : !llvm.ptr -> f32\n"
           "        %d = arith.subf %lb, %mx : f32\n"
           "        %x = func.call @piper_exp(%d) : (f32) -> f32\n"
           "        %xd = arith.extf %x : f32 to f64\n"
           "        %p = arith.divf %xd, %zs : f64\n"
           "        %pf = arith.truncf %p : f64 to f32\n" GEP("%pw", "%w", "%ki", "f32")
           "        llvm.store %pf, %pw : f32, !llvm.ptr\n"
           "        %pfd = arith.extf %pf : f32 to f64\n"
           "        %s2 = arith.addf %s, %pfd : f64\n"
           "        scf.yield %s2 : f64\n"
           "      }\n"
           "      scf.for %k = %z to %K step %one : i64 {\n"
           "        %ki = arith.addi %kb, %k : i64\n" GEP("%pw", "%w", "%ki", "f32")
           "        %wv = llvm.load %pw : !llvm.ptr -> f32\n"
           "        %wd = arith.extf %wv : f32 to f64\n"
           "        %q = arith.divf %wd, %sum : f64\n"
           "        %qf = arith.truncf %q : f64 to f32\n"
           "        llvm.store %qf, %pw : f32, !llvm.ptr\n"
           "      }\n"),
    /* One thread per token n: dlogits row zero but at its K experts, where
     * w (dw - sum_k dw w) in f64 (prt_moe_topk_bwd); an id outside [0, E) writes nothing
     * (the forward kernel makes none) */
    KERNEL(moe_topk_bwd,
           "%dl: !llvm.ptr, %dw: !llvm.ptr, %w: !llvm.ptr, %ex: !llvm.ptr, %N: i64, %E: i64,"
           " %K: i64",
           "", "%N",
           LOOP_CONSTANTS("%zd", "f64")
           "      %zf = arith.constant 0.0 : f32\n"
           "      %base = arith.muli %i, %E : i64\n"
           "      %kb = arith.muli %i, %K : i64\n"
           "      scf.for %e = %z to %E step %one : i64 {\n"
           "        %li = arith.addi %base, %e : i64\n" GEP("%pl", "%dl", "%li", "f32")
           "        llvm.store %zf, %pl : f32, !llvm.ptr\n"
           "      }\n"
           "      %s = scf.for %k = %z to %K step %one iter_args(%acc = %zd) -> (f64) : i64 {\n"
           "        %ki = arith.addi %kb, %k : i64\n" GEP("%pdw", "%dw", "%ki", "f32")
           GEP("%pw", "%w", "%ki", "f32")
           "        %dv = llvm.load %pdw : !llvm.ptr -> f32\n"
           "        %wv = llvm.load %pw : !llvm.ptr -> f32\n"
           "        %dd = arith.extf %dv : f32 to f64\n"
           "        %wd = arith.extf %wv : f32 to f64\n"
           "        %m = arith.mulf %dd, %wd : f64\n"
           "        %acc2 = arith.addf %acc, %m : f64\n"
           "        scf.yield %acc2 : f64\n"
           "      }\n"
           "      scf.for %k = %z to %K step %one : i64 {\n"
           "        %ki = arith.addi %kb, %k : i64\n" GEP("%pdw", "%dw", "%ki", "f32")
           GEP("%pw", "%w", "%ki", "f32") GEP("%pe", "%ex", "%ki", "i32")
           "        %dv = llvm.load %pdw : !llvm.ptr -> f32\n"
           "        %wv = llvm.load %pw : !llvm.ptr -> f32\n"
           "        %e32 = llvm.load %pe : !llvm.ptr -> i32\n"
           "        %e = arith.extsi %e32 : i32 to i64\n"
           "        %ge = arith.cmpi sge, %e, %z : i64\n"
           "        %lt = arith.cmpi slt, %e, %E : i64\n"
           "        %ok = arith.andi %ge, %lt : i1\n"
           "        scf.if %ok {\n"
           "          %dd = arith.extf %dv : f32 to f64\n"
           "          %wd = arith.extf %wv : f32 to f64\n"
           "          %ds = arith.subf %dd, %s : f64\n"
           "          %g = arith.mulf %wd, %ds : f64\n"
           "          %gf = arith.truncf %g : f64 to f32\n"
           "          %li = arith.addi %base, %e : i64\n" GEP("%pl", "%dl", "%li", "f32")
           "          llvm.store %gf, %pl : f32, !llvm.ptr\n"
           "        }\n"
           "      }\n"),
    /* rows[pos[t], c] = h[t / K, c]: one thread per (token copy t, column c) of the NK
     * copies (prt_moe_dispatch_fwd; the unused rows were zeroed by the host) */
    KERNEL(moe_scatter_rows,
           "%rows: !llvm.ptr, %h: !llvm.ptr, %pos: !llvm.ptr, %NK: i64, %K: i64, %C: i64",
           "    %n = arith.muli %NK, %C : i64\n",
           "%n",
           "      %t = arith.divsi %i, %C : i64\n"
           "      %c = arith.remsi %i, %C : i64\n"
           "      %tok = arith.divsi %t, %K : i64\n" GEP("%pp", "%pos", "%t", "i32")
           "      %p32 = llvm.load %pp : !llvm.ptr -> i32\n"
           "      %p = arith.extsi %p32 : i32 to i64\n"
           "      %hr = arith.muli %tok, %C : i64\n"
           "      %hi = arith.addi %hr, %c : i64\n" LD("%v", "%h", "%hi", 1)
           "      %rr = arith.muli %p, %C : i64\n"
           "      %ri = arith.addi %rr, %c : i64\n" ST("%v", "%rows", "%ri", 0)),
    /* dh[n, c] = sum over k of drows[pos[n K + k], c], k in order from 0.0: one thread per
     * (token, column) (prt_moe_dispatch_bwd) */
    KERNEL(moe_gather_sum,
           "%dh: !llvm.ptr, %drows: !llvm.ptr, %pos: !llvm.ptr, %N: i64, %K: i64, %C: i64",
           "    %n = arith.muli %N, %C : i64\n",
           "%n",
           LOOP_CONSTANTS("%zf", "f32")
           "      %tok = arith.divsi %i, %C : i64\n"
           "      %c = arith.remsi %i, %C : i64\n"
           "      %kb = arith.muli %tok, %K : i64\n"
           "      %s = scf.for %k = %z to %K step %one iter_args(%acc = %zf) -> (f32) : i64 {\n"
           "        %t = arith.addi %kb, %k : i64\n" GEP("%pp", "%pos", "%t", "i32")
           "        %p32 = llvm.load %pp : !llvm.ptr -> i32\n"
           "        %p = arith.extsi %p32 : i32 to i64\n"
           "        %rr = arith.muli %p, %C : i64\n"
           "        %ri = arith.addi %rr, %c : i64\n" LD("%v", "%drows", "%ri", 1)
           "        %acc2 = arith.addf %acc, %v : f32\n"
           "        scf.yield %acc2 : f32\n"
           "      }\n" ST("%s", "%dh", "%i", 0)),
    /* y[n, c] = sum over k of w[n K + k] out[pos[n K + k], c], from 0.0 in k order: one
     * thread per (token, column) (prt_moe_combine_fwd) */
    KERNEL(moe_combine_fwd,
           "%y: !llvm.ptr, %out: !llvm.ptr, %w: !llvm.ptr, %pos: !llvm.ptr, %N: i64, %K: i64,"
           " %C: i64",
           "    %n = arith.muli %N, %C : i64\n",
           "%n",
           LOOP_CONSTANTS("%zf", "f32")
           "      %tok = arith.divsi %i, %C : i64\n"
           "      %c = arith.remsi %i, %C : i64\n"
           "      %kb = arith.muli %tok, %K : i64\n"
           "      %s = scf.for %k = %z to %K step %one iter_args(%acc = %zf) -> (f32) : i64 {\n"
           "        %t = arith.addi %kb, %k : i64\n" GEP("%pp", "%pos", "%t", "i32")
           GEP("%pw", "%w", "%t", "f32")
           "        %p32 = llvm.load %pp : !llvm.ptr -> i32\n"
           "        %wv = llvm.load %pw : !llvm.ptr -> f32\n"
           "        %p = arith.extsi %p32 : i32 to i64\n"
           "        %rr = arith.muli %p, %C : i64\n"
           "        %ri = arith.addi %rr, %c : i64\n" LD("%ov", "%out", "%ri", 1)
           "        %m = arith.mulf %wv, %ov : f32\n"
           "        %acc2 = arith.addf %acc, %m : f32\n"
           "        scf.yield %acc2 : f32\n"
           "      }\n" ST("%s", "%y", "%i", 0)),
    /* One thread per token copy t (row p = pos[t] of token n = t / K): dout[p, :] =
     * w[t] dy[n, :] and dweights[t] = the f64 sum over c of dy[n, c] out[p, c]
     * (prt_moe_combine_bwd; the unused rows of dout were zeroed by the host) */
    KERNEL(moe_combine_bwd,
           "%dout: !llvm.ptr, %dw: !llvm.ptr, %dy: !llvm.ptr, %out: !llvm.ptr, %w: !llvm.ptr,"
           " %pos: !llvm.ptr, %N: i64, %K: i64, %C: i64",
           "    %n = arith.muli %N, %K : i64\n",
           "%n",
           LOOP_CONSTANTS("%zd", "f64")
           "      %tok = arith.divsi %i, %K : i64\n" GEP("%pp", "%pos", "%i", "i32")
           GEP("%pw", "%w", "%i", "f32")
           "      %p32 = llvm.load %pp : !llvm.ptr -> i32\n"
           "      %wv = llvm.load %pw : !llvm.ptr -> f32\n"
           "      %p = arith.extsi %p32 : i32 to i64\n"
           "      %rb = arith.muli %p, %C : i64\n"
           "      %db = arith.muli %tok, %C : i64\n"
           "      %s = scf.for %c = %z to %C step %one iter_args(%acc = %zd) -> (f64) : i64 {\n"
           "        %di = arith.addi %db, %c : i64\n"
           "        %ri = arith.addi %rb, %c : i64\n" LD("%dv", "%dy", "%di", 2)
           LD("%ov", "%out", "%ri", 3)
           "        %g = arith.mulf %wv, %dv : f32\n" ST("%g", "%dout", "%ri", 0)
           "        %dd = arith.extf %dv : f32 to f64\n"
           "        %od = arith.extf %ov : f32 to f64\n"
           "        %m = arith.mulf %dd, %od : f64\n"
           "        %acc2 = arith.addf %acc, %m : f64\n"
           "        scf.yield %acc2 : f64\n"
           "      }\n"
           "      %sf = arith.truncf %s : f64 to f32\n" GEP("%pdw", "%dw", "%i", "f32")
           "      llvm.store %sf, %pdw : f32, !llvm.ptr\n"),
    /* act[r, f] = g sig(g) u for g = hid[r, f], u = hid[r, Fe + f] (row stride 2 Fe):
     * one thread per element of n rows (prt_moe_expert_fwd's activation; e^-g clamped, see
     * ONE_PLUS_EXP_NEG_G) */
    KERNEL(moe_silu_mul,
           "%act: !llvm.ptr, %hid: !llvm.ptr, %rows: i64, %Fe: i64",
           "    %n = arith.muli %rows, %Fe : i64\n",
           "%n",
           "      %r = arith.divsi %i, %Fe : i64\n"
           "      %f = arith.remsi %i, %Fe : i64\n"
           "      %hr = arith.muli %r, %Fe : i64\n"
           "      %hr2 = arith.addi %hr, %hr : i64\n"
           "      %gi = arith.addi %hr2, %f : i64\n"
           "      %ui = arith.addi %gi, %Fe : i64\n" GEP("%pg", "%hid", "%gi", "f32")
           GEP("%pu", "%hid", "%ui", "f32")
           "      %g = llvm.load %pg : !llvm.ptr -> f32\n"
           "      %u = llvm.load %pu : !llvm.ptr -> f32\n"
           ONE_PLUS_EXP_NEG_G
           "      %sig = arith.divf %one, %d : f32\n"
           "      %gs = arith.mulf %g, %sig : f32\n"
           "      %a = arith.mulf %gs, %u : f32\n" GEP("%pa", "%act", "%i", "f32")
           "      llvm.store %a, %pa : f32, !llvm.ptr\n"),
    /* In place of dg = dact (n, Fe): du = dact g sig and dg = dact u sig (1 + g (1 - sig)),
     * g and u from hid (row stride 2 Fe) as above (prt_moe_expert_dgu) */
    KERNEL(moe_dgu,
           "%dg: !llvm.ptr, %du: !llvm.ptr, %hid: !llvm.ptr, %rows: i64, %Fe: i64",
           "    %n = arith.muli %rows, %Fe : i64\n",
           "%n",
           "      %r = arith.divsi %i, %Fe : i64\n"
           "      %f = arith.remsi %i, %Fe : i64\n"
           "      %hr = arith.muli %r, %Fe : i64\n"
           "      %hr2 = arith.addi %hr, %hr : i64\n"
           "      %gi = arith.addi %hr2, %f : i64\n"
           "      %ui = arith.addi %gi, %Fe : i64\n" GEP("%pg", "%hid", "%gi", "f32")
           GEP("%pu", "%hid", "%ui", "f32") GEP("%pdg", "%dg", "%i", "f32")
           GEP("%pdu", "%du", "%i", "f32")
           "      %g = llvm.load %pg : !llvm.ptr -> f32\n"
           "      %u = llvm.load %pu : !llvm.ptr -> f32\n"
           "      %da = llvm.load %pdg : !llvm.ptr -> f32\n"
           ONE_PLUS_EXP_NEG_G
           "      %sig = arith.divf %one, %d : f32\n"
           "      %b1 = arith.mulf %da, %g : f32\n"
           "      %duv = arith.mulf %b1, %sig : f32\n"
           "      %a1 = arith.mulf %da, %u : f32\n"
           "      %a2 = arith.mulf %a1, %sig : f32\n"
           "      %oms = arith.subf %one, %sig : f32\n"
           "      %go = arith.mulf %g, %oms : f32\n"
           "      %fct = arith.addf %one, %go : f32\n"
           "      %dgv = arith.mulf %a2, %fct : f32\n"
           "      llvm.store %duv, %pdu : f32, !llvm.ptr\n"
           "      llvm.store %dgv, %pdg : f32, !llvm.ptr\n"),
    /* The bf16 conversions (prt_bf16_*, runtime/kernels/cpu_bf16.c): one thread per element.
     * dst[i] = src[i] widened (bf16 bits, 2 bytes each, to fp32) */
    KERNEL(bf16_widen, "%dst: !llvm.ptr, %src: !llvm.ptr, %n: i64",
           "", "%n",
           GEP("%ps", "%src", "%i", "i16")
           "      %h16 = llvm.load %ps : !llvm.ptr -> i16\n"
           "      %h = arith.extui %h16 : i16 to i32\n"
           BF16_WIDEN GEP("%pd", "%dst", "%i", "f32")
           "      llvm.store %w, %pd : f32, !llvm.ptr\n"),
    /* dst[i] = src[i] narrowed to bf16 bits (2 bytes each) */
    KERNEL(bf16_narrow, "%dst: !llvm.ptr, %src: !llvm.ptr, %n: i64",
           "", "%n",
           GEP("%ps", "%src", "%i", "f32")
           "      %x = llvm.load %ps : !llvm.ptr -> f32\n"
           BF16_NARROW
           "      %h16 = arith.trunci %h : i32 to i16\n" GEP("%pd", "%dst", "%i", "i16")
           "      llvm.store %h16, %pd : i16, !llvm.ptr\n"),
    /* dst[i] = src[i] rounded to a bf16 value, kept fp32 (dst may be src: each thread reads
     * its element before writing it) */
    KERNEL(bf16_round, "%dst: !llvm.ptr, %src: !llvm.ptr, %n: i64",
           "", "%n",
           GEP("%ps", "%src", "%i", "f32")
           "      %x = llvm.load %ps : !llvm.ptr -> f32\n"
           BF16_NARROW BF16_WIDEN GEP("%pd", "%dst", "%i", "f32")
           "      llvm.store %w, %pd : f32, !llvm.ptr\n"),
};

/* The device kernels each libpiper_rt_cuda function launches, from the kernel list's
 * `launches` column (PRT_DK_NONE-terminated). A runtime function not listed launches none of
 * ours (cuBLAS, the attention .cu, or host work). */
typedef struct {
  const char *runtimeFn;
  prt_device_kernel_id kernels[PRT_MAX_LAUNCHES];
} KernelUse;

#define USES_GPU_1(name, launches)                                                         \
  {PIPER_CUDA_KERNEL_PREFIX #name, {PRT_KERNEL_UNPAREN launches}},
#define USES_GPU_0(name, launches)
#define PRT_KERNEL(name, gpu, params, launches) USES_GPU_##gpu(name, launches)
static const KernelUse uses[] = {
#include "piper/kernels.def"
};
#undef USES_GPU_1
#undef USES_GPU_0
/* a kernel that launches more than PRT_MAX_LAUNCHES is refused here, not cut short */
#define PRT_KERNEL(name, gpu, params, launches)                                            \
  _Static_assert(sizeof((prt_device_kernel_id[]){PRT_KERNEL_UNPAREN launches}) <=          \
                     PRT_MAX_LAUNCHES * sizeof(prt_device_kernel_id),                      \
                 PIPER_CUDA_KERNEL_PREFIX #name                                            \
                 " launches more than PRT_MAX_LAUNCHES device kernels");
#include "piper/kernels.def"
enum { N_USES = sizeof uses / sizeof uses[0] };

bool piperGpuRuntimeFnKnown(const char *runtimeFn) {
  for (size_t u = 0; u < N_USES; ++u)
    if (!strcmp(uses[u].runtimeFn, runtimeFn)) return true;
  return false;
}

/* Appends s to the growing buffer *buf (length *len, capacity *cap); false when out of
 * memory (the buffer is then freed and NULL). */
static bool append(char **buf, size_t *len, size_t *cap, const char *s) {
  size_t n = strlen(s);
  if (*len + n + 1 > *cap) {
    size_t want = (*len + n + 1) * 2;
    char *b = realloc(*buf, want);
    if (!b) {
      free(*buf);
      *buf = NULL;
      return false;
    }
    *buf = b;
    *cap = want;
  }
  memcpy(*buf + *len, s, n + 1);
  *len += n;
  return true;
}

char *piperGpuKernelModule(const char *const *runtimeFns, size_t nFns) {
  bool want[PRT_DK_COUNT] = {false};
  for (size_t f = 0; f < nFns; ++f)
    for (size_t u = 0; u < N_USES; ++u) {
      if (strcmp(uses[u].runtimeFn, runtimeFns[f])) continue;
      for (size_t k = 0; k < PRT_MAX_LAUNCHES && uses[u].kernels[k] != PRT_DK_NONE; ++k)
        want[uses[u].kernels[k]] = true;
    }
  char *buf = NULL;
  size_t len = 0, cap = 0;
  bool ok = append(&buf, &len, &cap,
                   "module attributes {gpu.container_module} {\n"
                   "gpu.module @piper_kernels {\n") &&
            append(&buf, &len, &cap, helpers);
  for (size_t k = PRT_DK_NONE + 1; ok && k < PRT_DK_COUNT; ++k) {
    if (!want[k]) continue;
    if (!kernels[k].text) { /* listed in kernels.def, written nowhere: a piper defect */
      fprintf(stderr, "piper: error: device kernel #%zu of include/piper/kernels.def has no "
                      "text in lowering/gpu_kernels.c\n", k);
      free(buf);
      return NULL;
    }
    ok = append(&buf, &len, &cap, kernels[k].text);
  }
  if (ok) ok = append(&buf, &len, &cap, "}\n}\n");
  if (!ok) fprintf(stderr, "piper: error: out of memory building the GPU kernels' module\n");
  return ok ? buf : NULL;
}

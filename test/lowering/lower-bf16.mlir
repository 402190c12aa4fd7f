// --piper-precision=bf16 then --piper-lower-to-llvm: kernels compute in fp32; the lowering
// converts at their boundary (lowering/lower_common.c lwConvertBegin/End): a bf16 operand is
// widened into fp32 scratch, and a bf16 result written to scratch by the kernel, then narrowed
// into its buffer. The linears call their bf16 kernels (op-facts bf16Kernel, whose BF16_IN
// parameters in include/piper/kernels.def take bf16 buffers as they are): their bf16
// operands are passed straight, a fp32 weight narrowed into bf16 scratch.
// The scratch (one op's worth, at the end of the arena) counts in the arena, not in the
// activation peak.
// RUN: piper-opt %s --piper-autodiff --piper-precision=bf16 --piper-lower-to-llvm | FileCheck %s
// RUN: piper-opt %s --piper-autodiff --piper-lower-to-llvm | FileCheck %s --check-prefix=FP32

// A GELU between two linears over an embedding: x = wte[tok], h = gelu(x w1^T + b1),
// logits = h w2^T + b2.
// CHECK-LABEL: llvm.func @piper_step(%arg0: !llvm.ptr)
// (pointer fetches, prt_tensor, come between the calls; the order is what is checked)
// the embedding reads fp32 weights; its bf16 output goes through scratch
// CHECK: llvm.call @prt_embed_fwd
// CHECK: llvm.call @prt_bf16_narrow
// linear #1: x as it is, w1 narrowed to bf16, its fp32 result narrowed from scratch.
// CHECK-NOT: llvm.call @prt_bf16_widen
// CHECK: llvm.call @prt_bf16_narrow
// CHECK-NOT: llvm.call @prt_bf16_widen
// CHECK: llvm.call @prt_linear_fwd_bf16
// CHECK: llvm.call @prt_bf16_narrow
// gelu: bf16 in, bf16 out.
// CHECK: llvm.call @prt_bf16_widen
// CHECK: llvm.call @prt_gelu_fwd
// CHECK: llvm.call @prt_bf16_narrow
// linear #2: h as it is, w2 narrowed, the logits narrowed.
// CHECK-NOT: llvm.call @prt_bf16_widen
// CHECK: llvm.call @prt_bf16_narrow
// CHECK-NOT: llvm.call @prt_bf16_widen
// CHECK: llvm.call @prt_linear_fwd_bf16
// CHECK: llvm.call @prt_bf16_narrow
// cross-entropy: bf16 logits widened; its loss and probabilities are fp32, nothing narrowed.
// CHECK: llvm.call @prt_bf16_widen
// CHECK: llvm.call @prt_cross_entropy_fwd
// CHECK-NOT: llvm.call @prt_bf16_narrow
// CHECK: llvm.call @prt_copy
// its gradient (bf16 dlogits) narrowed
// CHECK: llvm.call @prt_cross_entropy_bwd
// CHECK: llvm.call @prt_bf16_narrow
// linear_grad_input: dy as it is, w2 narrowed, dx narrowed; linear_grad_weight: both bf16
// operands as they are, its fp32 result (the weight gradient) written directly.
// CHECK-NOT: llvm.call @prt_bf16_widen
// CHECK: llvm.call @prt_bf16_narrow
// CHECK-NOT: llvm.call @prt_bf16_widen
// CHECK: llvm.call @prt_linear_bwd_input_bf16
// CHECK: llvm.call @prt_bf16_narrow
// CHECK-NOT: llvm.call @prt_bf16_
// CHECK: llvm.call @prt_linear_bwd_weight_bf16
// CHECK-NOT: llvm.call @prt_bf16_narrow
// CHECK: llvm.call @prt_bias_bwd
// The last backward op, then the updates: fp32 master weights and gradients, no conversion.
// CHECK: llvm.call @prt_embed_bwd
// CHECK-NOT: llvm.call @prt_bf16_
// CHECK: llvm.call @prt_adamw
// CHECK-NOT: llvm.call @prt_bf16_
// CHECK: llvm.return

// fp32: no conversion anywhere.
// FP32-NOT: prt_bf16_
func.func @mlp() {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<2x3xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte"} : () -> tensor<10x4xf32>
  %x = "tdag.embed"(%tok, %wte) : (tensor<2x3xi32>, tensor<10x4xf32>) -> tensor<2x3x4xf32>
  %w1 = "tdag.param"() {init = "normal", name = "w1"} : () -> tensor<16x4xf32>
  %b1 = "tdag.param"() {init = "zeros", name = "b1"} : () -> tensor<16xf32>
  %w2 = "tdag.param"() {init = "normal", name = "w2"} : () -> tensor<8x16xf32>
  %b2 = "tdag.param"() {init = "zeros", name = "b2"} : () -> tensor<8xf32>
  %tgt = "tdag.input"() {name = "targets"} : () -> tensor<2x3xi32>
  %h = "tdag.linear"(%x, %w1, %b1) : (tensor<2x3x4xf32>, tensor<16x4xf32>, tensor<16xf32>) -> tensor<2x3x16xf32>
  %g = "tdag.gelu"(%h) : (tensor<2x3x16xf32>) -> tensor<2x3x16xf32>
  %logits = "tdag.linear"(%g, %w2, %b2) : (tensor<2x3x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %loss, %p = "tdag.cross_entropy"(%logits, %tgt) : (tensor<2x3x8xf32>, tensor<2x3xi32>) -> (tensor<f32>, tensor<2x3x8xf32>)
  "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()
  return
}

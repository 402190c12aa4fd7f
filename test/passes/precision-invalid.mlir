// The verifier holds the bf16 policy (include/piper/ops.h bf16Results): bf16 is refused,
// at the op's line and column, where the policy keeps fp32, and accepted where it stores bf16.
// RUN: piper-opt %s --split-input-file --verify-diagnostics > /dev/null

// layernorm's statistics (mean, rstd) stay fp32; its output may be bf16.
func.func @layernorm_mean_bf16(%x: tensor<2x3x4xbf16>, %w: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{result #1 is tensor<2x3xbf16>, but the bf16 policy keeps it in f32}}
  %y, %m, %r = "tdag.layernorm"(%x, %w, %b) {eps = 1.0e-05 : f64} : (tensor<2x3x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x3x4xbf16>, tensor<2x3xbf16>, tensor<2x3xf32>)
  return
}

// -----

// the loss is fp32 even when the logits are bf16
func.func @loss_bf16(%l: tensor<1x2x8xbf16>, %t: tensor<1x2xi32>) {
  // expected-error@+1 {{result #0 is tensor<bf16>, but the bf16 policy keeps it in f32}}
  %loss, %p = "tdag.cross_entropy"(%l, %t) : (tensor<1x2x8xbf16>, tensor<1x2xi32>) -> (tensor<bf16>, tensor<1x2x8xf32>)
  return
}

// -----

// a weight gradient is fp32, whatever precision its inputs have
func.func @weight_grad_bf16(%dy: tensor<2x5xbf16>, %x: tensor<2x4xbf16>) {
  // expected-error@+1 {{result #0 is tensor<5x4xbf16>, but the bf16 policy keeps it in f32}}
  %dw = "tdag.linear_grad_weight"(%dy, %x) : (tensor<2x5xbf16>, tensor<2x4xbf16>) -> tensor<5x4xbf16>
  return
}

// -----

// AdamW updates fp32 master weights from fp32 gradients
func.func @adamw_bf16_grad(%p: tensor<4xf32>, %g: tensor<4xbf16>, %m: tensor<4xf32>, %v: tensor<4xf32>) {
  // expected-error@+1 {{operand #1 is tensor<4xbf16>, but the bf16 policy keeps it in f32}}
  "tdag.adamw"(%p, %g, %m, %v) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, decay = 0 : i64} : (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>) -> ()
  return
}

// -----

// a bias gradient is a weight gradient: fp32 from bf16 activation gradients
func.func @bias_grad_bf16(%dy: tensor<2x5xbf16>) {
  // expected-error@+1 {{result #0 is tensor<5xbf16>, but the bf16 policy keeps it in f32}}
  %db = "tdag.bias_grad"(%dy) : (tensor<2x5xbf16>) -> tensor<5xbf16>
  return
}

// -----

// Where the policy stores bf16, bf16 verifies: no diagnostic.
func.func @allowed(%x: tensor<2x3x4xbf16>, %w: tensor<4xf32>, %b: tensor<4xf32>, %lw: tensor<8x4xf32>) {
  %y, %m, %r = "tdag.layernorm"(%x, %w, %b) {eps = 1.0e-05 : f64} : (tensor<2x3x4xbf16>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x3x4xbf16>, tensor<2x3xf32>, tensor<2x3xf32>)
  %h = "tdag.matmul_nt"(%y, %lw) : (tensor<2x3x4xbf16>, tensor<8x4xf32>) -> tensor<2x3x8xbf16>
  %s = "tdag.add"(%y, %x) : (tensor<2x3x4xbf16>, tensor<2x3x4xbf16>) -> tensor<2x3x4xbf16>
  return
}

// -----

// the MoE router's scores are read in fp32 (moe_topk's fp32Operands)
func.func @router_scores_bf16(%l: tensor<4x8xbf16>) {
  // expected-error@+1 {{operand #0 is tensor<4x8xbf16>, but the bf16 policy keeps it in f32}}
  %w, %e = "tdag.moe_topk"(%l) {top_k = 2 : i64} : (tensor<4x8xbf16>) -> (tensor<4x2xf32>, tensor<4x2xi32>)
  return
}

// --piper-lower-to-llvm on the Qwen3 ops: each becomes its libpiper_rt kernel call
// (include/piper/runtime.h) with the sizes of its rule in lowering/lower_compute.c, and each
// gradient kernel reads the buffers its forward wrote (the saved rstd, out and lse, q, k, v).
// Sizes are distinct where they can be: B=2 T=3 C=8 H=4 KV=2 D=2 V=16.
// RUN: piper-opt %s --piper-autodiff --piper-lower-to-llvm | FileCheck %s

// CHECK-LABEL: llvm.func @piper_step
// prt_embed_fwd(out, tok, wte, B*T, C, V)
// CHECK: %[[EN:[0-9]+]] = llvm.mlir.constant(6 : i64) : i64
// CHECK-NEXT: %[[EC:[0-9]+]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-NEXT: %[[EV:[0-9]+]] = llvm.mlir.constant(16 : i64) : i64
// CHECK-NEXT: llvm.call @prt_embed_fwd(%[[X:[0-9]+]], %[[TOK:[0-9]+]], %{{[0-9]+}}, %[[EN]], %[[EC]], %[[EV]])
// prt_rmsnorm_fwd(y, rstd, x, w, rows, D, eps): the plain norm has B*T rows of C ...
// CHECK: %[[R1:[0-9]+]] = llvm.mlir.constant(6 : i64) : i64
// CHECK-NEXT: %[[D1:[0-9]+]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-NEXT: %[[EPS:[0-9]+]] = llvm.mlir.constant(9.99999997E-7 : f32) : f32
// CHECK-NEXT: llvm.call @prt_rmsnorm_fwd(%[[H:[0-9]+]], %[[HRSTD:[0-9]+]], %[[X]], %[[WN:[0-9]+]], %[[R1]], %[[D1]], %[[EPS]])
// ... the per-head norm B*T*H rows of D.
// CHECK: %[[R2:[0-9]+]] = llvm.mlir.constant(24 : i64) : i64
// CHECK-NEXT: %[[D2:[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK: llvm.call @prt_rmsnorm_fwd(%[[QN:[0-9]+]], %[[QRSTD:[0-9]+]], %[[H]], %[[WQN:[0-9]+]], %[[R2]], %[[D2]], %{{[0-9]+}})
// prt_rope_fwd(y, x, B, T, N, D, theta)
// CHECK: %[[PB:[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: %[[PT:[0-9]+]] = llvm.mlir.constant(3 : i64) : i64
// CHECK-NEXT: %[[PN:[0-9]+]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-NEXT: %[[PD:[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: %[[THETA:[0-9]+]] = llvm.mlir.constant(5.000000e+05 : f32) : f32
// CHECK-NEXT: llvm.call @prt_rope_fwd(%[[Q:[0-9]+]], %[[QN]], %[[PB]], %[[PT]], %[[PN]], %[[PD]], %[[THETA]])
// prt_gqa_attention_fwd(out, lse, q, k, v, B, T, H, KV, D)
// CHECK: %[[GB:[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: %[[GT:[0-9]+]] = llvm.mlir.constant(3 : i64) : i64
// CHECK-NEXT: %[[GH:[0-9]+]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-NEXT: %[[GKV:[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: %[[GD:[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK: llvm.call @prt_gqa_attention_fwd(%[[ATT:[0-9]+]], %[[LSE:[0-9]+]], %[[Q]], %[[K:[0-9]+]], %[[K]], %[[GB]], %[[GT]], %[[GH]], %[[GKV]], %[[GD]])
// prt_swiglu_fwd(y, gate, up, n)
// CHECK: %[[SN:[0-9]+]] = llvm.mlir.constant(48 : i64) : i64
// CHECK-NEXT: llvm.call @prt_swiglu_fwd(%{{[0-9]+}}, %[[ATT]], %[[H]], %[[SN]])
// ---- backward ----
// prt_swiglu_bwd(dgate, dup, dy, gate, up, n)
// CHECK: llvm.call @prt_swiglu_bwd(%[[DATT:[0-9]+]], %{{[0-9]+}}, %{{[0-9]+}}, %[[ATT]], %[[H]], %{{[0-9]+}})
// prt_gqa_attention_bwd(dq, dk, dv, dy, q, k, v, out, lse, B, T, H, KV, D)
// CHECK: %[[BB:[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: %[[BT:[0-9]+]] = llvm.mlir.constant(3 : i64) : i64
// CHECK-NEXT: %[[BH:[0-9]+]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-NEXT: %[[BKV:[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: %[[BD:[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK: llvm.call @prt_gqa_attention_bwd(%[[DQ:[0-9]+]], %{{[0-9]+}}, %{{[0-9]+}}, %[[DATT]], %[[Q]], %[[K]], %[[K]], %[[ATT]], %[[LSE]], %[[BB]], %[[BT]], %[[BH]], %[[BKV]], %[[BD]])
// prt_rope_bwd(dx, dy, B, T, N, D, theta)
// CHECK: llvm.call @prt_rope_bwd(%[[DQN:[0-9]+]], %[[DQ]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}})
// prt_rmsnorm_bwd(dx, dw, dy, x, w, rstd, rows, D): the per-head norm, then the plain one
// CHECK: %[[BR2:[0-9]+]] = llvm.mlir.constant(24 : i64) : i64
// CHECK-NEXT: %[[BD2:[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: llvm.call @prt_rmsnorm_bwd(%{{[0-9]+}}, %{{[0-9]+}}, %[[DQN]], %[[H]], %[[WQN]], %[[QRSTD]], %[[BR2]], %[[BD2]])
// CHECK: %[[BR1:[0-9]+]] = llvm.mlir.constant(6 : i64) : i64
// CHECK-NEXT: %[[BD1:[0-9]+]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-NEXT: llvm.call @prt_rmsnorm_bwd(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[X]], %[[WN]], %[[HRSTD]], %[[BR1]], %[[BD1]])
// prt_embed_bwd(dwte, dy, tok, B*T, C, V)
// CHECK: %[[BN:[0-9]+]] = llvm.mlir.constant(6 : i64) : i64
// CHECK-NEXT: %[[BC:[0-9]+]] = llvm.mlir.constant(8 : i64) : i64
// CHECK-NEXT: %[[BV:[0-9]+]] = llvm.mlir.constant(16 : i64) : i64
// CHECK-NEXT: llvm.call @prt_embed_bwd(%{{[0-9]+}}, %{{[0-9]+}}, %[[TOK]], %[[BN]], %[[BC]], %[[BV]])
// CHECK-LABEL: llvm.func @prt_arena
func.func @qwen3_kernels() {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<2x3xi32>
  %tgt = "tdag.input"() {name = "targets"} : () -> tensor<2x3xi32>
  %wte = "tdag.param"() {init = "normal", name = "embed"} : () -> tensor<16x8xf32>
  %wn = "tdag.param"() {init = "ones", name = "norm"} : () -> tensor<8xf32>
  %wqn = "tdag.param"() {init = "ones", name = "q_norm"} : () -> tensor<2xf32>
  %wk = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<4x8xf32>
  %x = "tdag.embed"(%tok, %wte) : (tensor<2x3xi32>, tensor<16x8xf32>) -> tensor<2x3x8xf32>
  %h, %hr = "tdag.rmsnorm"(%x, %wn) {eps = 1.0e-06 : f64} : (tensor<2x3x8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x1xf32>)
  %qn, %qr = "tdag.rmsnorm"(%h, %wqn) {eps = 1.0e-06 : f64} : (tensor<2x3x8xf32>, tensor<2xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x4xf32>)
  %q = "tdag.rope"(%qn) {head_dim = 2 : i64, theta = 5.0e+05 : f64} : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %k = "tdag.matmul_nt"(%x, %wk) : (tensor<2x3x8xf32>, tensor<4x8xf32>) -> tensor<2x3x4xf32>
  %att, %lse = "tdag.gqa_attention"(%q, %k, %k) {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<2x3x8xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x8xf32>, tensor<2x4x3xf32>)
  %act = "tdag.swiglu"(%att, %h) : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %logits = "tdag.matmul_nt"(%act, %wte) : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
  %loss, %p = "tdag.cross_entropy"(%logits, %tgt) : (tensor<2x3x16xf32>, tensor<2x3xi32>) -> (tensor<f32>, tensor<2x3x16xf32>)
  "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()
  return
}

// --piper-lower-to-llvm on the MoE ops: each becomes its libpiper_rt kernel call with the sizes
// of its rule in lowering/lower_compute.c; moe_experts and moe_experts_grad_input call their
// kernel once per expert (j = 0, 1) with that expert's weights, and the gradient kernels read
// the buffers the forward wrote (dispatched rows, counts, saved hidden).
// N = 2 tokens, C = 4, E = 2 experts, K = 1, Fe = 3: R = 2 rows, one group (cap 2).
// RUN: piper-opt %s --piper-autodiff --piper-lower-to-llvm | FileCheck %s

// CHECK-LABEL: llvm.func @piper_step
// prt_moe_topk_fwd(weights, experts, logits, N, E, K)
// CHECK: llvm.call @prt_moe_topk_fwd(%[[W:[0-9]+]], %[[EX:[0-9]+]], %{{[0-9]+}}, %[[TN:[0-9]+]], %[[TE:[0-9]+]], %[[TK:[0-9]+]])
// prt_moe_dispatch_fwd(rows, counts, h, experts, N, K, C, E, G)
// CHECK: llvm.call @prt_moe_dispatch_fwd(%[[ROWS:[0-9]+]], %[[COUNTS:[0-9]+]], %{{[0-9]+}}, %[[EX]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}})
// prt_moe_expert_fwd(out, hidden, rows, counts, G, cap, El, j, wg, wu, wd, C, Fe), j = 0 then 1
// CHECK: %[[G0:[0-9]+]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: %[[CAP0:[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: %[[EL0:[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: %[[J0:[0-9]+]] = llvm.mlir.constant(0 : i64) : i64
// CHECK: %[[C0:[0-9]+]] = llvm.mlir.constant(4 : i64) : i64
// CHECK-NEXT: %[[FE0:[0-9]+]] = llvm.mlir.constant(3 : i64) : i64
// CHECK-NEXT: llvm.call @prt_moe_expert_fwd(%[[OUT:[0-9]+]], %[[HID:[0-9]+]], %[[ROWS]], %[[COUNTS]], %[[G0]], %[[CAP0]], %[[EL0]], %[[J0]], %[[WG0:[0-9]+]], %[[WU0:[0-9]+]], %[[WD0:[0-9]+]], %[[C0]], %[[FE0]])
// CHECK: llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT: llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: llvm.mlir.constant(2 : i64) : i64
// CHECK-NEXT: %[[J1:[0-9]+]] = llvm.mlir.constant(1 : i64) : i64
// CHECK: llvm.call @prt_moe_expert_fwd(%[[OUT]], %[[HID]], %[[ROWS]], %[[COUNTS]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[J1]], %[[WG1:[0-9]+]], %[[WU1:[0-9]+]], %[[WD1:[0-9]+]], %{{[0-9]+}}, %{{[0-9]+}})
// prt_moe_combine_fwd(y, out, weights, experts, N, K, C, E, G)
// CHECK: llvm.call @prt_moe_combine_fwd(%{{[0-9]+}}, %[[OUT]], %[[W]], %[[EX]],
// ---- backward ----
// CHECK: llvm.call @prt_moe_combine_bwd(%[[DOUT:[0-9]+]], %[[DW:[0-9]+]], %{{[0-9]+}}, %[[OUT]], %[[W]], %[[EX]],
// CHECK: llvm.call @prt_moe_expert_bwd_input(%[[DROWS:[0-9]+]], %[[DOUT]], %[[COUNTS]], %[[HID]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[WG0]], %[[WU0]], %[[WD0]],
// CHECK: llvm.call @prt_moe_expert_bwd_input(%[[DROWS]], %[[DOUT]], %[[COUNTS]], %[[HID]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[WG1]], %[[WU1]], %[[WD1]],
// prt_moe_expert_bwd_weight(dwg, dwu, dwd, dout, rows, counts, hidden, G, cap, El, j, wd, C, Fe)
// CHECK: llvm.call @prt_moe_expert_bwd_weight(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[DOUT]], %[[ROWS]], %[[COUNTS]], %[[HID]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[WD0]],
// CHECK: llvm.call @prt_moe_expert_bwd_weight(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[DOUT]], %[[ROWS]], %[[COUNTS]], %[[HID]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[WD1]],
// CHECK: llvm.call @prt_moe_dispatch_bwd(%{{[0-9]+}}, %[[DROWS]], %[[EX]],
// prt_moe_topk_bwd(dlogits, dweights, weights, experts, N, E, K)
// CHECK: llvm.call @prt_moe_topk_bwd(%{{[0-9]+}}, %[[DW]], %[[W]], %[[EX]],

func.func @moe() {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<1x2xi32>
  %tgt = "tdag.input"() {name = "targets"} : () -> tensor<1x2xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte"} : () -> tensor<8x4xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe"} : () -> tensor<2x4xf32>
  %gate = "tdag.param"() {init = "normal", name = "gate"} : () -> tensor<2x4xf32>
  %g0 = "tdag.param"() {init = "normal", name = "e0.gate"} : () -> tensor<3x4xf32>
  %g1 = "tdag.param"() {init = "normal", name = "e1.gate"} : () -> tensor<3x4xf32>
  %u0 = "tdag.param"() {init = "normal", name = "e0.up"} : () -> tensor<3x4xf32>
  %u1 = "tdag.param"() {init = "normal", name = "e1.up"} : () -> tensor<3x4xf32>
  %d0 = "tdag.param"() {init = "normal", name = "e0.down"} : () -> tensor<4x3xf32>
  %d1 = "tdag.param"() {init = "normal", name = "e1.down"} : () -> tensor<4x3xf32>
  %x = "tdag.embedding"(%tok, %wte, %wpe) : (tensor<1x2xi32>, tensor<8x4xf32>, tensor<2x4xf32>) -> tensor<1x2x4xf32>
  %l = "tdag.matmul_nt"(%x, %gate) {tags = {layer = 0 : i64}} : (tensor<1x2x4xf32>, tensor<2x4xf32>) -> tensor<1x2x2xf32>
  %w, %ex = "tdag.moe_topk"(%l) {top_k = 1 : i64, tags = {layer = 0 : i64}} : (tensor<1x2x2xf32>) -> (tensor<1x2x1xf32>, tensor<1x2x1xi32>)
  %rows, %counts = "tdag.moe_dispatch"(%x, %ex) {num_experts = 2 : i64, tags = {EP = 0 : i64, layer = 0 : i64}} : (tensor<1x2x4xf32>, tensor<1x2x1xi32>) -> (tensor<2x4xf32>, tensor<2xi32>)
  %out, %hid = "tdag.moe_experts"(%rows, %counts, %g0, %g1, %u0, %u1, %d0, %d1) {operandSegmentSizes = array<i32: 1, 1, 2, 2, 2>, tags = {EP = 0 : i64, layer = 0 : i64}} : (tensor<2x4xf32>, tensor<2xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<2x4xf32>, tensor<2x6xf32>)
  %y = "tdag.moe_combine"(%out, %w, %ex) {num_experts = 2 : i64, tags = {layer = 0 : i64}} : (tensor<2x4xf32>, tensor<1x2x1xf32>, tensor<1x2x1xi32>) -> tensor<1x2x4xf32>
  %logits = "tdag.matmul_nt"(%y, %wte) : (tensor<1x2x4xf32>, tensor<8x4xf32>) -> tensor<1x2x8xf32>
  %loss, %p = "tdag.cross_entropy"(%logits, %tgt) : (tensor<1x2x8xf32>, tensor<1x2xi32>) -> (tensor<f32>, tensor<1x2x8xf32>)
  "tdag.output"(%loss) {name = "loss"} : (tensor<f32>) -> ()
  // One weight-gradient op per expert, reading its down weight:
  // Expert weights are updated with their own gradients:
  return
}

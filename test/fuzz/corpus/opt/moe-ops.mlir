// Every MoE op parses, verifies and round-trips: B=1 T=2 (N=2 tokens) C=4 E=4 K=2 Fe=3, one
// group (R = N*min(K,E) = 4 rows), and two groups (E/G = 2 local experts, R = 2*2*2 = 8).

func.func @moe_ops(%h: tensor<1x2x4xf32>, %gate: tensor<4x4xf32>, %g0: tensor<3x4xf32>, %u0: tensor<3x4xf32>, %d0: tensor<4x3xf32>, %g1: tensor<3x4xf32>, %u1: tensor<3x4xf32>, %d1: tensor<4x3xf32>) {
  %logits = "tdag.matmul_nt"(%h, %gate) : (tensor<1x2x4xf32>, tensor<4x4xf32>) -> tensor<1x2x4xf32>
  // CHECK: "tdag.moe_topk"{{.*}}top_k = 2 : i64{{.*}} -> (tensor<1x2x2xf32>, tensor<1x2x2xi32>)
  %w, %ex = "tdag.moe_topk"(%logits) {top_k = 2 : i64} : (tensor<1x2x4xf32>) -> (tensor<1x2x2xf32>, tensor<1x2x2xi32>)
  // CHECK: "tdag.moe_dispatch"{{.*}}num_experts = 4 : i64{{.*}} -> (tensor<4x4xf32>, tensor<4xi32>)
  %rows, %counts = "tdag.moe_dispatch"(%h, %ex) {num_experts = 4 : i64} : (tensor<1x2x4xf32>, tensor<1x2x2xi32>) -> (tensor<4x4xf32>, tensor<4xi32>)
  // CHECK: "tdag.moe_experts"({{.*}}) {operandSegmentSizes = array<i32: 1, 1, 4, 4, 4>} : (tensor<4x4xf32>, tensor<4xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<4x4xf32>, tensor<4x6xf32>)
  %out, %hid = "tdag.moe_experts"(%rows, %counts, %g0, %g1, %g0, %g1, %u0, %u1, %u0, %u1, %d0, %d1, %d0, %d1) {operandSegmentSizes = array<i32: 1, 1, 4, 4, 4>} : (tensor<4x4xf32>, tensor<4xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<4x4xf32>, tensor<4x6xf32>)
  // CHECK: "tdag.moe_combine"{{.*}} -> tensor<1x2x4xf32>
  %y = "tdag.moe_combine"(%out, %w, %ex) {num_experts = 4 : i64} : (tensor<4x4xf32>, tensor<1x2x2xf32>, tensor<1x2x2xi32>) -> tensor<1x2x4xf32>
  // CHECK: "tdag.moe_combine_grad"{{.*}} -> (tensor<4x4xf32>, tensor<1x2x2xf32>)
  %dout, %dw = "tdag.moe_combine_grad"(%y, %out, %w, %ex) {num_experts = 4 : i64} : (tensor<1x2x4xf32>, tensor<4x4xf32>, tensor<1x2x2xf32>, tensor<1x2x2xi32>) -> (tensor<4x4xf32>, tensor<1x2x2xf32>)
  // CHECK: "tdag.moe_experts_grad_input"{{.*}} -> tensor<4x4xf32>
  %drows = "tdag.moe_experts_grad_input"(%dout, %counts, %hid, %g0, %g1, %g0, %g1, %u0, %u1, %u0, %u1, %d0, %d1, %d0, %d1) {operandSegmentSizes = array<i32: 1, 1, 1, 4, 4, 4>} : (tensor<4x4xf32>, tensor<4xi32>, tensor<4x6xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x4xf32>
  // CHECK: "tdag.moe_experts_grad_weight"{{.*}}expert = 3 : i64{{.*}} -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>)
  %dg, %du, %dd = "tdag.moe_experts_grad_weight"(%dout, %rows, %counts, %hid, %d1) {expert = 3 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xi32>, tensor<4x6xf32>, tensor<4x3xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>)
  // CHECK: "tdag.moe_dispatch_grad"{{.*}} -> tensor<1x2x4xf32>
  %dh = "tdag.moe_dispatch_grad"(%drows, %ex) {num_experts = 4 : i64} : (tensor<4x4xf32>, tensor<1x2x2xi32>) -> tensor<1x2x4xf32>
  // CHECK: "tdag.moe_topk_grad"{{.*}} -> tensor<1x2x4xf32>
  %dl = "tdag.moe_topk_grad"(%dw, %w, %ex) : (tensor<1x2x2xf32>, tensor<1x2x2xf32>, tensor<1x2x2xi32>) -> tensor<1x2x4xf32>
  return
}

// Two groups of two experts: each group's block holds N*min(K,2) = 4 rows.
func.func @moe_groups(%h: tensor<2x4xf32>, %ex: tensor<2x2xi32>, %w: tensor<2x2xf32>, %g0: tensor<3x4xf32>, %u0: tensor<3x4xf32>, %d0: tensor<4x3xf32>, %g1: tensor<3x4xf32>, %u1: tensor<3x4xf32>, %d1: tensor<4x3xf32>) {
  // CHECK: "tdag.moe_dispatch"{{.*}}groups = 2 : i64, num_experts = 4 : i64{{.*}} -> (tensor<8x4xf32>, tensor<4xi32>)
  %rows, %counts = "tdag.moe_dispatch"(%h, %ex) {num_experts = 4 : i64, groups = 2 : i64} : (tensor<2x4xf32>, tensor<2x2xi32>) -> (tensor<8x4xf32>, tensor<4xi32>)
  // the local experts of one group: counts (G * El) = (4)
  // CHECK: "tdag.moe_experts"{{.*}}groups = 2 : i64
  %out, %hid = "tdag.moe_experts"(%rows, %counts, %g0, %g1, %u0, %u1, %d0, %d1) {groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 2, 2, 2>} : (tensor<8x4xf32>, tensor<4xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<8x4xf32>, tensor<8x6xf32>)
  %y = "tdag.moe_combine"(%out, %w, %ex) {num_experts = 4 : i64, groups = 2 : i64} : (tensor<8x4xf32>, tensor<2x2xf32>, tensor<2x2xi32>) -> tensor<2x4xf32>
  return
}

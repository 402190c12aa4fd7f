// Malformed MoE ops are rejected with a diagnostic at the op (N=2 tokens, C=4, E=4, K=2, Fe=3).
// RUN: piper-opt %s --split-input-file --verify-diagnostics > /dev/null

func.func @topk_k_attr(%l: tensor<2x4xf32>) {
  // expected-error@+1 {{top_k = 3 must be the last dim of the weights tensor<2x2xf32>}}
  %w, %e = "tdag.moe_topk"(%l) {top_k = 3 : i64} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
  return
}

// -----

func.func @topk_k_above_e(%l: tensor<2x4xf32>) {
  // expected-error@+1 {{expects logits (...,E), weights and experts (...,K) with 1 <= K <= E}}
  %w, %e = "tdag.moe_topk"(%l) {top_k = 5 : i64} : (tensor<2x4xf32>) -> (tensor<2x5xf32>, tensor<2x5xi32>)
  return
}

// -----

func.func @topk_experts_f32(%l: tensor<2x4xf32>) {
  // expected-error@+1 {{result #1 must be a statically shaped tensor of i32, got tensor<2x2xf32>}}
  %w, %e = "tdag.moe_topk"(%l) {top_k = 2 : i64} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
  return
}

// -----

func.func @topk_grad_tokens(%dw: tensor<2x2xf32>, %w: tensor<2x2xf32>, %e: tensor<3x2xi32>) {
  // expected-error@+1 {{expects logits (...,E), weights and experts (...,K)}}
  %d = "tdag.moe_topk_grad"(%dw, %w, %e) : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<3x2xi32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @dispatch_groups(%h: tensor<2x4xf32>, %e: tensor<2x2xi32>) {
  // expected-error@+1 {{num_experts = 4 must be in [1, 1048576] and divisible by groups = 3}}
  %r, %c = "tdag.moe_dispatch"(%h, %e) {num_experts = 4 : i64, groups = 3 : i64} : (tensor<2x4xf32>, tensor<2x2xi32>) -> (tensor<4x4xf32>, tensor<4xi32>)
  return
}

// -----

func.func @dispatch_rows(%h: tensor<2x4xf32>, %e: tensor<2x2xi32>) {
  // expected-error@+1 {{rows must be (G*N*min(K,E/G), C) = (4,4) for 2 tokens, K = 2, E = 4, G = 1; got tensor<3x4xf32>}}
  %r, %c = "tdag.moe_dispatch"(%h, %e) {num_experts = 4 : i64} : (tensor<2x4xf32>, tensor<2x2xi32>) -> (tensor<3x4xf32>, tensor<4xi32>)
  return
}

// -----

func.func @dispatch_counts(%h: tensor<2x4xf32>, %e: tensor<2x2xi32>) {
  // expected-error@+1 {{counts must be (num_experts) = (4), got tensor<2xi32>}}
  %r, %c = "tdag.moe_dispatch"(%h, %e) {num_experts = 4 : i64} : (tensor<2x4xf32>, tensor<2x2xi32>) -> (tensor<4x4xf32>, tensor<2xi32>)
  return
}

// -----

func.func @dispatch_tokens(%h: tensor<3x4xf32>, %e: tensor<2x2xi32>) {
  // expected-error@+1 {{h tensor<3x4xf32> and experts tensor<2x2xi32> must have the same leading (token) dims}}
  %r, %c = "tdag.moe_dispatch"(%h, %e) {num_experts = 4 : i64} : (tensor<3x4xf32>, tensor<2x2xi32>) -> (tensor<4x4xf32>, tensor<4xi32>)
  return
}

// -----

func.func @dispatch_k_above_e(%h: tensor<2x4xf32>, %e: tensor<2x5xi32>) {
  // expected-error@+1 {{experts must be (...,K) with 1 <= K <= num_experts = 4, got tensor<2x5xi32>}}
  %r, %c = "tdag.moe_dispatch"(%h, %e) {num_experts = 4 : i64} : (tensor<2x4xf32>, tensor<2x5xi32>) -> (tensor<8x4xf32>, tensor<4xi32>)
  return
}

// -----

func.func @dispatch_grad_rows(%d: tensor<5x4xf32>, %e: tensor<2x2xi32>) {
  // expected-error@+1 {{rows must be (G*N*min(K,E/G), C) = (4,4)}}
  %dh = "tdag.moe_dispatch_grad"(%d, %e) {num_experts = 4 : i64} : (tensor<5x4xf32>, tensor<2x2xi32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @experts_weight_shape(%r: tensor<4x4xf32>, %c: tensor<1xi32>, %g: tensor<3x4xf32>, %u: tensor<3x5xf32>, %d: tensor<4x3xf32>) {
  // expected-error@+1 {{expert 0: expects gate (Fe,C), up (Fe,C), down (C,Fe) with C = 4, Fe = 3; got tensor<3x4xf32>, tensor<3x5xf32>, tensor<4x3xf32>}}
  %o, %h = "tdag.moe_experts"(%r, %c, %g, %u, %d) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<4x4xf32>, tensor<1xi32>, tensor<3x4xf32>, tensor<3x5xf32>, tensor<4x3xf32>) -> (tensor<4x4xf32>, tensor<4x6xf32>)
  return
}

// -----

func.func @experts_counts(%r: tensor<4x4xf32>, %c: tensor<4xi32>, %g: tensor<3x4xf32>, %u: tensor<3x4xf32>, %d: tensor<4x3xf32>) {
  // expected-error@+1 {{counts must be (groups * local experts) = (1), got tensor<4xi32>}}
  %o, %h = "tdag.moe_experts"(%r, %c, %g, %u, %d) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<4x4xf32>, tensor<4xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>) -> (tensor<4x4xf32>, tensor<4x6xf32>)
  return
}

// -----

func.func @experts_hidden(%r: tensor<4x4xf32>, %c: tensor<1xi32>, %g: tensor<3x4xf32>, %u: tensor<3x4xf32>, %d: tensor<4x3xf32>) {
  // expected-error@+1 {{hidden must be (R, 2Fe) = (4,6), got tensor<4x3xf32>}}
  %o, %h = "tdag.moe_experts"(%r, %c, %g, %u, %d) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<4x4xf32>, tensor<1xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>) -> (tensor<4x4xf32>, tensor<4x3xf32>)
  return
}

// -----

func.func @experts_rows_groups(%r: tensor<5x4xf32>, %c: tensor<2xi32>, %g: tensor<3x4xf32>, %u: tensor<3x4xf32>, %d: tensor<4x3xf32>) {
  // expected-error@+1 {{rows must be (R,C) with R divisible by groups = 2, got tensor<5x4xf32>}}
  %o, %h = "tdag.moe_experts"(%r, %c, %g, %u, %d) {groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<5x4xf32>, tensor<2xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>) -> (tensor<5x4xf32>, tensor<5x6xf32>)
  return
}

// -----

func.func @experts_segments(%r: tensor<4x4xf32>, %c: tensor<1xi32>, %g: tensor<3x4xf32>, %u: tensor<3x4xf32>) {
  // expected-error@+1 {{expects a gate, an up and a down weight for each local expert: a positive multiple of 3 weights, got 2}}
  %o, %h = "tdag.moe_experts"(%r, %c, %g, %u) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (tensor<4x4xf32>, tensor<1xi32>, tensor<3x4xf32>, tensor<3x4xf32>) -> (tensor<4x4xf32>, tensor<4x6xf32>)
  return
}

// -----

func.func @experts_grad_input_shape(%do: tensor<4x4xf32>, %c: tensor<1xi32>, %h: tensor<4x6xf32>, %g: tensor<3x4xf32>, %u: tensor<3x4xf32>, %d: tensor<4x3xf32>) {
  // expected-error@+1 {{drows must have dout's shape tensor<4x4xf32>, got tensor<4x5xf32>}}
  %dr = "tdag.moe_experts_grad_input"(%do, %c, %h, %g, %u, %d) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>} : (tensor<4x4xf32>, tensor<1xi32>, tensor<4x6xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @experts_grad_weight_index(%do: tensor<4x4xf32>, %r: tensor<4x4xf32>, %c: tensor<2xi32>, %h: tensor<4x6xf32>, %d: tensor<4x3xf32>) {
  // expected-error@+1 {{expert = 2 must be a local expert index in [0, 2)}}
  %a, %b, %e = "tdag.moe_experts_grad_weight"(%do, %r, %c, %h, %d) {expert = 2 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<2xi32>, tensor<4x6xf32>, tensor<4x3xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>)
  return
}

// -----

func.func @experts_grad_weight_results(%do: tensor<4x4xf32>, %r: tensor<4x4xf32>, %c: tensor<2xi32>, %h: tensor<4x6xf32>, %d: tensor<4x3xf32>) {
  // expected-error@+1 {{results must be dgate (Fe,C), dup (Fe,C), ddown (C,Fe) = (3,4), (3,4), (4,3)}}
  %a, %b, %e = "tdag.moe_experts_grad_weight"(%do, %r, %c, %h, %d) {expert = 1 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<2xi32>, tensor<4x6xf32>, tensor<4x3xf32>) -> (tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>)
  return
}

// -----

func.func @combine_rows(%o: tensor<8x4xf32>, %w: tensor<2x2xf32>, %e: tensor<2x2xi32>) {
  // expected-error@+1 {{rows must be (G*N*min(K,E/G), C) = (4,4)}}
  %y = "tdag.moe_combine"(%o, %w, %e) {num_experts = 4 : i64} : (tensor<8x4xf32>, tensor<2x2xf32>, tensor<2x2xi32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @combine_channels(%o: tensor<4x4xf32>, %w: tensor<2x2xf32>, %e: tensor<2x2xi32>) {
  // expected-error@+1 {{expects weights and experts (...,K) and y (...,C) over the same tokens}}
  %y = "tdag.moe_combine"(%o, %w, %e) {num_experts = 4 : i64} : (tensor<4x4xf32>, tensor<2x2xf32>, tensor<2x2xi32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @combine_grad_results(%dy: tensor<2x4xf32>, %o: tensor<4x4xf32>, %w: tensor<2x2xf32>, %e: tensor<2x2xi32>) {
  // expected-error@+1 {{results must be dout tensor<4x4xf32> and dweights tensor<2x2xf32>}}
  %a, %b = "tdag.moe_combine_grad"(%dy, %o, %w, %e) {num_experts = 4 : i64} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x2xf32>, tensor<2x2xi32>) -> (tensor<4x4xf32>, tensor<2x3xf32>)
  return
}

// -----

func.func @combine_missing_num_experts(%o: tensor<4x4xf32>, %w: tensor<2x2xf32>, %e: tensor<2x2xi32>) {
  // expected-error@+1 {{num_experts}}
  %y = "tdag.moe_combine"(%o, %w, %e) : (tensor<4x4xf32>, tensor<2x2xf32>, tensor<2x2xi32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @dispatch_too_many_experts(%h: tensor<2x4xf32>, %e: tensor<2x2xi32>) {
  // expected-error@+1 {{num_experts = 4611686018427387904 must be in [1, 1048576]}}
  %r, %c = "tdag.moe_dispatch"(%h, %e) {num_experts = 4611686018427387904 : i64} : (tensor<2x4xf32>, tensor<2x2xi32>) -> (tensor<4x4xf32>, tensor<4xi32>)
  return
}

// -----

// Six weights, but not two of each kind: the groups would pair the wrong weights.
func.func @experts_uneven_groups(%r: tensor<4x4xf32>, %c: tensor<2xi32>, %w: tensor<4x4xf32>) {
  // expected-error@+1 {{the gates, ups and downs must be 2 weights each (operandSegmentSizes)}}
  %o, %h = "tdag.moe_experts"(%r, %c, %w, %w, %w, %w, %w, %w) {operandSegmentSizes = array<i32: 1, 1, 1, 2, 3>} : (tensor<4x4xf32>, tensor<2xi32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x8xf32>)
  return
}

// -----

func.func @experts_groups_huge(%r: tensor<4x4xf32>, %c: tensor<1xi32>, %g: tensor<3x4xf32>, %u: tensor<3x4xf32>, %d: tensor<4x3xf32>) {
  // expected-error@+1 {{rows must be (R,C) with R divisible by groups = 4611686018427387904}}
  %o, %h = "tdag.moe_experts"(%r, %c, %g, %u, %d) {groups = 4611686018427387904 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<4x4xf32>, tensor<1xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>) -> (tensor<4x4xf32>, tensor<4x6xf32>)
  return
}

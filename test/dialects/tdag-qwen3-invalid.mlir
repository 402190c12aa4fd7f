// Malformed Qwen3 tdag ops are rejected with a diagnostic at the offending op.
// RUN: piper-opt %s --split-input-file --verify-diagnostics > /dev/null

func.func @embed_dim_mismatch(%tok: tensor<1x2xi32>, %wte: tensor<8x4xf32>) {
  // expected-error@+1 {{expects tokens(B,T), wte(V,C) and x(B,T,C); got tokens tensor<1x2xi32>, wte tensor<8x4xf32>, x tensor<1x2x5xf32>}}
  %0 = "tdag.embed"(%tok, %wte) : (tensor<1x2xi32>, tensor<8x4xf32>) -> tensor<1x2x5xf32>
  return
}

// -----

func.func @embed_float_tokens(%tok: tensor<1x2xf32>, %wte: tensor<8x4xf32>) {
  // expected-error@+1 {{operand #0 must be a statically shaped tensor of i32, got tensor<1x2xf32>}}
  %0 = "tdag.embed"(%tok, %wte) : (tensor<1x2xf32>, tensor<8x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @embed_grad_width(%dy: tensor<1x2x4xf32>, %tok: tensor<1x2xi32>) {
  // expected-error@+1 {{expects tokens(B,T), wte(V,C) and x(B,T,C)}}
  %0 = "tdag.embed_grad"(%dy, %tok) : (tensor<1x2x4xf32>, tensor<1x2xi32>) -> tensor<8x3xf32>
  return
}

// -----

func.func @rmsnorm_chunk_not_dividing(%x: tensor<1x2x6xf32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{weight must be (D) with D dividing the last dim of x tensor<1x2x6xf32>, got tensor<4xf32>}}
  %0, %1 = "tdag.rmsnorm"(%x, %w) {eps = 1.0e-06 : f64} : (tensor<1x2x6xf32>, tensor<4xf32>) -> (tensor<1x2x6xf32>, tensor<1x2x1xf32>)
  return
}

// -----

func.func @rmsnorm_rstd_shape(%x: tensor<1x2x6xf32>, %w: tensor<3xf32>) {
  // expected-error@+1 {{rstd must be x's shape with last dim 2 (one per chunk of 3), got tensor<1x2x1xf32>}}
  %0, %1 = "tdag.rmsnorm"(%x, %w) {eps = 1.0e-06 : f64} : (tensor<1x2x6xf32>, tensor<3xf32>) -> (tensor<1x2x6xf32>, tensor<1x2x1xf32>)
  return
}

// -----

func.func @rmsnorm_eps(%x: tensor<1x2x6xf32>, %w: tensor<6xf32>) {
  // expected-error@+1 {{eps must be positive}}
  %0, %1 = "tdag.rmsnorm"(%x, %w) {eps = 0.0 : f64} : (tensor<1x2x6xf32>, tensor<6xf32>) -> (tensor<1x2x6xf32>, tensor<1x2x1xf32>)
  return
}

// -----

func.func @rmsnorm_missing_eps(%x: tensor<1x2x6xf32>, %w: tensor<6xf32>) {
  // expected-error@+1 {{attribute "eps" is expected but not provided}}
  %0, %1 = "tdag.rmsnorm"(%x, %w) : (tensor<1x2x6xf32>, tensor<6xf32>) -> (tensor<1x2x6xf32>, tensor<1x2x1xf32>)
  return
}

// -----

func.func @rmsnorm_grad_dw(%dy: tensor<1x2x6xf32>, %x: tensor<1x2x6xf32>, %w: tensor<3xf32>, %r: tensor<1x2x2xf32>) {
  // expected-error@+1 {{shapes do not match x tensor<1x2x6xf32> and weight tensor<3xf32>}}
  %0, %1 = "tdag.rmsnorm_grad"(%dy, %x, %w, %r) : (tensor<1x2x6xf32>, tensor<1x2x6xf32>, tensor<3xf32>, tensor<1x2x2xf32>) -> (tensor<1x2x6xf32>, tensor<6xf32>)
  return
}

// -----

func.func @rope_odd_head_dim(%x: tensor<1x2x6xf32>) {
  // expected-error@+1 {{head_dim = 3 must be positive, even and divide the last dim of tensor<1x2x6xf32>}}
  %0 = "tdag.rope"(%x) {head_dim = 3 : i64, theta = 1.0e+06 : f64} : (tensor<1x2x6xf32>) -> tensor<1x2x6xf32>
  return
}

// -----

func.func @rope_head_dim_not_dividing(%x: tensor<1x2x6xf32>) {
  // expected-error@+1 {{head_dim = 4 must be positive, even and divide}}
  %0 = "tdag.rope"(%x) {head_dim = 4 : i64, theta = 1.0e+06 : f64} : (tensor<1x2x6xf32>) -> tensor<1x2x6xf32>
  return
}

// -----

func.func @rope_theta(%x: tensor<1x2x4xf32>) {
  // expected-error@+1 {{theta must be positive, got -1}}
  %0 = "tdag.rope_grad"(%x) {head_dim = 2 : i64, theta = -1.0 : f64} : (tensor<1x2x4xf32>) -> tensor<1x2x4xf32>
  return
}

// -----

func.func @rope_rank(%x: tensor<2x4xf32>) {
  // expected-error@+1 {{x must be (B,T,H*D), got tensor<2x4xf32>}}
  %0 = "tdag.rope"(%x) {head_dim = 2 : i64, theta = 1.0e+06 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @swiglu_shapes(%g: tensor<1x2x6xf32>, %u: tensor<1x2x5xf32>) {
  // IRDL: gate, up and the result share one type constraint.
  // expected-error@+1 {{expected 'tensor<1x2x6xf32>' but got 'tensor<1x2x5xf32>'}}
  %0 = "tdag.swiglu"(%g, %u) : (tensor<1x2x6xf32>, tensor<1x2x5xf32>) -> tensor<1x2x6xf32>
  return
}

// -----

func.func @swiglu_grad_result(%d: tensor<1x2x6xf32>) {
  // expected-error@+1 {{expected 'tensor<1x2x6xf32>' but got 'tensor<1x2x3xf32>'}}
  %0, %1 = "tdag.swiglu_grad"(%d, %d, %d) : (tensor<1x2x6xf32>, tensor<1x2x6xf32>, tensor<1x2x6xf32>) -> (tensor<1x2x6xf32>, tensor<1x2x3xf32>)
  return
}

// -----

func.func @gqa_kv_not_dividing(%q: tensor<1x2x6xf32>, %k: tensor<1x2x4xf32>) {
  // expected-error@+1 {{heads = 3 and kv_heads = 2 must be positive, kv_heads dividing heads}}
  %0, %1 = "tdag.gqa_attention"(%q, %k, %k) {heads = 3 : i64, kv_heads = 2 : i64} : (tensor<1x2x6xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> (tensor<1x2x6xf32>, tensor<1x3x2xf32>)
  return
}

// -----

func.func @gqa_kv_width(%q: tensor<1x2x8xf32>, %k: tensor<1x2x8xf32>) {
  // expected-error@+1 {{k and v must be (B,T,KV*D) = (1,2,4) for q tensor<1x2x8xf32>, got tensor<1x2x8xf32> and tensor<1x2x8xf32>}}
  %0, %1 = "tdag.gqa_attention"(%q, %k, %k) {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> (tensor<1x2x8xf32>, tensor<1x4x2xf32>)
  return
}

// -----

func.func @gqa_lse(%q: tensor<1x2x8xf32>, %k: tensor<1x2x4xf32>) {
  // expected-error@+1 {{expects out like q tensor<1x2x8xf32> and lse (B,H,T), got tensor<1x2x8xf32> and tensor<1x2x2xf32>}}
  %0, %1 = "tdag.gqa_attention"(%q, %k, %k) {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> (tensor<1x2x8xf32>, tensor<1x2x2xf32>)
  return
}

// -----

func.func @gqa_zero_heads(%q: tensor<1x2x8xf32>, %k: tensor<1x2x4xf32>) {
  // expected-error@+1 {{heads = 0 and kv_heads = 2 must be positive}}
  %0, %1 = "tdag.gqa_attention"(%q, %k, %k) {heads = 0 : i64, kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> (tensor<1x2x8xf32>, tensor<1x4x2xf32>)
  return
}

// -----

func.func @gqa_grad_dk(%q: tensor<1x2x8xf32>, %k: tensor<1x2x4xf32>, %p: tensor<1x4x2xf32>) {
  // expected-error@+1 {{dq, dk, dv must have the shapes of q, k, v}}
  %0, %1, %2 = "tdag.gqa_attention_grad"(%q, %q, %k, %k, %q, %p) {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<1x2x8xf32>, tensor<1x4x2xf32>) -> (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x4xf32>)
  return
}

// -----

func.func @gqa_missing_kv_heads(%q: tensor<1x2x8xf32>, %k: tensor<1x2x4xf32>) {
  // expected-error@+1 {{attribute "kv_heads" is expected but not provided}}
  %0, %1 = "tdag.gqa_attention"(%q, %k, %k) {heads = 4 : i64} : (tensor<1x2x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>) -> (tensor<1x2x8xf32>, tensor<1x4x2xf32>)
  return
}

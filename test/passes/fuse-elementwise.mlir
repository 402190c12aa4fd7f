// --piper-fuse on the elementwise chains python/piper exports: RMSNorm written out (also
// Gemma's (1 + w) and Qwen3's per-head q_norm), the tanh-GELU formula, silu(a) * b, GPT-2's
// wte(idx) + wpe(arange(T)) and a rotate-half RoPE over recognised tables (also applied after
// the heads' transpose, and on slices of a per-head packed qkv). Each fires, leaving no op of
// its chain, or must not fire where a constant or a shape differs. The two RMSNorm inputs
// carry different eps (1e-5, 1e-6), each checked, so a pass that writes one constant fails.
// RUN: piper-opt --split-input-file %s --piper-fuse | FileCheck %s

// x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w, rstd broadcast back to x's shape
// CHECK-LABEL: func.func @rmsnorm
// CHECK: %2:2 = "tdag.rmsnorm"(%0, %1) {eps = 1.000000e-05 : f64} : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>)
// CHECK-NEXT: return %2#0
func.func @rmsnorm() -> tensor<2x4xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4xf32>
  %w = "tdag.param"() {init = "ones", name = "w"} : () -> tensor<4xf32>
  %sq = "tdag.pow_scalar"(%x) {exponent = 2.0 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = "tdag.sum_to"(%sq) : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %m = "tdag.mul_scalar"(%s) {value = 0.25 : f64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %e = "tdag.add_scalar"(%m) {value = 1.0e-5 : f64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %r = "tdag.rsqrt"(%e) : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %rb = "tdag.broadcast"(%r) : (tensor<2x1xf32>) -> tensor<2x4xf32>
  %n = "tdag.mul"(%x, %rb) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = "tdag.mul"(%n, %w) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// x * x for the square, and the weight first: still RMSNorm
// CHECK-LABEL: func.func @rmsnorm_square_weight_first
// CHECK-NOT: tdag.rsqrt
// CHECK: "tdag.rmsnorm"(%0, %1) {eps = 9.9999999999999995E-7 : f64}
func.func @rmsnorm_square_weight_first() -> tensor<2x4xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4xf32>
  %w = "tdag.param"() {init = "ones", name = "w"} : () -> tensor<4xf32>
  %sq = "tdag.mul"(%x, %x) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = "tdag.sum_to"(%sq) : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %m = "tdag.mul_scalar"(%s) {value = 0.25 : f64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %e = "tdag.add_scalar"(%m) {value = 1.0e-6 : f64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %r = "tdag.rsqrt"(%e) : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %rb = "tdag.broadcast"(%r) : (tensor<2x1xf32>) -> tensor<2x4xf32>
  %n = "tdag.mul"(%rb, %x) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = "tdag.mul"(%w, %n) : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// the mean divides by 2, not by the 4 elements summed: not an RMSNorm
// CHECK-LABEL: func.func @rmsnorm_not_a_mean
// CHECK-NOT: tdag.rmsnorm
// CHECK: "tdag.rsqrt"
func.func @rmsnorm_not_a_mean() -> tensor<2x4xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4xf32>
  %w = "tdag.param"() {init = "ones", name = "w"} : () -> tensor<4xf32>
  %sq = "tdag.pow_scalar"(%x) {exponent = 2.0 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = "tdag.sum_to"(%sq) : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %m = "tdag.mul_scalar"(%s) {value = 0.5 : f64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %e = "tdag.add_scalar"(%m) {value = 1.0e-5 : f64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %r = "tdag.rsqrt"(%e) : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %rb = "tdag.broadcast"(%r) : (tensor<2x1xf32>) -> tensor<2x4xf32>
  %n = "tdag.mul"(%x, %rb) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = "tdag.mul"(%n, %w) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// the statistic of one tensor scaling another: not an RMSNorm of either
// CHECK-LABEL: func.func @rmsnorm_other_tensor
// CHECK-NOT: tdag.rmsnorm
func.func @rmsnorm_other_tensor() -> tensor<2x4xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4xf32>
  %z = "tdag.param"() {init = "normal", name = "z"} : () -> tensor<2x4xf32>
  %w = "tdag.param"() {init = "ones", name = "w"} : () -> tensor<4xf32>
  %sq = "tdag.pow_scalar"(%x) {exponent = 2.0 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = "tdag.sum_to"(%sq) : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %m = "tdag.mul_scalar"(%s) {value = 0.25 : f64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %e = "tdag.add_scalar"(%m) {value = 1.0e-5 : f64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %r = "tdag.rsqrt"(%e) : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %rb = "tdag.broadcast"(%r) : (tensor<2x1xf32>) -> tensor<2x4xf32>
  %n = "tdag.mul"(%z, %rb) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %y = "tdag.mul"(%n, %w) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
// CHECK-LABEL: func.func @gelu_tanh
// CHECK: %1 = "tdag.gelu"(%0) : (tensor<8xf32>) -> tensor<8xf32>
// CHECK-NEXT: return %1
func.func @gelu_tanh() -> tensor<8xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<8xf32>
  %h = "tdag.mul_scalar"(%x) {value = 0.5 : f64} : (tensor<8xf32>) -> tensor<8xf32>
  %c = "tdag.pow_scalar"(%x) {exponent = 3.0 : f64} : (tensor<8xf32>) -> tensor<8xf32>
  %k = "tdag.mul_scalar"(%c) {value = 0.044715 : f64} : (tensor<8xf32>) -> tensor<8xf32>
  %s = "tdag.add"(%x, %k) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %u = "tdag.mul_scalar"(%s) {value = 0.79788456080286541 : f64} : (tensor<8xf32>) -> tensor<8xf32>
  %t = "tdag.tanh"(%u) : (tensor<8xf32>) -> tensor<8xf32>
  %o = "tdag.add_scalar"(%t) {value = 1.0 : f64} : (tensor<8xf32>) -> tensor<8xf32>
  %y = "tdag.mul"(%h, %o) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// another cubic coefficient (0.04): not GELU
// CHECK-LABEL: func.func @gelu_other_coefficient
// CHECK-NOT: tdag.gelu
// CHECK: "tdag.tanh"
func.func @gelu_other_coefficient() -> tensor<8xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<8xf32>
  %h = "tdag.mul_scalar"(%x) {value = 0.5 : f64} : (tensor<8xf32>) -> tensor<8xf32>
  %c = "tdag.pow_scalar"(%x) {exponent = 3.0 : f64} : (tensor<8xf32>) -> tensor<8xf32>
  %k = "tdag.mul_scalar"(%c) {value = 0.04 : f64} : (tensor<8xf32>) -> tensor<8xf32>
  %s = "tdag.add"(%x, %k) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %u = "tdag.mul_scalar"(%s) {value = 0.79788456080286541 : f64} : (tensor<8xf32>) -> tensor<8xf32>
  %t = "tdag.tanh"(%u) : (tensor<8xf32>) -> tensor<8xf32>
  %o = "tdag.add_scalar"(%t) {value = 1.0 : f64} : (tensor<8xf32>) -> tensor<8xf32>
  %y = "tdag.mul"(%h, %o) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// w2(silu(w1 x) * w3 x): silu(a) * b of one shape, either order
// CHECK-LABEL: func.func @swiglu
// CHECK: %2 = "tdag.swiglu"(%0, %1) : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT: return %2
func.func @swiglu() -> tensor<2x6xf32> {
  %a = "tdag.param"() {init = "normal", name = "a"} : () -> tensor<2x6xf32>
  %b = "tdag.param"() {init = "normal", name = "b"} : () -> tensor<2x6xf32>
  %s = "tdag.silu"(%a) : (tensor<2x6xf32>) -> tensor<2x6xf32>
  %y = "tdag.mul"(%b, %s) : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

// silu(a) times a broadcast vector: not SwiGLU's elementwise product
// CHECK-LABEL: func.func @swiglu_broadcast
// CHECK-NOT: tdag.swiglu
// CHECK: "tdag.silu"
func.func @swiglu_broadcast() -> tensor<2x6xf32> {
  %a = "tdag.param"() {init = "normal", name = "a"} : () -> tensor<2x6xf32>
  %b = "tdag.param"() {init = "normal", name = "b"} : () -> tensor<6xf32>
  %s = "tdag.silu"(%a) : (tensor<2x6xf32>) -> tensor<2x6xf32>
  %y = "tdag.mul"(%s, %b) : (tensor<2x6xf32>, tensor<6xf32>) -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

// wte(idx) + wpe(arange(T)) with wpe longer than T: GPT-2's embedding
// CHECK-LABEL: func.func @embedding
// CHECK: %3 = "tdag.embedding"(%0, %1, %2) : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<6x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: return %3
func.func @embedding() -> tensor<2x4x8xf32> {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte"} : () -> tensor<16x8xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe"} : () -> tensor<6x8xf32>
  %e = "tdag.embed"(%tok, %wte) : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %p = "tdag.slice"(%wpe) {dim = 0 : i64, start = 0 : i64} : (tensor<6x8xf32>) -> tensor<4x8xf32>
  %x = "tdag.add_bcast"(%p, %e) : (tensor<4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %x : tensor<2x4x8xf32>
}

// -----

// positions from row 1: not what tdag.embedding adds
// CHECK-LABEL: func.func @embedding_shifted
// CHECK-NOT: tdag.embedding
// CHECK: "tdag.add_bcast"
func.func @embedding_shifted() -> tensor<2x4x8xf32> {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte"} : () -> tensor<16x8xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe"} : () -> tensor<6x8xf32>
  %e = "tdag.embed"(%tok, %wte) : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %p = "tdag.slice"(%wpe) {dim = 0 : i64, start = 1 : i64} : (tensor<6x8xf32>) -> tensor<4x8xf32>
  %x = "tdag.add_bcast"(%e, %p) : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  return %x : tensor<2x4x8xf32>
}

// -----

// x * cos + rotate_half(x) * sin over (B,T,H,D), sin's term first: tdag.rope on (B,T,H*D)
// CHECK-LABEL: func.func @rope
// CHECK: %[[F:.*]] = "tdag.reshape"(%0) : (tensor<2x4x2x8xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[R:.*]] = "tdag.rope"(%[[F]]) {head_dim = 8 : i64, theta = 1.000000e+04 : f64}
// CHECK-NEXT: %[[Y:.*]] = "tdag.reshape"(%[[R]]) : (tensor<2x4x16xf32>) -> tensor<2x4x2x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @rope() -> tensor<2x4x2x8xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4x2x8xf32>
  %ct = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 0 : i64} : () -> tensor<4x8xf32>
  %cr = "tdag.reshape"(%ct) : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
  %cb = "tdag.broadcast"(%cr) : (tensor<4x1x8xf32>) -> tensor<4x2x8xf32>
  %cm = "tdag.mul"(%x, %cb) : (tensor<2x4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<2x4x2x8xf32>
  %hi = "tdag.slice"(%x) {dim = 3 : i64, start = 4 : i64} : (tensor<2x4x2x8xf32>) -> tensor<2x4x2x4xf32>
  %neg = "tdag.mul_scalar"(%hi) {value = -1.0 : f64} : (tensor<2x4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %lo = "tdag.slice"(%x) {dim = 3 : i64, start = 0 : i64} : (tensor<2x4x2x8xf32>) -> tensor<2x4x2x4xf32>
  %rot = "tdag.concat"(%neg, %lo) {dim = 3 : i64} : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x2x8xf32>
  %st = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 1 : i64} : () -> tensor<4x8xf32>
  %sr = "tdag.reshape"(%st) : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
  %sb = "tdag.broadcast"(%sr) : (tensor<4x1x8xf32>) -> tensor<4x2x8xf32>
  %sm = "tdag.mul"(%rot, %sb) : (tensor<2x4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<2x4x2x8xf32>
  %y = "tdag.add"(%sm, %cm) : (tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32>) -> tensor<2x4x2x8xf32>
  return %y : tensor<2x4x2x8xf32>
}

// -----

// the sin table of another base: not one rotation
// CHECK-LABEL: func.func @rope_other_theta
// CHECK-NOT: tdag.rope"
// CHECK: "tdag.concat"
func.func @rope_other_theta() -> tensor<2x4x2x8xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4x2x8xf32>
  %ct = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 0 : i64} : () -> tensor<4x8xf32>
  %cr = "tdag.reshape"(%ct) : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
  %cb = "tdag.broadcast"(%cr) : (tensor<4x1x8xf32>) -> tensor<4x2x8xf32>
  %cm = "tdag.mul"(%x, %cb) : (tensor<2x4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<2x4x2x8xf32>
  %hi = "tdag.slice"(%x) {dim = 3 : i64, start = 4 : i64} : (tensor<2x4x2x8xf32>) -> tensor<2x4x2x4xf32>
  %neg = "tdag.mul_scalar"(%hi) {value = -1.0 : f64} : (tensor<2x4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %lo = "tdag.slice"(%x) {dim = 3 : i64, start = 0 : i64} : (tensor<2x4x2x8xf32>) -> tensor<2x4x2x4xf32>
  %rot = "tdag.concat"(%neg, %lo) {dim = 3 : i64} : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x2x8xf32>
  %st = "tdag.rope_table"() {head_dim = 8 : i64, theta = 500000.0 : f64, sin = 1 : i64} : () -> tensor<4x8xf32>
  %sr = "tdag.reshape"(%st) : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
  %sb = "tdag.broadcast"(%sr) : (tensor<4x1x8xf32>) -> tensor<4x2x8xf32>
  %sm = "tdag.mul"(%rot, %sb) : (tensor<2x4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<2x4x2x8xf32>
  %y = "tdag.add"(%sm, %cm) : (tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32>) -> tensor<2x4x2x8xf32>
  return %y : tensor<2x4x2x8xf32>
}

// -----

// positions on dim 2 (RoPE after the heads' transpose): not tdag.rope's layout
// CHECK-LABEL: func.func @rope_positions_dim2
// CHECK-NOT: tdag.rope"
// CHECK: "tdag.concat"
func.func @rope_positions_dim2() -> tensor<2x2x4x8xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x2x4x8xf32>
  %ct = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 0 : i64} : () -> tensor<4x8xf32>
  %cb = "tdag.reshape"(%ct) : (tensor<4x8xf32>) -> tensor<1x4x8xf32>
  %cm = "tdag.mul"(%x, %cb) : (tensor<2x2x4x8xf32>, tensor<1x4x8xf32>) -> tensor<2x2x4x8xf32>
  %hi = "tdag.slice"(%x) {dim = 3 : i64, start = 4 : i64} : (tensor<2x2x4x8xf32>) -> tensor<2x2x4x4xf32>
  %neg = "tdag.mul_scalar"(%hi) {value = -1.0 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %lo = "tdag.slice"(%x) {dim = 3 : i64, start = 0 : i64} : (tensor<2x2x4x8xf32>) -> tensor<2x2x4x4xf32>
  %rot = "tdag.concat"(%neg, %lo) {dim = 3 : i64} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x8xf32>
  %st = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 1 : i64} : () -> tensor<4x8xf32>
  %sb = "tdag.reshape"(%st) : (tensor<4x8xf32>) -> tensor<1x4x8xf32>
  %sm = "tdag.mul"(%rot, %sb) : (tensor<2x2x4x8xf32>, tensor<1x4x8xf32>) -> tensor<2x2x4x8xf32>
  %y = "tdag.add"(%sm, %cm) : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// -----

// the second half taken from column 2: not rotate_half
// CHECK-LABEL: func.func @rope_not_rotate_half
// CHECK-NOT: tdag.rope"
// CHECK: "tdag.concat"
func.func @rope_not_rotate_half() -> tensor<2x4x2x8xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4x2x8xf32>
  %ct = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 0 : i64} : () -> tensor<4x8xf32>
  %cr = "tdag.reshape"(%ct) : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
  %cb = "tdag.broadcast"(%cr) : (tensor<4x1x8xf32>) -> tensor<4x2x8xf32>
  %cm = "tdag.mul"(%x, %cb) : (tensor<2x4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<2x4x2x8xf32>
  %hi = "tdag.slice"(%x) {dim = 3 : i64, start = 4 : i64} : (tensor<2x4x2x8xf32>) -> tensor<2x4x2x4xf32>
  %neg = "tdag.mul_scalar"(%hi) {value = -1.0 : f64} : (tensor<2x4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %lo = "tdag.slice"(%x) {dim = 3 : i64, start = 2 : i64} : (tensor<2x4x2x8xf32>) -> tensor<2x4x2x4xf32>
  %rot = "tdag.concat"(%neg, %lo) {dim = 3 : i64} : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x2x8xf32>
  %st = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 1 : i64} : () -> tensor<4x8xf32>
  %sr = "tdag.reshape"(%st) : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
  %sb = "tdag.broadcast"(%sr) : (tensor<4x1x8xf32>) -> tensor<4x2x8xf32>
  %sm = "tdag.mul"(%rot, %sb) : (tensor<2x4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<2x4x2x8xf32>
  %y = "tdag.add"(%sm, %cm) : (tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32>) -> tensor<2x4x2x8xf32>
  return %y : tensor<2x4x2x8xf32>
}

// -----

// Gemma: output * (1 + w), the weight offset by one: the fused norm's weight is w + 1
// CHECK-LABEL: func.func @rmsnorm_one_plus_w
// CHECK: %[[W1:.*]] = "tdag.add_scalar"(%1) {value = 1.000000e+00 : f64}
// CHECK-NEXT: "tdag.rmsnorm"(%0, %[[W1]]) {eps = 9.9999999999999995E-7 : f64}
// CHECK-NOT: tdag.rsqrt
func.func @rmsnorm_one_plus_w() -> tensor<2x4xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4xf32>
  %w = "tdag.param"() {init = "zeros", name = "w"} : () -> tensor<4xf32>
  %sq = "tdag.pow_scalar"(%x) {exponent = 2.0 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = "tdag.sum_to"(%sq) : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %m = "tdag.mul_scalar"(%s) {value = 0.25 : f64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %e = "tdag.add_scalar"(%m) {value = 1.0e-6 : f64} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %r = "tdag.rsqrt"(%e) : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %rb = "tdag.broadcast"(%r) : (tensor<2x1xf32>) -> tensor<2x4xf32>
  %n = "tdag.mul"(%x, %rb) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %w1 = "tdag.add_scalar"(%w) {value = 1.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %y = "tdag.mul"(%n, %w1) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Qwen3's q_norm on the heads' view (B,T,H,D) with a weight of D: the zoo's per-head
// rmsnorm on (B,T,H*D) in chunks of D, its rstd (B,T,H)
// CHECK-LABEL: func.func @rmsnorm_per_head
// CHECK: %[[F:.*]] = "tdag.reshape"(%0) : (tensor<2x3x2x4xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: %[[N:.*]]:2 = "tdag.rmsnorm"(%[[F]], %1) {eps = 1.000000e-05 : f64} : (tensor<2x3x8xf32>, tensor<4xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x2xf32>)
// CHECK-NEXT: %[[Y:.*]] = "tdag.reshape"(%[[N]]#0) : (tensor<2x3x8xf32>) -> tensor<2x3x2x4xf32>
// CHECK-NEXT: return %[[Y]]
func.func @rmsnorm_per_head() -> tensor<2x3x2x4xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x3x2x4xf32>
  %w = "tdag.param"() {init = "ones", name = "w"} : () -> tensor<4xf32>
  %sq = "tdag.pow_scalar"(%x) {exponent = 2.0 : f64} : (tensor<2x3x2x4xf32>) -> tensor<2x3x2x4xf32>
  %s = "tdag.sum_to"(%sq) : (tensor<2x3x2x4xf32>) -> tensor<2x3x2x1xf32>
  %m = "tdag.mul_scalar"(%s) {value = 0.25 : f64} : (tensor<2x3x2x1xf32>) -> tensor<2x3x2x1xf32>
  %e = "tdag.add_scalar"(%m) {value = 1.0e-5 : f64} : (tensor<2x3x2x1xf32>) -> tensor<2x3x2x1xf32>
  %r = "tdag.rsqrt"(%e) : (tensor<2x3x2x1xf32>) -> tensor<2x3x2x1xf32>
  %rb = "tdag.broadcast"(%r) : (tensor<2x3x2x1xf32>) -> tensor<2x3x2x4xf32>
  %n = "tdag.mul"(%x, %rb) : (tensor<2x3x2x4xf32>, tensor<2x3x2x4xf32>) -> tensor<2x3x2x4xf32>
  %y = "tdag.mul"(%w, %n) : (tensor<4xf32>, tensor<2x3x2x4xf32>) -> tensor<2x3x2x4xf32>
  return %y : tensor<2x3x2x4xf32>
}

// -----

// Hugging Face's apply_rotary_pos_emb after the heads' transpose: x (B,H,T,D) is x0
// (B,T,H,D) transposed, the tables (1,1,T,D) (cos.unsqueeze(1)); the canonical forms move the
// transpose below the rotation, which then is tdag.rope on x0
// CHECK-LABEL: func.func @rope_after_transpose
// CHECK-NOT: tdag.concat
// CHECK: %[[F:.*]] = "tdag.reshape"(%0) : (tensor<2x4x2x8xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[R:.*]] = "tdag.rope"(%[[F]]) {head_dim = 8 : i64, theta = 1.000000e+04 : f64}
// CHECK-NEXT: %[[Y:.*]] = "tdag.reshape"(%[[R]]) : (tensor<2x4x16xf32>) -> tensor<2x4x2x8xf32>
// CHECK-NEXT: %[[P:.*]] = "tdag.permute"(%[[Y]]) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x8xf32>) -> tensor<2x2x4x8xf32>
// CHECK-NEXT: return %[[P]]
func.func @rope_after_transpose() -> tensor<2x2x4x8xf32> {
  %x0 = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4x2x8xf32>
  %x = "tdag.permute"(%x0) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x8xf32>) -> tensor<2x2x4x8xf32>
  %ct = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 0 : i64} : () -> tensor<4x8xf32>
  %cb = "tdag.reshape"(%ct) : (tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  %cm = "tdag.mul"(%x, %cb) : (tensor<2x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<2x2x4x8xf32>
  %hi = "tdag.slice"(%x) {dim = 3 : i64, start = 4 : i64} : (tensor<2x2x4x8xf32>) -> tensor<2x2x4x4xf32>
  %neg = "tdag.mul_scalar"(%hi) {value = -1.0 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %lo = "tdag.slice"(%x) {dim = 3 : i64, start = 0 : i64} : (tensor<2x2x4x8xf32>) -> tensor<2x2x4x4xf32>
  %rot = "tdag.concat"(%neg, %lo) {dim = 3 : i64} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x8xf32>
  %st = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 1 : i64} : () -> tensor<4x8xf32>
  %sb = "tdag.reshape"(%st) : (tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  %sm = "tdag.mul"(%rot, %sb) : (tensor<2x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<2x2x4x8xf32>
  %y = "tdag.add"(%cm, %sm) : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// -----

// GPT-NeoX: the rotation of q, itself the first D features of each per-head packed (3D) row;
// after the canonical forms rotate_half's slices are slices of the packed rows, at q's offset
// CHECK-LABEL: func.func @rope_of_packed_slice
// CHECK-NOT: tdag.concat
// CHECK: %[[Q:.*]] = "tdag.slice"(%0) {dim = 3 : i64, start = 8 : i64} : (tensor<2x4x2x24xf32>) -> tensor<2x4x2x8xf32>
// CHECK-NEXT: %[[F:.*]] = "tdag.reshape"(%[[Q]]) : (tensor<2x4x2x8xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: "tdag.rope"(%[[F]]) {head_dim = 8 : i64, theta = 1.000000e+04 : f64}
func.func @rope_of_packed_slice() -> tensor<2x2x4x8xf32> {
  %qkv = "tdag.param"() {init = "normal", name = "qkv"} : () -> tensor<2x4x2x24xf32>
  %t = "tdag.permute"(%qkv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x24xf32>) -> tensor<2x2x4x24xf32>
  %x = "tdag.slice"(%t) {dim = 3 : i64, start = 8 : i64} : (tensor<2x2x4x24xf32>) -> tensor<2x2x4x8xf32>
  %ct = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 0 : i64} : () -> tensor<4x8xf32>
  %cb = "tdag.reshape"(%ct) : (tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  %cm = "tdag.mul"(%x, %cb) : (tensor<2x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<2x2x4x8xf32>
  %hi = "tdag.slice"(%x) {dim = 3 : i64, start = 4 : i64} : (tensor<2x2x4x8xf32>) -> tensor<2x2x4x4xf32>
  %neg = "tdag.mul_scalar"(%hi) {value = -1.0 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %lo = "tdag.slice"(%x) {dim = 3 : i64, start = 0 : i64} : (tensor<2x2x4x8xf32>) -> tensor<2x2x4x4xf32>
  %rot = "tdag.concat"(%neg, %lo) {dim = 3 : i64} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x8xf32>
  %st = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 1 : i64} : () -> tensor<4x8xf32>
  %sb = "tdag.reshape"(%st) : (tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  %sm = "tdag.mul"(%rot, %sb) : (tensor<2x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<2x2x4x8xf32>
  %y = "tdag.add"(%cm, %sm) : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// -----

// the same with the rotated halves read from q's neighbour (k's features, offset 16): not
// rotate_half of q
// CHECK-LABEL: func.func @rope_of_packed_slice_wrong_half
// CHECK-NOT: tdag.rope"
// CHECK: "tdag.concat"
func.func @rope_of_packed_slice_wrong_half() -> tensor<2x2x4x8xf32> {
  %qkv = "tdag.param"() {init = "normal", name = "qkv"} : () -> tensor<2x4x2x24xf32>
  %t = "tdag.permute"(%qkv) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x24xf32>) -> tensor<2x2x4x24xf32>
  %x = "tdag.slice"(%t) {dim = 3 : i64, start = 8 : i64} : (tensor<2x2x4x24xf32>) -> tensor<2x2x4x8xf32>
  %ct = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 0 : i64} : () -> tensor<4x8xf32>
  %cb = "tdag.reshape"(%ct) : (tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  %cm = "tdag.mul"(%x, %cb) : (tensor<2x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<2x2x4x8xf32>
  %hi = "tdag.slice"(%t) {dim = 3 : i64, start = 20 : i64} : (tensor<2x2x4x24xf32>) -> tensor<2x2x4x4xf32>
  %neg = "tdag.mul_scalar"(%hi) {value = -1.0 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %lo = "tdag.slice"(%t) {dim = 3 : i64, start = 16 : i64} : (tensor<2x2x4x24xf32>) -> tensor<2x2x4x4xf32>
  %rot = "tdag.concat"(%neg, %lo) {dim = 3 : i64} : (tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x8xf32>
  %st = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 1 : i64} : () -> tensor<4x8xf32>
  %sb = "tdag.reshape"(%st) : (tensor<4x8xf32>) -> tensor<1x1x4x8xf32>
  %sm = "tdag.mul"(%rot, %sb) : (tensor<2x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<2x2x4x8xf32>
  %y = "tdag.add"(%cm, %sm) : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// -----

// Hugging Face GPT-2: wte(ids) + wpe(position_ids), position_ids (1, T): the rows are (1,T,C)
// CHECK-LABEL: func.func @embedding_position_ids
// CHECK: "tdag.embedding"(%0, %1, %2) : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<6x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: return
func.func @embedding_position_ids() -> tensor<2x4x8xf32> {
  %tok = "tdag.input"() {name = "tokens"} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte"} : () -> tensor<16x8xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe"} : () -> tensor<6x8xf32>
  %e = "tdag.embed"(%tok, %wte) : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %rows = "tdag.slice"(%wpe) {dim = 0 : i64, start = 0 : i64} : (tensor<6x8xf32>) -> tensor<4x8xf32>
  %p = "tdag.reshape"(%rows) : (tensor<4x8xf32>) -> tensor<1x4x8xf32>
  %y = "tdag.add_bcast"(%e, %p) : (tensor<2x4x8xf32>, tensor<1x4x8xf32>) -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// Meta's interleaved RoPE: pairs (x_2j, x_2j+1) as x.reshape(..., -1, 2).unbind(-1), rotated by
// one table column per pair and stacked back: tdag.rope of the pairs' halves side by side
// (x' = cat(xr, xi)), its output interleaved back
// CHECK-LABEL: func.func @rope_interleaved
// CHECK-NOT: tdag.sub
// CHECK: %[[XP:.*]] = "tdag.concat"(%{{.*}}, %{{.*}}) {dim = 3 : i64} : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x2x8xf32>
// CHECK-NEXT: %[[F:.*]] = "tdag.reshape"(%[[XP]]) : (tensor<2x4x2x8xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: "tdag.rope"(%[[F]]) {head_dim = 8 : i64, theta = 1.000000e+04 : f64}
func.func @rope_interleaved() -> tensor<2x4x2x8xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4x2x8xf32>
  %x5 = "tdag.reshape"(%x) : (tensor<2x4x2x8xf32>) -> tensor<2x4x2x4x2xf32>
  %r1 = "tdag.slice"(%x5) {dim = 4 : i64, start = 0 : i64} : (tensor<2x4x2x4x2xf32>) -> tensor<2x4x2x4x1xf32>
  %xr = "tdag.reshape"(%r1) : (tensor<2x4x2x4x1xf32>) -> tensor<2x4x2x4xf32>
  %i1 = "tdag.slice"(%x5) {dim = 4 : i64, start = 1 : i64} : (tensor<2x4x2x4x2xf32>) -> tensor<2x4x2x4x1xf32>
  %xi = "tdag.reshape"(%i1) : (tensor<2x4x2x4x1xf32>) -> tensor<2x4x2x4xf32>
  %ct = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 0 : i64} : () -> tensor<4x4xf32>
  %cr = "tdag.reshape"(%ct) : (tensor<4x4xf32>) -> tensor<4x1x4xf32>
  %c = "tdag.broadcast"(%cr) : (tensor<4x1x4xf32>) -> tensor<4x2x4xf32>
  %st = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 1 : i64} : () -> tensor<4x4xf32>
  %sr = "tdag.reshape"(%st) : (tensor<4x4xf32>) -> tensor<4x1x4xf32>
  %s = "tdag.broadcast"(%sr) : (tensor<4x1x4xf32>) -> tensor<4x2x4xf32>
  %cm = "tdag.mul"(%xr, %c) : (tensor<2x4x2x4xf32>, tensor<4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %sm = "tdag.mul"(%xi, %s) : (tensor<2x4x2x4xf32>, tensor<4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %cm2 = "tdag.mul"(%xi, %c) : (tensor<2x4x2x4xf32>, tensor<4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %sm2 = "tdag.mul"(%s, %xr) : (tensor<4x2x4xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %re = "tdag.sub"(%cm, %sm) : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %im = "tdag.add"(%sm2, %cm2) : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %re1 = "tdag.reshape"(%re) : (tensor<2x4x2x4xf32>) -> tensor<2x4x2x4x1xf32>
  %im1 = "tdag.reshape"(%im) : (tensor<2x4x2x4xf32>) -> tensor<2x4x2x4x1xf32>
  %st5 = "tdag.concat"(%re1, %im1) {dim = 4 : i64} : (tensor<2x4x2x4x1xf32>, tensor<2x4x2x4x1xf32>) -> tensor<2x4x2x4x2xf32>
  %y = "tdag.reshape"(%st5) : (tensor<2x4x2x4x2xf32>) -> tensor<2x4x2x8xf32>
  return %y : tensor<2x4x2x8xf32>
}

// -----

// xr cos - xi cos: not a rotation (the sin term reads the cos table): must not fire
// CHECK-LABEL: func.func @rope_interleaved_wrong_sign
// CHECK-NOT: tdag.rope"
// CHECK: "tdag.sub"
func.func @rope_interleaved_wrong_sign() -> tensor<2x4x2x8xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4x2x8xf32>
  %x5 = "tdag.reshape"(%x) : (tensor<2x4x2x8xf32>) -> tensor<2x4x2x4x2xf32>
  %r1 = "tdag.slice"(%x5) {dim = 4 : i64, start = 0 : i64} : (tensor<2x4x2x4x2xf32>) -> tensor<2x4x2x4x1xf32>
  %xr = "tdag.reshape"(%r1) : (tensor<2x4x2x4x1xf32>) -> tensor<2x4x2x4xf32>
  %i1 = "tdag.slice"(%x5) {dim = 4 : i64, start = 1 : i64} : (tensor<2x4x2x4x2xf32>) -> tensor<2x4x2x4x1xf32>
  %xi = "tdag.reshape"(%i1) : (tensor<2x4x2x4x1xf32>) -> tensor<2x4x2x4xf32>
  %ct = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 0 : i64} : () -> tensor<4x4xf32>
  %cr = "tdag.reshape"(%ct) : (tensor<4x4xf32>) -> tensor<4x1x4xf32>
  %c = "tdag.broadcast"(%cr) : (tensor<4x1x4xf32>) -> tensor<4x2x4xf32>
  %st = "tdag.rope_table"() {head_dim = 8 : i64, theta = 10000.0 : f64, sin = 1 : i64} : () -> tensor<4x4xf32>
  %sr = "tdag.reshape"(%st) : (tensor<4x4xf32>) -> tensor<4x1x4xf32>
  %s = "tdag.broadcast"(%sr) : (tensor<4x1x4xf32>) -> tensor<4x2x4xf32>
  %cm = "tdag.mul"(%xr, %c) : (tensor<2x4x2x4xf32>, tensor<4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %sm = "tdag.mul"(%xi, %s) : (tensor<2x4x2x4xf32>, tensor<4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %cm2 = "tdag.mul"(%xi, %c) : (tensor<2x4x2x4xf32>, tensor<4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %sm2 = "tdag.mul"(%s, %xr) : (tensor<4x2x4xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %re = "tdag.sub"(%cm, %cm2) : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %im = "tdag.add"(%sm2, %cm2) : (tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32>) -> tensor<2x4x2x4xf32>
  %re1 = "tdag.reshape"(%re) : (tensor<2x4x2x4xf32>) -> tensor<2x4x2x4x1xf32>
  %im1 = "tdag.reshape"(%im) : (tensor<2x4x2x4xf32>) -> tensor<2x4x2x4x1xf32>
  %st5 = "tdag.concat"(%re1, %im1) {dim = 4 : i64} : (tensor<2x4x2x4x1xf32>, tensor<2x4x2x4x1xf32>) -> tensor<2x4x2x4x2xf32>
  %y = "tdag.reshape"(%st5) : (tensor<2x4x2x4x2xf32>) -> tensor<2x4x2x8xf32>
  return %y : tensor<2x4x2x8xf32>
}

// --piper-fuse on causal attention chains as python/piper exports them (q @ k^T * scale, a
// causal mask, softmax over the last dim, @ v; heads by reshape + permute; GQA's kv heads
// repeated by broadcast + reshape), as Hugging Face writes them (repeat_kv after the heads'
// transpose, multi-query, GPT-NeoX's per-head packed qkv, finfo.min masks expanded to the
// batch) and as torch 2's SDPA with a causal attn_mask is defined. Each chain either becomes
// one fused op, with every layout op around it cancelled, or is left whole: a mask shifted by
// one diagonal either way, no mask, a mask of -1e4, another scale, a softmax over another
// dim, kv heads tiled instead of repeated, or q read across tokens must not fire.
// RUN: piper-opt --split-input-file %s --piper-fuse | FileCheck %s

// causal_masked_fill
// CHECK-LABEL: func.func @causal_masked_fill
// CHECK-NOT: tdag.softmax
// CHECK: "tdag.gqa_attention"(%0, %1, %2) {heads = 2 : i64, kv_heads = 2 : i64}
// CHECK-NEXT: return %3#0
func.func @causal_masked_fill() -> tensor<2x4x8xf32> {
  %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x4x8xf32>
  %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x4x8xf32>
  %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x4x8xf32>
  %q4 = "tdag.reshape"(%q) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qp = "tdag.permute"(%q4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %q3 = "tdag.reshape"(%qp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %k4 = "tdag.reshape"(%k) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kp = "tdag.permute"(%k4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %v4 = "tdag.reshape"(%v) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vp = "tdag.permute"(%v4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt = "tdag.permute"(%kp) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %k3 = "tdag.reshape"(%kt) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %v3 = "tdag.reshape"(%vp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %s3 = "tdag.bmm"(%q3, %k3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s = "tdag.reshape"(%s3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %sc = "tdag.mul_scalar"(%s) {value = 0.5 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %tri = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = 1.0 : f64} : () -> tensor<4x4xf32>
  %tri4 = "tdag.reshape"(%tri) : (tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %m = "tdag.masked_fill"(%sc, %tri4) {value = 0xFFF0000000000000 : f64} : (tensor<2x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = "tdag.softmax"(%m) {dim = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p3 = "tdag.reshape"(%p) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %o3 = "tdag.bmm"(%p3, %v3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %o4 = "tdag.reshape"(%o3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %ot = "tdag.permute"(%o4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %o = "tdag.reshape"(%ot) : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// causal_additive
// CHECK-LABEL: func.func @causal_additive
// CHECK-NOT: tdag.softmax
// CHECK: "tdag.gqa_attention"(%0, %1, %2) {heads = 2 : i64, kv_heads = 2 : i64}
// CHECK-NEXT: return %3#0
func.func @causal_additive() -> tensor<2x4x8xf32> {
  %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x4x8xf32>
  %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x4x8xf32>
  %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x4x8xf32>
  %q4 = "tdag.reshape"(%q) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qp = "tdag.permute"(%q4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %q3 = "tdag.reshape"(%qp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %k4 = "tdag.reshape"(%k) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kp = "tdag.permute"(%k4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %v4 = "tdag.reshape"(%v) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vp = "tdag.permute"(%v4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt = "tdag.permute"(%kp) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %k3 = "tdag.reshape"(%kt) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %v3 = "tdag.reshape"(%vp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %s3 = "tdag.bmm"(%q3, %k3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s = "tdag.reshape"(%s3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %sc = "tdag.mul_scalar"(%s) {value = 0.5 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %tri = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = 0xFFF0000000000000 : f64} : () -> tensor<4x4xf32>
  %m = "tdag.add_bcast"(%sc, %tri) : (tensor<2x2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = "tdag.softmax"(%m) {dim = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p3 = "tdag.reshape"(%p) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %o3 = "tdag.bmm"(%p3, %v3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %o4 = "tdag.reshape"(%o3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %ot = "tdag.permute"(%o4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %o = "tdag.reshape"(%ot) : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// gqa
// CHECK-LABEL: func.func @gqa
// CHECK-NOT: tdag.softmax
// CHECK: "tdag.gqa_attention"(%0, %1, %2) {heads = 2 : i64, kv_heads = 1 : i64} : (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4xf32>)
// CHECK-NEXT: return %3#0
func.func @gqa() -> tensor<2x4x8xf32> {
  %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x4x8xf32>
  %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x4x4xf32>
  %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x4x4xf32>
  %q4 = "tdag.reshape"(%q) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qp = "tdag.permute"(%q4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %q3 = "tdag.reshape"(%qp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %k5 = "tdag.reshape"(%k) : (tensor<2x4x4xf32>) -> tensor<2x4x1x1x4xf32>
  %ke = "tdag.broadcast"(%k5) : (tensor<2x4x1x1x4xf32>) -> tensor<2x4x1x2x4xf32>
  %k4 = "tdag.reshape"(%ke) : (tensor<2x4x1x2x4xf32>) -> tensor<2x4x2x4xf32>
  %kp = "tdag.permute"(%k4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %v5 = "tdag.reshape"(%v) : (tensor<2x4x4xf32>) -> tensor<2x4x1x1x4xf32>
  %ve = "tdag.broadcast"(%v5) : (tensor<2x4x1x1x4xf32>) -> tensor<2x4x1x2x4xf32>
  %v4 = "tdag.reshape"(%ve) : (tensor<2x4x1x2x4xf32>) -> tensor<2x4x2x4xf32>
  %vp = "tdag.permute"(%v4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt = "tdag.permute"(%kp) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %k3 = "tdag.reshape"(%kt) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %v3 = "tdag.reshape"(%vp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %s3 = "tdag.bmm"(%q3, %k3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s = "tdag.reshape"(%s3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %sc = "tdag.mul_scalar"(%s) {value = 0.5 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %tri = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = 1.0 : f64} : () -> tensor<4x4xf32>
  %tri4 = "tdag.reshape"(%tri) : (tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %m = "tdag.masked_fill"(%sc, %tri4) {value = 0xFFF0000000000000 : f64} : (tensor<2x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = "tdag.softmax"(%m) {dim = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p3 = "tdag.reshape"(%p) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %o3 = "tdag.bmm"(%p3, %v3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %o4 = "tdag.reshape"(%o3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %ot = "tdag.permute"(%o4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %o = "tdag.reshape"(%ot) : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// packed_qkv
// CHECK-LABEL: func.func @packed_qkv
// CHECK-NOT: tdag.softmax
// CHECK: %1:2 = "tdag.attention"(%0) {heads = 2 : i64} : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4xf32>)
// CHECK-NEXT: return %1#0
func.func @packed_qkv() -> tensor<2x4x8xf32> {
  %qkv = "tdag.param"() {init = "normal", name = "qkv"} : () -> tensor<2x4x24xf32>
  %q = "tdag.slice"(%qkv) {dim = 2 : i64, start = 0 : i64} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %k = "tdag.slice"(%qkv) {dim = 2 : i64, start = 8 : i64} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %v = "tdag.slice"(%qkv) {dim = 2 : i64, start = 16 : i64} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %q4 = "tdag.reshape"(%q) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qp = "tdag.permute"(%q4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %q3 = "tdag.reshape"(%qp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %k4 = "tdag.reshape"(%k) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kp = "tdag.permute"(%k4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %v4 = "tdag.reshape"(%v) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vp = "tdag.permute"(%v4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt = "tdag.permute"(%kp) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %k3 = "tdag.reshape"(%kt) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %v3 = "tdag.reshape"(%vp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %s3 = "tdag.bmm"(%q3, %k3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s = "tdag.reshape"(%s3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %sc = "tdag.mul_scalar"(%s) {value = 0.5 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %tri = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = 1.0 : f64} : () -> tensor<4x4xf32>
  %tri4 = "tdag.reshape"(%tri) : (tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %m = "tdag.masked_fill"(%sc, %tri4) {value = 0xFFF0000000000000 : f64} : (tensor<2x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = "tdag.softmax"(%m) {dim = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p3 = "tdag.reshape"(%p) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %o3 = "tdag.bmm"(%p3, %v3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %o4 = "tdag.reshape"(%o3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %ot = "tdag.permute"(%o4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %o = "tdag.reshape"(%ot) : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// shifted_mask
// CHECK-LABEL: func.func @shifted_mask
// CHECK-NOT: tdag.gqa_attention
// CHECK-NOT: "tdag.attention"
// CHECK: "tdag.softmax"
// CHECK: "tdag.bmm"
func.func @shifted_mask() -> tensor<2x4x8xf32> {
  %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x4x8xf32>
  %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x4x8xf32>
  %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x4x8xf32>
  %q4 = "tdag.reshape"(%q) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qp = "tdag.permute"(%q4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %q3 = "tdag.reshape"(%qp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %k4 = "tdag.reshape"(%k) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kp = "tdag.permute"(%k4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %v4 = "tdag.reshape"(%v) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vp = "tdag.permute"(%v4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt = "tdag.permute"(%kp) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %k3 = "tdag.reshape"(%kt) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %v3 = "tdag.reshape"(%vp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %s3 = "tdag.bmm"(%q3, %k3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s = "tdag.reshape"(%s3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %sc = "tdag.mul_scalar"(%s) {value = 0.5 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %tri = "tdag.triangle"() {diagonal = 1 : i64, inside = 0.0 : f64, outside = 1.0 : f64} : () -> tensor<4x4xf32>
  %tri4 = "tdag.reshape"(%tri) : (tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %m = "tdag.masked_fill"(%sc, %tri4) {value = 0xFFF0000000000000 : f64} : (tensor<2x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = "tdag.softmax"(%m) {dim = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p3 = "tdag.reshape"(%p) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %o3 = "tdag.bmm"(%p3, %v3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %o4 = "tdag.reshape"(%o3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %ot = "tdag.permute"(%o4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %o = "tdag.reshape"(%ot) : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// shifted_additive
// CHECK-LABEL: func.func @shifted_additive
// CHECK-NOT: tdag.gqa_attention
// CHECK-NOT: "tdag.attention"
// CHECK: "tdag.softmax"
// CHECK: "tdag.bmm"
func.func @shifted_additive() -> tensor<2x4x8xf32> {
  %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x4x8xf32>
  %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x4x8xf32>
  %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x4x8xf32>
  %q4 = "tdag.reshape"(%q) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qp = "tdag.permute"(%q4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %q3 = "tdag.reshape"(%qp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %k4 = "tdag.reshape"(%k) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kp = "tdag.permute"(%k4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %v4 = "tdag.reshape"(%v) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vp = "tdag.permute"(%v4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt = "tdag.permute"(%kp) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %k3 = "tdag.reshape"(%kt) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %v3 = "tdag.reshape"(%vp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %s3 = "tdag.bmm"(%q3, %k3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s = "tdag.reshape"(%s3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %sc = "tdag.mul_scalar"(%s) {value = 0.5 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %tri = "tdag.triangle"() {diagonal = -1 : i64, inside = 0.0 : f64, outside = 0xFFF0000000000000 : f64} : () -> tensor<4x4xf32>
  %m = "tdag.add_bcast"(%sc, %tri) : (tensor<2x2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = "tdag.softmax"(%m) {dim = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p3 = "tdag.reshape"(%p) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %o3 = "tdag.bmm"(%p3, %v3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %o4 = "tdag.reshape"(%o3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %ot = "tdag.permute"(%o4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %o = "tdag.reshape"(%ot) : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// no_mask
// CHECK-LABEL: func.func @no_mask
// CHECK-NOT: tdag.gqa_attention
// CHECK-NOT: "tdag.attention"
// CHECK: "tdag.softmax"
// CHECK: "tdag.bmm"
func.func @no_mask() -> tensor<2x4x8xf32> {
  %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x4x8xf32>
  %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x4x8xf32>
  %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x4x8xf32>
  %q4 = "tdag.reshape"(%q) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qp = "tdag.permute"(%q4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %q3 = "tdag.reshape"(%qp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %k4 = "tdag.reshape"(%k) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kp = "tdag.permute"(%k4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %v4 = "tdag.reshape"(%v) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vp = "tdag.permute"(%v4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt = "tdag.permute"(%kp) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %k3 = "tdag.reshape"(%kt) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %v3 = "tdag.reshape"(%vp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %s3 = "tdag.bmm"(%q3, %k3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s = "tdag.reshape"(%s3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %sc = "tdag.mul_scalar"(%s) {value = 0.5 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %m = "tdag.mul_scalar"(%sc) {value = 1.0 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = "tdag.softmax"(%m) {dim = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p3 = "tdag.reshape"(%p) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %o3 = "tdag.bmm"(%p3, %v3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %o4 = "tdag.reshape"(%o3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %ot = "tdag.permute"(%o4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %o = "tdag.reshape"(%ot) : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// other_scale
// CHECK-LABEL: func.func @other_scale
// CHECK-NOT: tdag.gqa_attention
// CHECK-NOT: "tdag.attention"
// CHECK: "tdag.softmax"
// CHECK: "tdag.bmm"
func.func @other_scale() -> tensor<2x4x8xf32> {
  %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x4x8xf32>
  %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x4x8xf32>
  %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x4x8xf32>
  %q4 = "tdag.reshape"(%q) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qp = "tdag.permute"(%q4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %q3 = "tdag.reshape"(%qp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %k4 = "tdag.reshape"(%k) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kp = "tdag.permute"(%k4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %v4 = "tdag.reshape"(%v) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vp = "tdag.permute"(%v4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt = "tdag.permute"(%kp) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %k3 = "tdag.reshape"(%kt) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %v3 = "tdag.reshape"(%vp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %s3 = "tdag.bmm"(%q3, %k3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s = "tdag.reshape"(%s3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %sc = "tdag.mul_scalar"(%s) {value = 0.25 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %tri = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = 1.0 : f64} : () -> tensor<4x4xf32>
  %tri4 = "tdag.reshape"(%tri) : (tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %m = "tdag.masked_fill"(%sc, %tri4) {value = 0xFFF0000000000000 : f64} : (tensor<2x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = "tdag.softmax"(%m) {dim = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p3 = "tdag.reshape"(%p) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %o3 = "tdag.bmm"(%p3, %v3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %o4 = "tdag.reshape"(%o3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %ot = "tdag.permute"(%o4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %o = "tdag.reshape"(%ot) : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}

// -----

// softmax_other_dim
// CHECK-LABEL: func.func @softmax_other_dim
// CHECK-NOT: tdag.gqa_attention
// CHECK-NOT: "tdag.attention"
// CHECK: "tdag.softmax"
// CHECK: "tdag.bmm"
func.func @softmax_other_dim() -> tensor<2x4x8xf32> {
  %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x4x8xf32>
  %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x4x8xf32>
  %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x4x8xf32>
  %q4 = "tdag.reshape"(%q) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %qp = "tdag.permute"(%q4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %q3 = "tdag.reshape"(%qp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %k4 = "tdag.reshape"(%k) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %kp = "tdag.permute"(%k4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %v4 = "tdag.reshape"(%v) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32>
  %vp = "tdag.permute"(%v4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %kt = "tdag.permute"(%kp) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %k3 = "tdag.reshape"(%kt) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %v3 = "tdag.reshape"(%vp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %s3 = "tdag.bmm"(%q3, %k3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %s = "tdag.reshape"(%s3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %sc = "tdag.mul_scalar"(%s) {value = 0.5 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %tri = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = 1.0 : f64} : () -> tensor<4x4xf32>
  %tri4 = "tdag.reshape"(%tri) : (tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %m = "tdag.masked_fill"(%sc, %tri4) {value = 0xFFF0000000000000 : f64} : (tensor<2x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = "tdag.softmax"(%m) {dim = 2 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p3 = "tdag.reshape"(%p) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %o3 = "tdag.bmm"(%p3, %v3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %o4 = "tdag.reshape"(%o3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %ot = "tdag.permute"(%o4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32>
  %o = "tdag.reshape"(%ot) : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32>
  return %o : tensor<2x4x8xf32>
}


// -----

// gqa_attention over the thirds of one projection, as the exporter writes torch 2's
// scaled_dot_product_attention after c_attn.split: tdag.attention on the projection
// CHECK-LABEL: func.func @sdpa_thirds
// CHECK: %1:2 = "tdag.attention"(%0) {heads = 2 : i64} : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4xf32>)
// CHECK-NEXT: return %1#0
func.func @sdpa_thirds() -> tensor<2x4x8xf32> {
  %qkv = "tdag.param"() {init = "normal", name = "qkv"} : () -> tensor<2x4x24xf32>
  %q = "tdag.slice"(%qkv) {dim = 2 : i64, start = 0 : i64} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %k = "tdag.slice"(%qkv) {dim = 2 : i64, start = 8 : i64} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %v = "tdag.slice"(%qkv) {dim = 2 : i64, start = 16 : i64} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %o, %p = "tdag.gqa_attention"(%q, %k, %v) {heads = 2 : i64, kv_heads = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4xf32>)
  return %o : tensor<2x4x8xf32>
}

// -----

// k and v swapped: the thirds out of order are not qkv's layout
// CHECK-LABEL: func.func @sdpa_thirds_swapped
// CHECK-NOT: "tdag.attention"
// CHECK: "tdag.gqa_attention"
func.func @sdpa_thirds_swapped() -> tensor<2x4x8xf32> {
  %qkv = "tdag.param"() {init = "normal", name = "qkv"} : () -> tensor<2x4x24xf32>
  %q = "tdag.slice"(%qkv) {dim = 2 : i64, start = 0 : i64} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %k = "tdag.slice"(%qkv) {dim = 2 : i64, start = 16 : i64} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %v = "tdag.slice"(%qkv) {dim = 2 : i64, start = 8 : i64} : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
  %o, %p = "tdag.gqa_attention"(%q, %k, %v) {heads = 2 : i64, kv_heads = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4xf32>)
  return %o : tensor<2x4x8xf32>
}
// -----

// Hugging Face Llama: heads by view + transpose(1, 2), repeat_kv after the transpose
// (x[:, :, None].expand(...).reshape(...)), the additive causal mask of torch.finfo.min
// built as (T,T), [None, None] and expanded to (B,1,T,T) then to the heads: GQA
// CHECK-LABEL: func.func @hf_repeat_kv_after_transpose
// CHECK-NOT: tdag.softmax
// CHECK: "tdag.gqa_attention"(%0, %1, %2) {heads = 4 : i64, kv_heads = 2 : i64} : (tensor<2x5x12xf32>, tensor<2x5x6xf32>, tensor<2x5x6xf32>) -> (tensor<2x5x12xf32>, tensor<2x4x5xf32>)
// CHECK-NEXT: return %3#0
func.func @hf_repeat_kv_after_transpose() -> tensor<2x5x12xf32> {
    %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x5x12xf32>
    %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x5x6xf32>
    %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x5x6xf32>
    %a1 = "tdag.reshape"(%q) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a2 = "tdag.permute"(%a1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a3 = "tdag.reshape"(%k) : (tensor<2x5x6xf32>) -> tensor<2x5x2x3xf32>
    %a4 = "tdag.permute"(%a3) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x2x3xf32>) -> tensor<2x2x5x3xf32>
    %a5 = "tdag.reshape"(%v) : (tensor<2x5x6xf32>) -> tensor<2x5x2x3xf32>
    %a6 = "tdag.permute"(%a5) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x2x3xf32>) -> tensor<2x2x5x3xf32>
    %a7 = "tdag.reshape"(%a4) : (tensor<2x2x5x3xf32>) -> tensor<2x2x1x5x3xf32>
    %a8 = "tdag.broadcast"(%a7) : (tensor<2x2x1x5x3xf32>) -> tensor<2x2x2x5x3xf32>
    %a9 = "tdag.reshape"(%a8) : (tensor<2x2x2x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a10 = "tdag.reshape"(%a6) : (tensor<2x2x5x3xf32>) -> tensor<2x2x1x5x3xf32>
    %a11 = "tdag.broadcast"(%a10) : (tensor<2x2x1x5x3xf32>) -> tensor<2x2x2x5x3xf32>
    %a12 = "tdag.reshape"(%a11) : (tensor<2x2x2x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a13 = "tdag.permute"(%a9) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x4x3x5xf32>
    %a14 = "tdag.reshape"(%a2) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a15 = "tdag.reshape"(%a13) : (tensor<2x4x3x5xf32>) -> tensor<8x3x5xf32>
    %a16 = "tdag.bmm"(%a14, %a15) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x3xf32>, tensor<8x3x5xf32>) -> tensor<8x5x5xf32>
    %a17 = "tdag.reshape"(%a16) : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a18 = "tdag.mul_scalar"(%a17) {value = 0.5773502691896257 : f64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a19 = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = -3.40282346638528860e+38 : f64} : () -> tensor<5x5xf32>
    %a20 = "tdag.reshape"(%a19) : (tensor<5x5xf32>) -> tensor<1x1x5x5xf32>
    %a21 = "tdag.broadcast"(%a20) : (tensor<1x1x5x5xf32>) -> tensor<2x1x5x5xf32>
    %a22 = "tdag.broadcast"(%a21) : (tensor<2x1x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a23 = "tdag.add"(%a18, %a22) : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a24 = "tdag.softmax"(%a23) {dim = 3 : i64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a25 = "tdag.reshape"(%a24) : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %a26 = "tdag.reshape"(%a12) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a27 = "tdag.bmm"(%a25, %a26) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x5xf32>, tensor<8x5x3xf32>) -> tensor<8x5x3xf32>
    %a28 = "tdag.reshape"(%a27) : (tensor<8x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a29 = "tdag.permute"(%a28) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x5x3xf32>) -> tensor<2x5x4x3xf32>
    %a30 = "tdag.reshape"(%a29) : (tensor<2x5x4x3xf32>) -> tensor<2x5x12xf32>
    return %a30 : tensor<2x5x12xf32>
}


// -----

// multi-query (Gemma 2B, Falcon): one kv head repeated for the four query heads
// CHECK-LABEL: func.func @hf_multi_query
// CHECK-NOT: tdag.softmax
// CHECK: "tdag.gqa_attention"(%0, %1, %2) {heads = 4 : i64, kv_heads = 1 : i64} : (tensor<2x5x12xf32>, tensor<2x5x3xf32>, tensor<2x5x3xf32>)
// CHECK-NEXT: return %3#0
func.func @hf_multi_query() -> tensor<2x5x12xf32> {
    %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x5x12xf32>
    %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x5x3xf32>
    %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x5x3xf32>
    %a1 = "tdag.reshape"(%q) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a2 = "tdag.permute"(%a1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a3 = "tdag.reshape"(%k) : (tensor<2x5x3xf32>) -> tensor<2x5x1x3xf32>
    %a4 = "tdag.permute"(%a3) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x1x3xf32>) -> tensor<2x1x5x3xf32>
    %a5 = "tdag.reshape"(%v) : (tensor<2x5x3xf32>) -> tensor<2x5x1x3xf32>
    %a6 = "tdag.permute"(%a5) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x1x3xf32>) -> tensor<2x1x5x3xf32>
    %a7 = "tdag.reshape"(%a4) : (tensor<2x1x5x3xf32>) -> tensor<2x1x1x5x3xf32>
    %a8 = "tdag.broadcast"(%a7) : (tensor<2x1x1x5x3xf32>) -> tensor<2x1x4x5x3xf32>
    %a9 = "tdag.reshape"(%a8) : (tensor<2x1x4x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a10 = "tdag.reshape"(%a6) : (tensor<2x1x5x3xf32>) -> tensor<2x1x1x5x3xf32>
    %a11 = "tdag.broadcast"(%a10) : (tensor<2x1x1x5x3xf32>) -> tensor<2x1x4x5x3xf32>
    %a12 = "tdag.reshape"(%a11) : (tensor<2x1x4x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a13 = "tdag.permute"(%a9) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x4x3x5xf32>
    %a14 = "tdag.reshape"(%a2) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a15 = "tdag.reshape"(%a13) : (tensor<2x4x3x5xf32>) -> tensor<8x3x5xf32>
    %a16 = "tdag.bmm"(%a14, %a15) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x3xf32>, tensor<8x3x5xf32>) -> tensor<8x5x5xf32>
    %a17 = "tdag.reshape"(%a16) : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a18 = "tdag.mul_scalar"(%a17) {value = 0.5773502691896257 : f64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a19 = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = -3.40282346638528860e+38 : f64} : () -> tensor<5x5xf32>
    %a20 = "tdag.reshape"(%a19) : (tensor<5x5xf32>) -> tensor<1x1x5x5xf32>
    %a21 = "tdag.broadcast"(%a20) : (tensor<1x1x5x5xf32>) -> tensor<2x1x5x5xf32>
    %a22 = "tdag.broadcast"(%a21) : (tensor<2x1x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a23 = "tdag.add"(%a18, %a22) : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a24 = "tdag.softmax"(%a23) {dim = 3 : i64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a25 = "tdag.reshape"(%a24) : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %a26 = "tdag.reshape"(%a12) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a27 = "tdag.bmm"(%a25, %a26) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x5xf32>, tensor<8x5x3xf32>) -> tensor<8x5x3xf32>
    %a28 = "tdag.reshape"(%a27) : (tensor<8x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a29 = "tdag.permute"(%a28) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x5x3xf32>) -> tensor<2x5x4x3xf32>
    %a30 = "tdag.reshape"(%a29) : (tensor<2x5x4x3xf32>) -> tensor<2x5x12xf32>
    return %a30 : tensor<2x5x12xf32>
}


// -----

// GPT-2's torch.where(causal_mask, w, finfo.min): masked_fill of the cells above the
// diagonal with the lowest float32
// CHECK-LABEL: func.func @hf_masked_fill_finfo_min
// CHECK-NOT: tdag.softmax
// CHECK: "tdag.gqa_attention"(%0, %1, %2) {heads = 4 : i64, kv_heads = 4 : i64}
// CHECK-NEXT: return %3#0
func.func @hf_masked_fill_finfo_min() -> tensor<2x5x12xf32> {
    %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x5x12xf32>
    %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x5x12xf32>
    %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x5x12xf32>
    %a1 = "tdag.reshape"(%q) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a2 = "tdag.permute"(%a1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a3 = "tdag.reshape"(%k) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a4 = "tdag.permute"(%a3) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a5 = "tdag.reshape"(%v) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a6 = "tdag.permute"(%a5) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a7 = "tdag.permute"(%a4) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x4x3x5xf32>
    %a8 = "tdag.reshape"(%a2) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a9 = "tdag.reshape"(%a7) : (tensor<2x4x3x5xf32>) -> tensor<8x3x5xf32>
    %a10 = "tdag.bmm"(%a8, %a9) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x3xf32>, tensor<8x3x5xf32>) -> tensor<8x5x5xf32>
    %a11 = "tdag.reshape"(%a10) : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a12 = "tdag.mul_scalar"(%a11) {value = 0.5773502691896257 : f64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a13 = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = 1.0 : f64} : () -> tensor<5x5xf32>
    %a14 = "tdag.reshape"(%a13) : (tensor<5x5xf32>) -> tensor<1x1x5x5xf32>
    %a15 = "tdag.masked_fill"(%a12, %a14) {value = -3.40282346638528860e+38 : f64} : (tensor<2x4x5x5xf32>, tensor<1x1x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a16 = "tdag.softmax"(%a15) {dim = 3 : i64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a17 = "tdag.reshape"(%a16) : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %a18 = "tdag.reshape"(%a6) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a19 = "tdag.bmm"(%a17, %a18) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x5xf32>, tensor<8x5x3xf32>) -> tensor<8x5x3xf32>
    %a20 = "tdag.reshape"(%a19) : (tensor<8x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a21 = "tdag.permute"(%a20) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x5x3xf32>) -> tensor<2x5x4x3xf32>
    %a22 = "tdag.reshape"(%a21) : (tensor<2x5x4x3xf32>) -> tensor<2x5x12xf32>
    return %a22 : tensor<2x5x12xf32>
}


// -----

// masked with -1e4 (BERT's habit): exp(-1e4 + s) need not underflow for every score, so
// this is not the causal attention the fused op computes exactly: must not fire
// CHECK-LABEL: func.func @mask_value_too_small
// CHECK-NOT: tdag.gqa_attention
// CHECK: "tdag.masked_fill"
// CHECK: "tdag.softmax"
func.func @mask_value_too_small() -> tensor<2x5x12xf32> {
    %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x5x12xf32>
    %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x5x12xf32>
    %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x5x12xf32>
    %a1 = "tdag.reshape"(%q) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a2 = "tdag.permute"(%a1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a3 = "tdag.reshape"(%k) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a4 = "tdag.permute"(%a3) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a5 = "tdag.reshape"(%v) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a6 = "tdag.permute"(%a5) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a7 = "tdag.permute"(%a4) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x4x3x5xf32>
    %a8 = "tdag.reshape"(%a2) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a9 = "tdag.reshape"(%a7) : (tensor<2x4x3x5xf32>) -> tensor<8x3x5xf32>
    %a10 = "tdag.bmm"(%a8, %a9) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x3xf32>, tensor<8x3x5xf32>) -> tensor<8x5x5xf32>
    %a11 = "tdag.reshape"(%a10) : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a12 = "tdag.mul_scalar"(%a11) {value = 0.5773502691896257 : f64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a13 = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = 1.0 : f64} : () -> tensor<5x5xf32>
    %a14 = "tdag.reshape"(%a13) : (tensor<5x5xf32>) -> tensor<1x1x5x5xf32>
    %a15 = "tdag.masked_fill"(%a12, %a14) {value = -1.0e+04 : f64} : (tensor<2x4x5x5xf32>, tensor<1x1x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a16 = "tdag.softmax"(%a15) {dim = 3 : i64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a17 = "tdag.reshape"(%a16) : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %a18 = "tdag.reshape"(%a6) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a19 = "tdag.bmm"(%a17, %a18) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x5xf32>, tensor<8x5x3xf32>) -> tensor<8x5x3xf32>
    %a20 = "tdag.reshape"(%a19) : (tensor<8x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a21 = "tdag.permute"(%a20) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x5x3xf32>) -> tensor<2x5x4x3xf32>
    %a22 = "tdag.reshape"(%a21) : (tensor<2x5x4x3xf32>) -> tensor<2x5x12xf32>
    return %a22 : tensor<2x5x12xf32>
}


// -----

// the same for an added triangle of -1e4: must not fire
// CHECK-LABEL: func.func @additive_mask_too_small
// CHECK-NOT: tdag.gqa_attention
// CHECK: "tdag.softmax"
func.func @additive_mask_too_small() -> tensor<2x5x12xf32> {
    %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x5x12xf32>
    %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x5x12xf32>
    %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x5x12xf32>
    %a1 = "tdag.reshape"(%q) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a2 = "tdag.permute"(%a1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a3 = "tdag.reshape"(%k) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a4 = "tdag.permute"(%a3) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a5 = "tdag.reshape"(%v) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a6 = "tdag.permute"(%a5) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a7 = "tdag.permute"(%a4) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x4x3x5xf32>
    %a8 = "tdag.reshape"(%a2) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a9 = "tdag.reshape"(%a7) : (tensor<2x4x3x5xf32>) -> tensor<8x3x5xf32>
    %a10 = "tdag.bmm"(%a8, %a9) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x3xf32>, tensor<8x3x5xf32>) -> tensor<8x5x5xf32>
    %a11 = "tdag.reshape"(%a10) : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a12 = "tdag.mul_scalar"(%a11) {value = 0.5773502691896257 : f64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a13 = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = -1.0e+04 : f64} : () -> tensor<5x5xf32>
    %a14 = "tdag.reshape"(%a13) : (tensor<5x5xf32>) -> tensor<1x1x5x5xf32>
    %a15 = "tdag.broadcast"(%a14) : (tensor<1x1x5x5xf32>) -> tensor<2x1x5x5xf32>
    %a16 = "tdag.broadcast"(%a15) : (tensor<2x1x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a17 = "tdag.add"(%a12, %a16) : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a18 = "tdag.softmax"(%a17) {dim = 3 : i64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a19 = "tdag.reshape"(%a18) : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %a20 = "tdag.reshape"(%a6) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a21 = "tdag.bmm"(%a19, %a20) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x5xf32>, tensor<8x5x3xf32>) -> tensor<8x5x3xf32>
    %a22 = "tdag.reshape"(%a21) : (tensor<8x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a23 = "tdag.permute"(%a22) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x5x3xf32>) -> tensor<2x5x4x3xf32>
    %a24 = "tdag.reshape"(%a23) : (tensor<2x5x4x3xf32>) -> tensor<2x5x12xf32>
    return %a24 : tensor<2x5x12xf32>
}


// -----

// kv heads repeated by tiling (x.repeat(1, rep, 1, 1): head h reads kv head h % KV), not
// repeat_kv's interleave (h // rep) that gqa_attention computes: must not fire
// CHECK-LABEL: func.func @tiled_kv_heads
// CHECK-NOT: tdag.gqa_attention
// CHECK: "tdag.softmax"
func.func @tiled_kv_heads() -> tensor<2x5x12xf32> {
    %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x5x12xf32>
    %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x5x6xf32>
    %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x5x6xf32>
    %a1 = "tdag.reshape"(%q) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a2 = "tdag.permute"(%a1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a3 = "tdag.reshape"(%k) : (tensor<2x5x6xf32>) -> tensor<2x5x2x3xf32>
    %a4 = "tdag.permute"(%a3) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x2x3xf32>) -> tensor<2x2x5x3xf32>
    %a5 = "tdag.reshape"(%a4) : (tensor<2x2x5x3xf32>) -> tensor<2x1x2x5x3xf32>
    %a6 = "tdag.broadcast"(%a5) : (tensor<2x1x2x5x3xf32>) -> tensor<2x2x2x5x3xf32>
    %a7 = "tdag.reshape"(%a6) : (tensor<2x2x2x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a8 = "tdag.reshape"(%v) : (tensor<2x5x6xf32>) -> tensor<2x5x2x3xf32>
    %a9 = "tdag.permute"(%a8) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x2x3xf32>) -> tensor<2x2x5x3xf32>
    %a10 = "tdag.reshape"(%a9) : (tensor<2x2x5x3xf32>) -> tensor<2x1x2x5x3xf32>
    %a11 = "tdag.broadcast"(%a10) : (tensor<2x1x2x5x3xf32>) -> tensor<2x2x2x5x3xf32>
    %a12 = "tdag.reshape"(%a11) : (tensor<2x2x2x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a13 = "tdag.permute"(%a7) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x4x3x5xf32>
    %a14 = "tdag.reshape"(%a2) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a15 = "tdag.reshape"(%a13) : (tensor<2x4x3x5xf32>) -> tensor<8x3x5xf32>
    %a16 = "tdag.bmm"(%a14, %a15) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x3xf32>, tensor<8x3x5xf32>) -> tensor<8x5x5xf32>
    %a17 = "tdag.reshape"(%a16) : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a18 = "tdag.mul_scalar"(%a17) {value = 0.5773502691896257 : f64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a19 = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = -3.40282346638528860e+38 : f64} : () -> tensor<5x5xf32>
    %a20 = "tdag.reshape"(%a19) : (tensor<5x5xf32>) -> tensor<1x1x5x5xf32>
    %a21 = "tdag.broadcast"(%a20) : (tensor<1x1x5x5xf32>) -> tensor<2x1x5x5xf32>
    %a22 = "tdag.broadcast"(%a21) : (tensor<2x1x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a23 = "tdag.add"(%a18, %a22) : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a24 = "tdag.softmax"(%a23) {dim = 3 : i64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a25 = "tdag.reshape"(%a24) : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %a26 = "tdag.reshape"(%a12) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a27 = "tdag.bmm"(%a25, %a26) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x5xf32>, tensor<8x5x3xf32>) -> tensor<8x5x3xf32>
    %a28 = "tdag.reshape"(%a27) : (tensor<8x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a29 = "tdag.permute"(%a28) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x5x3xf32>) -> tensor<2x5x4x3xf32>
    %a30 = "tdag.reshape"(%a29) : (tensor<2x5x4x3xf32>) -> tensor<2x5x12xf32>
    return %a30 : tensor<2x5x12xf32>
}


// -----

// GPT-NeoX: qkv(x).view(B, T, H, 3D).transpose(1, 2).chunk(3, -1): each head's q, k, v
// side by side; q, k and v are each head's D-feature slice of the per-head (3D) rows
// CHECK-LABEL: func.func @neox_per_head_packed
// CHECK-NOT: tdag.softmax
// CHECK: %[[R:.*]] = "tdag.reshape"(%0) : (tensor<2x5x36xf32>) -> tensor<2x5x4x9xf32>
// CHECK-NEXT: %[[Q:.*]] = "tdag.slice"(%[[R]]) {dim = 3 : i64, start = 0 : i64} : (tensor<2x5x4x9xf32>) -> tensor<2x5x4x3xf32>
// CHECK-NEXT: %[[Q3:.*]] = "tdag.reshape"(%[[Q]]) : (tensor<2x5x4x3xf32>) -> tensor<2x5x12xf32>
// CHECK-NEXT: %[[K:.*]] = "tdag.slice"(%[[R]]) {dim = 3 : i64, start = 3 : i64}
// CHECK-NEXT: %[[K3:.*]] = "tdag.reshape"(%[[K]])
// CHECK-NEXT: %[[V:.*]] = "tdag.slice"(%[[R]]) {dim = 3 : i64, start = 6 : i64}
// CHECK-NEXT: %[[V3:.*]] = "tdag.reshape"(%[[V]])
// CHECK-NEXT: "tdag.gqa_attention"(%[[Q3]], %[[K3]], %[[V3]]) {heads = 4 : i64, kv_heads = 4 : i64}
func.func @neox_per_head_packed() -> tensor<2x5x12xf32> {
    %qkv = "tdag.param"() {init = "normal", name = "qkv"} : () -> tensor<2x5x36xf32>
    %a1 = "tdag.reshape"(%qkv) : (tensor<2x5x36xf32>) -> tensor<2x5x4x9xf32>
    %a2 = "tdag.permute"(%a1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x9xf32>) -> tensor<2x4x5x9xf32>
    %a3 = "tdag.slice"(%a2) {dim = 3 : i64, start = 0 : i64} : (tensor<2x4x5x9xf32>) -> tensor<2x4x5x3xf32>
    %a4 = "tdag.slice"(%a2) {dim = 3 : i64, start = 3 : i64} : (tensor<2x4x5x9xf32>) -> tensor<2x4x5x3xf32>
    %a5 = "tdag.slice"(%a2) {dim = 3 : i64, start = 6 : i64} : (tensor<2x4x5x9xf32>) -> tensor<2x4x5x3xf32>
    %a6 = "tdag.permute"(%a4) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x4x3x5xf32>
    %a7 = "tdag.reshape"(%a3) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a8 = "tdag.reshape"(%a6) : (tensor<2x4x3x5xf32>) -> tensor<8x3x5xf32>
    %a9 = "tdag.bmm"(%a7, %a8) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x3xf32>, tensor<8x3x5xf32>) -> tensor<8x5x5xf32>
    %a10 = "tdag.reshape"(%a9) : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a11 = "tdag.mul_scalar"(%a10) {value = 0.5773502691896257 : f64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a12 = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = -3.40282346638528860e+38 : f64} : () -> tensor<5x5xf32>
    %a13 = "tdag.reshape"(%a12) : (tensor<5x5xf32>) -> tensor<1x1x5x5xf32>
    %a14 = "tdag.broadcast"(%a13) : (tensor<1x1x5x5xf32>) -> tensor<2x1x5x5xf32>
    %a15 = "tdag.broadcast"(%a14) : (tensor<2x1x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a16 = "tdag.add"(%a11, %a15) : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a17 = "tdag.softmax"(%a16) {dim = 3 : i64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a18 = "tdag.reshape"(%a17) : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %a19 = "tdag.reshape"(%a5) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a20 = "tdag.bmm"(%a18, %a19) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x5xf32>, tensor<8x5x3xf32>) -> tensor<8x5x3xf32>
    %a21 = "tdag.reshape"(%a20) : (tensor<8x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a22 = "tdag.permute"(%a21) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x5x3xf32>) -> tensor<2x5x4x3xf32>
    %a23 = "tdag.reshape"(%a22) : (tensor<2x5x4x3xf32>) -> tensor<2x5x12xf32>
    return %a23 : tensor<2x5x12xf32>
}


// -----

// q read across tokens (its features on a dim the positions' stride does not cover): not
// a view of per-token head features: must not fire
// CHECK-LABEL: func.func @q_not_per_token
// CHECK-NOT: tdag.gqa_attention
// CHECK: "tdag.softmax"
func.func @q_not_per_token() -> tensor<2x5x12xf32> {
    %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x3x4x5xf32>
    %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x5x12xf32>
    %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x5x12xf32>
    %a1 = "tdag.permute"(%x) {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
    %a2 = "tdag.reshape"(%k) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a3 = "tdag.permute"(%a2) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a4 = "tdag.reshape"(%v) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a5 = "tdag.permute"(%a4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a6 = "tdag.permute"(%a3) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x4x3x5xf32>
    %a7 = "tdag.reshape"(%a1) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a8 = "tdag.reshape"(%a6) : (tensor<2x4x3x5xf32>) -> tensor<8x3x5xf32>
    %a9 = "tdag.bmm"(%a7, %a8) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x3xf32>, tensor<8x3x5xf32>) -> tensor<8x5x5xf32>
    %a10 = "tdag.reshape"(%a9) : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a11 = "tdag.mul_scalar"(%a10) {value = 0.5773502691896257 : f64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a12 = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = -3.40282346638528860e+38 : f64} : () -> tensor<5x5xf32>
    %a13 = "tdag.reshape"(%a12) : (tensor<5x5xf32>) -> tensor<1x1x5x5xf32>
    %a14 = "tdag.broadcast"(%a13) : (tensor<1x1x5x5xf32>) -> tensor<2x1x5x5xf32>
    %a15 = "tdag.broadcast"(%a14) : (tensor<2x1x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a16 = "tdag.add"(%a11, %a15) : (tensor<2x4x5x5xf32>, tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a17 = "tdag.softmax"(%a16) {dim = 3 : i64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a18 = "tdag.reshape"(%a17) : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %a19 = "tdag.reshape"(%a5) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a20 = "tdag.bmm"(%a18, %a19) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x5xf32>, tensor<8x5x3xf32>) -> tensor<8x5x3xf32>
    %a21 = "tdag.reshape"(%a20) : (tensor<8x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a22 = "tdag.permute"(%a21) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x5x3xf32>) -> tensor<2x5x4x3xf32>
    %a23 = "tdag.reshape"(%a22) : (tensor<2x5x4x3xf32>) -> tensor<2x5x12xf32>
    return %a23 : tensor<2x5x12xf32>
}


// -----

// torch 2's scaled_dot_product_attention(q, k, v, attn_mask=tril(ones(T, T, dtype=bool)))
// written out as its definition (torch 1.13 here has no SDPA, so the exporter's form of it is
// this test's): a boolean (T, T) mask keeping the cells on and below the diagonal, the others
// filled with -inf
// CHECK-LABEL: func.func @sdpa_bool_attn_mask
// CHECK-NOT: tdag.softmax
// CHECK: "tdag.gqa_attention"(%0, %1, %2) {heads = 4 : i64, kv_heads = 4 : i64}
// CHECK-NEXT: return %3#0
func.func @sdpa_bool_attn_mask() -> tensor<2x5x12xf32> {
    %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x5x12xf32>
    %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x5x12xf32>
    %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x5x12xf32>
    %a1 = "tdag.reshape"(%q) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a2 = "tdag.permute"(%a1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a3 = "tdag.reshape"(%k) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a4 = "tdag.permute"(%a3) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a5 = "tdag.reshape"(%v) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a6 = "tdag.permute"(%a5) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a7 = "tdag.permute"(%a4) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x4x3x5xf32>
    %a8 = "tdag.reshape"(%a2) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a9 = "tdag.reshape"(%a7) : (tensor<2x4x3x5xf32>) -> tensor<8x3x5xf32>
    %a10 = "tdag.bmm"(%a8, %a9) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x3xf32>, tensor<8x3x5xf32>) -> tensor<8x5x5xf32>
    %a11 = "tdag.reshape"(%a10) : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a12 = "tdag.mul_scalar"(%a11) {value = 0.5773502691896257 : f64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a13 = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = 1.0 : f64} : () -> tensor<5x5xf32>
    %a14 = "tdag.masked_fill"(%a12, %a13) {value = 0xFFF0000000000000 : f64} : (tensor<2x4x5x5xf32>, tensor<5x5xf32>) -> tensor<2x4x5x5xf32>
    %a15 = "tdag.softmax"(%a14) {dim = 3 : i64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a16 = "tdag.reshape"(%a15) : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %a17 = "tdag.reshape"(%a6) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a18 = "tdag.bmm"(%a16, %a17) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x5xf32>, tensor<8x5x3xf32>) -> tensor<8x5x3xf32>
    %a19 = "tdag.reshape"(%a18) : (tensor<8x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a20 = "tdag.permute"(%a19) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x5x3xf32>) -> tensor<2x5x4x3xf32>
    %a21 = "tdag.reshape"(%a20) : (tensor<2x5x4x3xf32>) -> tensor<2x5x12xf32>
    return %a21 : tensor<2x5x12xf32>
}

// -----

// the same with a float attn_mask added: 0 on and below the diagonal, -inf above
// CHECK-LABEL: func.func @sdpa_float_attn_mask
// CHECK-NOT: tdag.softmax
// CHECK: "tdag.gqa_attention"(%0, %1, %2) {heads = 4 : i64, kv_heads = 4 : i64}
// CHECK-NEXT: return %3#0
func.func @sdpa_float_attn_mask() -> tensor<2x5x12xf32> {
    %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x5x12xf32>
    %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x5x12xf32>
    %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x5x12xf32>
    %a1 = "tdag.reshape"(%q) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a2 = "tdag.permute"(%a1) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a3 = "tdag.reshape"(%k) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a4 = "tdag.permute"(%a3) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a5 = "tdag.reshape"(%v) : (tensor<2x5x12xf32>) -> tensor<2x5x4x3xf32>
    %a6 = "tdag.permute"(%a5) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x4x3xf32>) -> tensor<2x4x5x3xf32>
    %a7 = "tdag.permute"(%a4) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x4x3x5xf32>
    %a8 = "tdag.reshape"(%a2) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a9 = "tdag.reshape"(%a7) : (tensor<2x4x3x5xf32>) -> tensor<8x3x5xf32>
    %a10 = "tdag.bmm"(%a8, %a9) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x3xf32>, tensor<8x3x5xf32>) -> tensor<8x5x5xf32>
    %a11 = "tdag.reshape"(%a10) : (tensor<8x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a12 = "tdag.mul_scalar"(%a11) {value = 0.5773502691896257 : f64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a13 = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = 0xFFF0000000000000 : f64} : () -> tensor<5x5xf32>
    %a14 = "tdag.add_bcast"(%a12, %a13) : (tensor<2x4x5x5xf32>, tensor<5x5xf32>) -> tensor<2x4x5x5xf32>
    %a15 = "tdag.softmax"(%a14) {dim = 3 : i64} : (tensor<2x4x5x5xf32>) -> tensor<2x4x5x5xf32>
    %a16 = "tdag.reshape"(%a15) : (tensor<2x4x5x5xf32>) -> tensor<8x5x5xf32>
    %a17 = "tdag.reshape"(%a6) : (tensor<2x4x5x3xf32>) -> tensor<8x5x3xf32>
    %a18 = "tdag.bmm"(%a16, %a17) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<8x5x5xf32>, tensor<8x5x3xf32>) -> tensor<8x5x3xf32>
    %a19 = "tdag.reshape"(%a18) : (tensor<8x5x3xf32>) -> tensor<2x4x5x3xf32>
    %a20 = "tdag.permute"(%a19) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x5x3xf32>) -> tensor<2x5x4x3xf32>
    %a21 = "tdag.reshape"(%a20) : (tensor<2x5x4x3xf32>) -> tensor<2x5x12xf32>
    return %a21 : tensor<2x5x12xf32>
}

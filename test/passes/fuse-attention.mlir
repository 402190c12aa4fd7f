// --piper-fuse on causal attention chains as python/piper exports them (q @ k^T * scale, a
// causal mask, softmax over the last dim, @ v; heads by reshape + permute; GQA's kv heads
// repeated by broadcast + reshape). Each chain either becomes one fused op, with every layout
// op around it cancelled, or is left whole: a mask shifted by one diagonal either way, no
// mask, another scale, or a softmax over another dim must not fire.
// RUN: piper-opt --split-input-file %s --piper-fuse | FileCheck %s

// causal_masked_fill
// CHECK-LABEL: func.func @causal_masked_fill
// CHECK: "tdag.gqa_attention"(%0, %1, %2) {heads = 2 : i64, kv_heads = 2 : i64}
// CHECK-NEXT: return %3#0
// CHECK-NOT: tdag.softmax
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
// CHECK: "tdag.gqa_attention"(%0, %1, %2) {heads = 2 : i64, kv_heads = 2 : i64}
// CHECK-NEXT: return %3#0
// CHECK-NOT: tdag.softmax
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
// CHECK: "tdag.gqa_attention"(%0, %1, %2) {heads = 2 : i64, kv_heads = 1 : i64} : (tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>)
// CHECK-NEXT: return %3#0
// CHECK-NOT: tdag.softmax
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
// CHECK: %1:2 = "tdag.attention"(%0) {heads = 2 : i64}
// CHECK-NEXT: return %1#0
// CHECK-NOT: tdag.softmax
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
// CHECK: %1:2 = "tdag.attention"(%0) {heads = 2 : i64}
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

// --piper-fuse-report=FILE: what fused where, and for a chain left unfused the op that stopped
// the pattern that got furthest. Places are the ops' locations: a name location's module path
// (h.0.attn) and the file's base name and line. Here block 0's attention fuses and block 1's,
// whose mask is shifted by one diagonal, does not: the report names the masked_fill and why,
// and counts the general ops left.
// RUN: piper-opt %s --piper-fuse-report=%t.report -o %t.mlir
// RUN: FileCheck %s < %t.report
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// CHECK: piper-fuse: 1 fused op, 1 chain left unfused; general ops left: reshape x{{[0-9]+}}, permute x{{[0-9]+}}, bmm x2, mul_scalar, softmax, masked_fill
// CHECK-NEXT: h.0.attn model.py:20: fused: attention -> tdag.gqa_attention <- bmm x2, softmax, masked_fill, mul_scalar, reshape x3
// CHECK-NEXT: h.1.attn model.py:20: not fused: attention, from tdag.bmm: stopped at tdag.masked_fill (h.1.attn model.py:18): masked_fill's mask is not the causal triangle (diagonal 0) of the scores' (T, T)
// CHECK-NOT: fused
// IR: "tdag.gqa_attention"
// IR: "tdag.softmax"
func.func @two_blocks() -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x4x8xf32>
  %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x4x8xf32>
  %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<2x4x8xf32>
  %q4 = "tdag.reshape"(%q) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32> loc("h.0.attn"("model.py":12:0))
  %qp = "tdag.permute"(%q4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32> loc("h.0.attn"("model.py":12:0))
  %q3 = "tdag.reshape"(%qp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32> loc("h.0.attn"("model.py":15:0))
  %k4 = "tdag.reshape"(%k) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32> loc("h.0.attn"("model.py":13:0))
  %kp = "tdag.permute"(%k4) {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32> loc("h.0.attn"("model.py":13:0))
  %k3 = "tdag.reshape"(%kp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32> loc("h.0.attn"("model.py":15:0))
  %v4 = "tdag.reshape"(%v) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32> loc("h.0.attn"("model.py":14:0))
  %vp = "tdag.permute"(%v4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32> loc("h.0.attn"("model.py":14:0))
  %v3 = "tdag.reshape"(%vp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32> loc("h.0.attn"("model.py":20:0))
  %s3 = "tdag.bmm"(%q3, %k3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32> loc("h.0.attn"("model.py":15:0))
  %s = "tdag.reshape"(%s3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32> loc("h.0.attn"("model.py":15:0))
  %sc = "tdag.mul_scalar"(%s) {value = 0.5 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> loc("h.0.attn"("model.py":15:0))
  %tri = "tdag.triangle"() {diagonal = 0 : i64, inside = 0.0 : f64, outside = 1.0 : f64} : () -> tensor<4x4xf32> loc("h.0.attn"("model.py":18:0))
  %tri4 = "tdag.reshape"(%tri) : (tensor<4x4xf32>) -> tensor<1x1x4x4xf32> loc("h.0.attn"("model.py":18:0))
  %m = "tdag.masked_fill"(%sc, %tri4) {value = 0xFFF0000000000000 : f64} : (tensor<2x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x2x4x4xf32> loc("h.0.attn"("model.py":18:0))
  %p = "tdag.softmax"(%m) {dim = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> loc("h.0.attn"("model.py":19:0))
  %p3 = "tdag.reshape"(%p) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32> loc("h.0.attn"("model.py":20:0))
  %o3 = "tdag.bmm"(%p3, %v3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32> loc("h.0.attn"("model.py":20:0))
  %o4 = "tdag.reshape"(%o3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32> loc("h.0.attn"("model.py":21:0))
  %ot = "tdag.permute"(%o4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32> loc("h.0.attn"("model.py":21:0))
  %o = "tdag.reshape"(%ot) : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32> loc("h.0.attn"("model.py":21:0))
  %bq4 = "tdag.reshape"(%q) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32> loc("h.1.attn"("model.py":12:0))
  %bqp = "tdag.permute"(%bq4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32> loc("h.1.attn"("model.py":12:0))
  %bq3 = "tdag.reshape"(%bqp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32> loc("h.1.attn"("model.py":15:0))
  %bk4 = "tdag.reshape"(%k) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32> loc("h.1.attn"("model.py":13:0))
  %bkp = "tdag.permute"(%bk4) {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32> loc("h.1.attn"("model.py":13:0))
  %bk3 = "tdag.reshape"(%bkp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32> loc("h.1.attn"("model.py":15:0))
  %bv4 = "tdag.reshape"(%v) : (tensor<2x4x8xf32>) -> tensor<2x4x2x4xf32> loc("h.1.attn"("model.py":14:0))
  %bvp = "tdag.permute"(%bv4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32> loc("h.1.attn"("model.py":14:0))
  %bv3 = "tdag.reshape"(%bvp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32> loc("h.1.attn"("model.py":20:0))
  %bs3 = "tdag.bmm"(%bq3, %bk3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32> loc("h.1.attn"("model.py":15:0))
  %bs = "tdag.reshape"(%bs3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32> loc("h.1.attn"("model.py":15:0))
  %bsc = "tdag.mul_scalar"(%bs) {value = 0.5 : f64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> loc("h.1.attn"("model.py":15:0))
  %btri = "tdag.triangle"() {diagonal = 1 : i64, inside = 0.0 : f64, outside = 1.0 : f64} : () -> tensor<4x4xf32> loc("h.1.attn"("model.py":18:0))
  %btri4 = "tdag.reshape"(%btri) : (tensor<4x4xf32>) -> tensor<1x1x4x4xf32> loc("h.1.attn"("model.py":18:0))
  %bm = "tdag.masked_fill"(%bsc, %btri4) {value = 0xFFF0000000000000 : f64} : (tensor<2x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x2x4x4xf32> loc("h.1.attn"("model.py":18:0))
  %bp = "tdag.softmax"(%bm) {dim = 3 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32> loc("h.1.attn"("model.py":19:0))
  %bp3 = "tdag.reshape"(%bp) : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32> loc("h.1.attn"("model.py":20:0))
  %bo3 = "tdag.bmm"(%bp3, %bv3) {transpose_a = 0 : i64, transpose_b = 0 : i64} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32> loc("h.1.attn"("model.py":20:0))
  %bo4 = "tdag.reshape"(%bo3) : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32> loc("h.1.attn"("model.py":21:0))
  %bot = "tdag.permute"(%bo4) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x4x4xf32>) -> tensor<2x4x2x4xf32> loc("h.1.attn"("model.py":21:0))
  %bo = "tdag.reshape"(%bot) : (tensor<2x4x2x4xf32>) -> tensor<2x4x8xf32> loc("h.1.attn"("model.py":21:0))
  return %o, %bo : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// --piper-canonicalize: the layout canonical forms --piper-fuse meets its patterns in. Each
// form fires where its rule holds and must not fire where it does not (a permute whose user
// moves data across the permuted dims, a reshape that mixes dims the permute reordered, an
// operand that is a whole activation in the permuted layout).
// RUN: piper-opt --split-input-file %s --piper-canonicalize | FileCheck %s

// a permute sinks below an elementwise op: the op runs in x's layout
// CHECK-LABEL: func.func @sink_unary
// CHECK: %[[M:.*]] = "tdag.mul_scalar"(%0) {value = 2.000000e+00 : f64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[P:.*]] = "tdag.permute"(%[[M]]) {perm = array<i64: 0, 2, 1>}
// CHECK-NEXT: return %[[P]]
func.func @sink_unary() -> tensor<2x4x3xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x3x4xf32>
  %p = "tdag.permute"(%x) {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %y = "tdag.mul_scalar"(%p) {value = 2.0 : f64} : (tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

// -----

// RoPE after the heads' transpose: x (B,H,T,D) = permute(x0 (B,T,H,D)) times a (1,1,T,D)
// table; the table is laid over x0 as (T,1,D) broadcast to (T,H,D), and the permute follows
// CHECK-LABEL: func.func @sink_table
// CHECK: %[[R:.*]] = "tdag.reshape"(%1) : (tensor<1x1x4x8xf32>) -> tensor<4x1x8xf32>
// CHECK-NEXT: %[[B:.*]] = "tdag.broadcast"(%[[R]]) : (tensor<4x1x8xf32>) -> tensor<4x2x8xf32>
// CHECK-NEXT: %[[M:.*]] = "tdag.mul"(%0, %[[B]]) : (tensor<2x4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<2x4x2x8xf32>
// CHECK-NEXT: %[[P:.*]] = "tdag.permute"(%[[M]]) {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: return %[[P]]
func.func @sink_table() -> tensor<2x2x4x8xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4x2x8xf32>
  %c = "tdag.param"() {init = "buffer", name = "c"} : () -> tensor<1x1x4x8xf32>
  %p = "tdag.permute"(%x) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x8xf32>) -> tensor<2x2x4x8xf32>
  %y = "tdag.mul"(%p, %c) : (tensor<2x2x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %y : tensor<2x2x4x8xf32>
}

// -----

// both operands permuted alike: one permute after the sum
// CHECK-LABEL: func.func @sink_binary_both
// CHECK: %[[A:.*]] = "tdag.add"(%0, %1) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[P:.*]] = "tdag.permute"(%[[A]])
// CHECK-NEXT: return %[[P]]
func.func @sink_binary_both() -> tensor<2x4x3xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x3x4xf32>
  %z = "tdag.param"() {init = "normal", name = "z"} : () -> tensor<2x3x4xf32>
  %px = "tdag.permute"(%x) {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %pz = "tdag.permute"(%z) {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %y = "tdag.add"(%px, %pz) : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

// -----

// the other operand a whole activation in the permuted layout: sinking would need a permute
// of it, so nothing moves
// CHECK-LABEL: func.func @no_sink_activation
// CHECK: "tdag.permute"(%0)
// CHECK-NEXT: "tdag.add"(%2, %1)
func.func @no_sink_activation() -> tensor<2x4x3xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x3x4xf32>
  %z = "tdag.param"() {init = "normal", name = "z"} : () -> tensor<2x4x3xf32>
  %px = "tdag.permute"(%x) {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %y = "tdag.add"(%px, %z) : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

// -----

// a (3) vector over the permuted (2,4,3): its dim lands on x's dim 1, not a suffix of x
// (2,3,4), so it is reshaped to (3,1) and broadcast to (3,4)
// CHECK-LABEL: func.func @sink_vector
// CHECK: %[[R:.*]] = "tdag.reshape"(%1) : (tensor<3xf32>) -> tensor<3x1xf32>
// CHECK-NEXT: %[[B:.*]] = "tdag.broadcast"(%[[R]]) : (tensor<3x1xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: "tdag.mul"(%0, %[[B]]) : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
func.func @sink_vector() -> tensor<2x4x3xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x3x4xf32>
  %w = "tdag.param"() {init = "normal", name = "w"} : () -> tensor<3xf32>
  %px = "tdag.permute"(%x) {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %y = "tdag.mul"(%px, %w) : (tensor<2x4x3xf32>, tensor<3xf32>) -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

// -----

// a table whose two dims the permute swaps: (4,3) read as (3,4) needs a transpose, which a
// reshape is not: nothing moves
// CHECK-LABEL: func.func @no_sink_swapped_table
// CHECK: "tdag.permute"(%0)
// CHECK-NEXT: "tdag.mul"(%2, %1)
func.func @no_sink_swapped_table() -> tensor<2x4x3xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x3x4xf32>
  %t = "tdag.param"() {init = "buffer", name = "t"} : () -> tensor<4x3xf32>
  %px = "tdag.permute"(%x) {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %y = "tdag.mul"(%px, %t) : (tensor<2x4x3xf32>, tensor<4x3xf32>) -> tensor<2x4x3xf32>
  return %y : tensor<2x4x3xf32>
}

// -----

// slices and a concat on the head's features of a transposed value: they run before the
// transpose (GPT-NeoX's chunk of a per-head packed qkv, rotate_half)
// CHECK-LABEL: func.func @sink_slice_concat
// CHECK: %[[H:.*]] = "tdag.slice"(%0) {dim = 3 : i64, start = 2 : i64} : (tensor<2x4x2x4xf32>) -> tensor<2x4x2x2xf32>
// CHECK-NEXT: %[[L:.*]] = "tdag.slice"(%0) {dim = 3 : i64, start = 0 : i64} : (tensor<2x4x2x4xf32>) -> tensor<2x4x2x2xf32>
// CHECK-NEXT: %[[C:.*]] = "tdag.concat"(%[[H]], %[[L]]) {dim = 3 : i64} : (tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) -> tensor<2x4x2x4xf32>
// CHECK-NEXT: %[[P:.*]] = "tdag.permute"(%[[C]]) {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: return %[[P]]
func.func @sink_slice_concat() -> tensor<2x2x4x4xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4x2x4xf32>
  %p = "tdag.permute"(%x) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x4xf32>) -> tensor<2x2x4x4xf32>
  %hi = "tdag.slice"(%p) {dim = 3 : i64, start = 2 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x2xf32>
  %lo = "tdag.slice"(%p) {dim = 3 : i64, start = 0 : i64} : (tensor<2x2x4x4xf32>) -> tensor<2x2x4x2xf32>
  %c = "tdag.concat"(%hi, %lo) {dim = 3 : i64} : (tensor<2x2x4x2xf32>, tensor<2x2x4x2xf32>) -> tensor<2x2x4x4xf32>
  return %c : tensor<2x2x4x4xf32>
}

// -----

// a concat of operands permuted differently stays
// CHECK-LABEL: func.func @no_sink_concat_mixed
// CHECK: "tdag.concat"(%2, %1) {dim = 2 : i64}
func.func @no_sink_concat_mixed() -> tensor<2x4x6xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x3x4xf32>
  %z = "tdag.param"() {init = "normal", name = "z"} : () -> tensor<2x4x3xf32>
  %px = "tdag.permute"(%x) {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %c = "tdag.concat"(%px, %z) {dim = 2 : i64} : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x6xf32>
  return %c : tensor<2x4x6xf32>
}

// -----

// repeat_kv after the transpose (Hugging Face): (B,T,KV,D) -> (B,KV,T,D) -> (B,KV,1,T,D) ->
// broadcast (B,KV,rep,T,D) -> (B,H,T,D) becomes repeat_kv before it: (B,T,KV,1,D) ->
// (B,T,KV,rep,D) -> (B,T,H,D), then one transpose
// CHECK-LABEL: func.func @repeat_kv_after_transpose
// CHECK: %[[A:.*]] = "tdag.reshape"(%0) : (tensor<2x4x2x8xf32>) -> tensor<2x4x2x1x8xf32>
// CHECK-NEXT: %[[B:.*]] = "tdag.broadcast"(%[[A]]) : (tensor<2x4x2x1x8xf32>) -> tensor<2x4x2x3x8xf32>
// CHECK-NEXT: %[[C:.*]] = "tdag.reshape"(%[[B]]) : (tensor<2x4x2x3x8xf32>) -> tensor<2x4x6x8xf32>
// CHECK-NEXT: %[[P:.*]] = "tdag.permute"(%[[C]]) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x6x8xf32>) -> tensor<2x6x4x8xf32>
// CHECK-NEXT: return %[[P]]
func.func @repeat_kv_after_transpose() -> tensor<2x6x4x8xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4x2x8xf32>
  %t = "tdag.permute"(%x) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x8xf32>) -> tensor<2x2x4x8xf32>
  %u = "tdag.reshape"(%t) : (tensor<2x2x4x8xf32>) -> tensor<2x2x1x4x8xf32>
  %b = "tdag.broadcast"(%u) : (tensor<2x2x1x4x8xf32>) -> tensor<2x2x3x4x8xf32>
  %r = "tdag.reshape"(%b) : (tensor<2x2x3x4x8xf32>) -> tensor<2x6x4x8xf32>
  return %r : tensor<2x6x4x8xf32>
}

// -----

// a reshape merging dims the permute put side by side from apart (B and H of (B,T,H,D)): a
// real transpose, which stays before the reshape
// CHECK-LABEL: func.func @no_sink_reshape_merging_apart
// CHECK: "tdag.permute"(%0)
// CHECK-NEXT: "tdag.reshape"(%1) : (tensor<2x2x4x8xf32>) -> tensor<4x4x8xf32>
func.func @no_sink_reshape_merging_apart() -> tensor<4x4x8xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4x2x8xf32>
  %t = "tdag.permute"(%x) {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x2x8xf32>) -> tensor<2x2x4x8xf32>
  %r = "tdag.reshape"(%t) : (tensor<2x2x4x8xf32>) -> tensor<4x4x8xf32>
  return %r : tensor<4x4x8xf32>
}

// -----

// folds: reshape of a reshape, a reshape and a broadcast to their own type, permutes that
// cancel, a slice of a slice, a slice of a whole dim
// CHECK-LABEL: func.func @folds
// CHECK: %[[R:.*]] = "tdag.reshape"(%0) : (tensor<2x12xf32>) -> tensor<24xf32>
// CHECK-NEXT: %[[S:.*]] = "tdag.slice"(%0) {dim = 1 : i64, start = 5 : i64} : (tensor<2x12xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: return %[[R]], %0, %[[S]]
func.func @folds() -> (tensor<24xf32>, tensor<2x12xf32>, tensor<2x3xf32>) {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x12xf32>
  %a = "tdag.reshape"(%x) : (tensor<2x12xf32>) -> tensor<2x3x4xf32>
  %b = "tdag.reshape"(%a) : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %same = "tdag.reshape"(%x) : (tensor<2x12xf32>) -> tensor<2x12xf32>
  %bc = "tdag.broadcast"(%same) : (tensor<2x12xf32>) -> tensor<2x12xf32>
  %p = "tdag.permute"(%bc) {perm = array<i64: 1, 0>} : (tensor<2x12xf32>) -> tensor<12x2xf32>
  %q = "tdag.permute"(%p) {perm = array<i64: 1, 0>} : (tensor<12x2xf32>) -> tensor<2x12xf32>
  %s1 = "tdag.slice"(%x) {dim = 1 : i64, start = 4 : i64} : (tensor<2x12xf32>) -> tensor<2x6xf32>
  %s2 = "tdag.slice"(%s1) {dim = 1 : i64, start = 1 : i64} : (tensor<2x6xf32>) -> tensor<2x3xf32>
  %s3 = "tdag.slice"(%s2) {dim = 0 : i64, start = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %b, %q, %s3 : tensor<24xf32>, tensor<2x12xf32>, tensor<2x3xf32>
}

// -----

// a broadcast of a suffix of the result into a binary op: the kernels read the suffix
// cyclically, so the op takes it as it is (tdag.add becomes tdag.add_bcast); a broadcast of
// what is not a suffix ((2,1) over (2,4)) stays
// CHECK-LABEL: func.func @suffix_broadcast
// CHECK: %[[A:.*]] = "tdag.add_bcast"(%0, %1) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[B:.*]] = "tdag.broadcast"(%2) : (tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[M:.*]] = "tdag.mul"(%[[A]], %[[B]])
func.func @suffix_broadcast() -> tensor<2x4xf32> {
  %x = "tdag.param"() {init = "normal", name = "x"} : () -> tensor<2x4xf32>
  %v = "tdag.param"() {init = "normal", name = "v"} : () -> tensor<4xf32>
  %c = "tdag.param"() {init = "normal", name = "c"} : () -> tensor<2x1xf32>
  %vb = "tdag.broadcast"(%v) : (tensor<4xf32>) -> tensor<2x4xf32>
  %a = "tdag.add"(%x, %vb) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %cb = "tdag.broadcast"(%c) : (tensor<2x1xf32>) -> tensor<2x4xf32>
  %m = "tdag.mul"(%a, %cb) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %m : tensor<2x4xf32>
}

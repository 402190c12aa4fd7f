// The memory plan reserves what the attention kernels write for the saved result declared
// (B,H,T,T) (the op table's rowResults): on both targets the blocked (flash) kernels keep one
// log-sum-exp per query row (numel / T), not the T x T probabilities. Nothing else lives in
// the arena (no output, no backward), so the arena is the two results' bytes, each rounded up
// to 64 (the plan's alignment).
// RUN: piper-opt %s --split-input-file --piper-lower-to-llvm | FileCheck %s

// Attention, B 2, T 8, C 8, H 2: out 2x8x8 f32 = 512 bytes; 2x2x8 log-sum-exps = 128 bytes
// (the declared probs 2x2x8x8 f32 would be 1024).
// CHECK-LABEL: module attributes {piper.arena_bytes = 640 : i64
module attributes {piper.target = "cpu"} {
func.func @cpu_attention() {
  %qkv = "tdag.param"() {init = "normal", name = "qkv"} : () -> tensor<2x8x24xf32>
  %out, %p = "tdag.attention"(%qkv) {heads = 2 : i64} : (tensor<2x8x24xf32>) -> (tensor<2x8x8xf32>, tensor<2x2x8xf32>)
  return
}
}

// -----

// The same on the GPU.
// CHECK-LABEL: module attributes {piper.arena_bytes = 640 : i64
module attributes {piper.target = "cuda"} {
func.func @gpu_attention() {
  %qkv = "tdag.param"() {init = "normal", name = "qkv"} : () -> tensor<2x8x24xf32>
  %out, %p = "tdag.attention"(%qkv) {heads = 2 : i64} : (tensor<2x8x24xf32>) -> (tensor<2x8x8xf32>, tensor<2x2x8xf32>)
  return
}
}

// -----

// Grouped-query attention, B 1, T 4, H 2 over KV 1, D 4: out 1x4x8 f32 = 128 bytes; 1x2x4
// log-sum-exps = 32 bytes, rounded up to 64.
// CHECK-LABEL: module attributes {piper.arena_bytes = 192 : i64
module attributes {piper.target = "cpu"} {
func.func @cpu_gqa() {
  %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<1x4x8xf32>
  %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<1x4x4xf32>
  %0, %1 = "tdag.gqa_attention"(%q, %k, %k) {heads = 2 : i64, kv_heads = 1 : i64} : (tensor<1x4x8xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> (tensor<1x4x8xf32>, tensor<1x2x4xf32>)
  return
}
}

// -----

// The same on the GPU.
// CHECK-LABEL: module attributes {piper.arena_bytes = 192 : i64
module attributes {piper.target = "cuda"} {
func.func @gpu_gqa() {
  %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<1x4x8xf32>
  %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<1x4x4xf32>
  %0, %1 = "tdag.gqa_attention"(%q, %k, %k) {heads = 2 : i64, kv_heads = 1 : i64} : (tensor<1x4x8xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> (tensor<1x4x8xf32>, tensor<1x2x4xf32>)
  return
}
}

// Context parallelism's positional ops (shard_sequence sets cp_size, extraction cp_rank): the
// CPU target calls the _cp kernel variants with (r, G) appended; the GPU target has none and
// refuses the op by name.
// The setup declares both inputs and the loss as member r of G (prt_declare_cp: the data
// loader's columns, the loss's weight 1/G).
// RUN: piper-opt %s --piper-lower-to-llvm | FileCheck %s
// CHECK-LABEL: llvm.func @piper_setup_dev0
// CHECK-COUNT-3: llvm.call @prt_declare_cp(%arg0, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) : (!llvm.ptr, i64, i64, i64) -> ()
// CHECK-LABEL: llvm.func @piper_step_dev0
// CHECK: llvm.call @prt_embedding_fwd_cp({{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64) -> ()
// CHECK: llvm.call @prt_rope_fwd_cp({{.*}}) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64, f32, i64, i64) -> ()
module attributes {piper.devices = 1 : i64, piper.global_batch = 2 : i64} {
  func.func @device_0() {
    %tok = "tdag.input"() {cp_rank = 1 : i64, cp_size = 2 : i64, name = "tokens"} : () -> tensor<2x4xi32>
    %wte = "tdag.param"() {init = "normal", name = "wte.weight"} : () -> tensor<16x8xf32>
    %wpe = "tdag.param"() {init = "normal", name = "wpe.weight"} : () -> tensor<8x8xf32>
    %x = "tdag.embedding"(%tok, %wte, %wpe) {cp_rank = 1 : i64, cp_size = 2 : i64} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %y = "tdag.rope"(%x) {cp_rank = 1 : i64, cp_size = 2 : i64, head_dim = 4 : i64, theta = 1.0e+04 : f64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %tgt = "tdag.input"() {cp_rank = 1 : i64, cp_size = 2 : i64, name = "targets"} : () -> tensor<2x4xi32>
    %loss, %probs = "tdag.cross_entropy"(%y, %tgt) : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x8xf32>)
    "tdag.output"(%loss) {cp_rank = 1 : i64, cp_size = 2 : i64, name = "loss"} : (tensor<f32>) -> ()
    return
  }
}

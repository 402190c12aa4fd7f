// Context parallelism's per-chunk positions (the _cp kernels) are the CPU's: under --target cuda
// the lowering refuses the op by name, as it does the ring attention.
// RUN: piper-opt %s --piper-lower-to-llvm --verify-diagnostics > /dev/null
module attributes {piper.devices = 1 : i64, piper.global_batch = 2 : i64, piper.target = "cuda"} {
  func.func @device_0() {
    %tok = "tdag.input"() {cp_rank = 1 : i64, cp_size = 2 : i64, name = "tokens"} : () -> tensor<2x4xi32>
    %wte = "tdag.param"() {init = "normal", name = "wte.weight"} : () -> tensor<16x8xf32>
    %wpe = "tdag.param"() {init = "normal", name = "wpe.weight"} : () -> tensor<8x8xf32>
    // once for the training step, once for the evaluation step:
    // expected-error@+2 {{piper-lower-to-llvm: context parallelism's per-chunk positions run on the CPU target only; compile without --target cuda}}
    // expected-error@+1 {{piper-lower-to-llvm: context parallelism's per-chunk positions run on the CPU target only; compile without --target cuda}}
    %x = "tdag.embedding"(%tok, %wte, %wpe) {cp_rank = 1 : i64, cp_size = 2 : i64} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
    %tgt = "tdag.input"() {cp_rank = 1 : i64, cp_size = 2 : i64, name = "targets"} : () -> tensor<2x4xi32>
    %loss, %probs = "tdag.cross_entropy"(%x, %tgt) : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x8xf32>)
    "tdag.output"(%loss) {cp_rank = 1 : i64, cp_size = 2 : i64, name = "loss"} : (tensor<f32>) -> ()
    return
  }
}

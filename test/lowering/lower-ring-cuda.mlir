// The ring attention kernels are the CPU's: under --target cuda the lowering refuses the op by
// name instead of passing device pointers to host code.
// RUN: piper-opt %s --piper-lower-to-llvm --verify-diagnostics > /dev/null
module attributes {piper.devices = 2 : i64, piper.global_batch = 1 : i64, piper.target = "cuda"} {
  func.func @device_0() {
    %qkv = "tdag.param"() {init = "normal", name = "qkv"} : () -> tensor<1x8x24xf32>
    // once for the training step, once for the evaluation step (the forward again):
    // expected-error@+2 {{piper-lower-to-llvm: context parallelism's ring attention runs on the CPU target only; compile without --target cuda}}
    // expected-error@+1 {{piper-lower-to-llvm: context parallelism's ring attention runs on the CPU target only; compile without --target cuda}}
    %o, %l, %t = "comm.ring_attention"(%qkv) {group = [0, 1], tag = 100 : i64, heads = 2 : i64} : (tensor<1x8x24xf32>) -> (tensor<1x8x8xf32>, tensor<1x2x8xf32>, !comm.token)
    "comm.wait"(%t) : (!comm.token) -> ()
    return
  }
  func.func @device_1() {
    %qkv = "tdag.param"() {init = "normal", name = "qkv"} : () -> tensor<1x8x24xf32>
    %o, %l, %t = "comm.ring_attention"(%qkv) {group = [0, 1], tag = 100 : i64, heads = 2 : i64} : (tensor<1x8x24xf32>) -> (tensor<1x8x8xf32>, tensor<1x2x8xf32>, !comm.token)
    "comm.wait"(%t) : (!comm.token) -> ()
    return
  }
}

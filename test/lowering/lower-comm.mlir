// --piper-lower-to-llvm on per-device plans with transfers: comm ops become nonblocking runtime
// calls, comm.wait becomes prt_wait, and the memory plan keeps a sent buffer until its wait and
// no longer.
// RUN: piper-opt %s --piper-lower-to-llvm | FileCheck %s

// Device 0 sends %g1 (1 KiB) and waits; only after the wait can %g3 reuse its bytes: three 1 KiB
// values, at most two live at once, so 2048 bytes (3072 if the sent buffer were never freed).
// CHECK: module attributes {piper.arena_bytes = 2048 : i64, piper.devices = 2 : i64
// CHECK-LABEL: llvm.func @piper_step_dev0
// CHECK: %[[H:.*]] = llvm.call @prt_isend(%arg0, %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64) -> i64
// CHECK: llvm.call @prt_wait(%arg0, %[[H]])
// CHECK-LABEL: llvm.func @piper_step_dev1
// CHECK: %[[R:.*]] = llvm.call @prt_irecv(
// CHECK-NEXT: llvm.call @prt_wait(%arg0, %[[R]])
// CHECK: llvm.call @prt_gelu_fwd
// The dispatch: world, batch, stream names, then a branch per rank.
// CHECK-LABEL: llvm.func @piper_setup(
// CHECK: llvm.call @prt_declare_world(%arg0, %{{.*}})
// CHECK: llvm.call @prt_declare_stream
// CHECK: llvm.call @prt_rank(%arg0)
module attributes {piper.devices = 2 : i64, piper.global_batch = 1 : i64} {
  func.func @device_0() {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<256xf32>
    %g1 = "tdag.gelu"(%p) : (tensor<256xf32>) -> tensor<256xf32>
    %t = "comm.send"(%g1) {peer = 1 : i64, peers = [1], tag = 0 : i64} : (tensor<256xf32>) -> !comm.token
    %g2 = "tdag.gelu"(%p) : (tensor<256xf32>) -> tensor<256xf32>
    "comm.wait"(%t) : (!comm.token) -> ()
    %g3 = "tdag.gelu"(%g2) : (tensor<256xf32>) -> tensor<256xf32>
    return
  }
  func.func @device_1() {
    %v, %t = "comm.recv"() {peer = 0 : i64, peers = [0], tag = 0 : i64} : () -> (tensor<256xf32>, !comm.token)
    "comm.wait"(%t) : (!comm.token) -> ()
    %g = "tdag.gelu"(%v) : (tensor<256xf32>) -> tensor<256xf32>
    return
  }
}

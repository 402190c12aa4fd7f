// --piper-verify-plan reads a plan's functions by exact name: device_<d>, decimal, no
// leading zeros (found by the opt fuzz target: `device_0x` and `device_0` both read as device
// 0, and the second overwrote the first's op list while keeping its length, reading memory
// past the new list).
// RUN: not piper-opt %s --split-input-file --piper-verify-plan 2>&1 | FileCheck %s

// Names that only start like a device function are not plans: device 0's plan is the
// receive, device 1 has none, so the receive waits forever.
// CHECK: verify-plan-device-functions.mlir:[[@LINE+8]]:14: error: piper-verify-plan: the plan deadlocks: device 0 waits forever at comm.recv (tag 0, peer 1)
module attributes {piper.devices = 2 : i64} {
  func.func @device_0x() {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    %t = "comm.send"(%p) {peer = 0 : i64, peers = [0], tag = 0 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
  func.func @device_0() {
    %v, %t = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 0 : i64} : () -> (tensor<4xf32>, !comm.token)
    "comm.wait"(%t) : (!comm.token) -> ()
    return
  }
}

// -----

// A declaration (no body) is an empty plan, not a crash (found by the opt fuzz target).
// CHECK: func.func private @device_0()
module attributes {piper.devices = 1 : i64} {
  func.func private @device_0()
}

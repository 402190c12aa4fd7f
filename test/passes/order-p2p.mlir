// --piper-order-p2p: each pair's receives moved (only earlier) into the order the sender sends,
// the module marked piper.p2p_order = "fifo", which --piper-verify-plan then proves.
// RUN: piper-opt %s --split-input-file --piper-order-p2p --piper-verify-plan | FileCheck %s
// (order-p2p-invalid.mlir: a receive that cannot move)

// Device 1 sends tag 9 then 5; device 0 posted the receive of 5 first: the receive of 9 moves
// right before it (past the compute op between), the one of 5 stays where it was, and the
// other direction (already in order) is untouched.
// CHECK-LABEL: module attributes {{{.*}}piper.p2p_order = "fifo"
// CHECK-LABEL: func.func @device_0
// CHECK: "comm.send"{{.*}}tag = 0
// CHECK-NEXT: "tdag.add"
// CHECK-NEXT: "comm.recv"(){{.*}}tag = 9
// CHECK-NEXT: "comm.recv"(){{.*}}tag = 5
// CHECK-NEXT: "tdag.add"
// CHECK-NEXT: "comm.send"{{.*}}tag = 1
// CHECK-LABEL: func.func @device_1
// CHECK: "comm.recv"(){{.*}}tag = 0
// CHECK-NEXT: "comm.send"{{.*}}tag = 9
// CHECK-NEXT: "comm.send"{{.*}}tag = 5
// CHECK-NEXT: "comm.recv"(){{.*}}tag = 1
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%x: tensor<4xf32>) {
    %s0 = "comm.send"(%x) {peer = 1 : i64, peers = [1], tag = 0 : i64} : (tensor<4xf32>) -> !comm.token
    %y = "tdag.add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %a, %ta = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 5 : i64} : () -> (tensor<4xf32>, !comm.token)
    %z = "tdag.add"(%a, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %b, %tb = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 9 : i64} : () -> (tensor<4xf32>, !comm.token)
    %s1 = "comm.send"(%z) {peer = 1 : i64, peers = [1], tag = 1 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
  func.func @device_1(%x: tensor<4xf32>) {
    %a, %ta = "comm.recv"() {peer = 0 : i64, peers = [0], tag = 0 : i64} : () -> (tensor<4xf32>, !comm.token)
    %s9 = "comm.send"(%a) {peer = 0 : i64, peers = [0], tag = 9 : i64} : (tensor<4xf32>) -> !comm.token
    %s5 = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 5 : i64} : (tensor<4xf32>) -> !comm.token
    %b, %tb = "comm.recv"() {peer = 0 : i64, peers = [0], tag = 1 : i64} : () -> (tensor<4xf32>, !comm.token)
    return
  }
}

// -----

// Must not fire: receives already in send order, and receives from two senders interleaved
// (only each sender's own order counts) stay exactly where they are.
// CHECK-LABEL: func.func @device_0
// CHECK: "comm.recv"(){{.*}}peer = 1{{.*}}tag = 0
// CHECK-NEXT: "comm.recv"(){{.*}}peer = 2{{.*}}tag = 3
// CHECK-NEXT: "comm.recv"(){{.*}}peer = 1{{.*}}tag = 1
// CHECK-NEXT: "comm.recv"(){{.*}}peer = 2{{.*}}tag = 2
module attributes {piper.devices = 3 : i64} {
  func.func @device_0() {
    %a, %ta = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 0 : i64} : () -> (tensor<4xf32>, !comm.token)
    %d, %td = "comm.recv"() {peer = 2 : i64, peers = [2], tag = 3 : i64} : () -> (tensor<4xf32>, !comm.token)
    %b, %tb = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 1 : i64} : () -> (tensor<4xf32>, !comm.token)
    %c, %tc = "comm.recv"() {peer = 2 : i64, peers = [2], tag = 2 : i64} : () -> (tensor<4xf32>, !comm.token)
    return
  }
  func.func @device_1(%x: tensor<4xf32>) {
    %s0 = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 0 : i64} : (tensor<4xf32>) -> !comm.token
    %s1 = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 1 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
  func.func @device_2(%x: tensor<4xf32>) {
    %s3 = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 3 : i64} : (tensor<4xf32>) -> !comm.token
    %s2 = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 2 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
}

// --piper-verify-plan under piper.p2p_order = "fifo" (what --piper-order-p2p marks): a pair's
// messages must also be received in the order they are sent, as NCCL (no tags) delivers them.
// RUN: piper-opt %s --split-input-file --piper-verify-plan --verify-diagnostics > /dev/null

// Accepted: the receives follow the sends' order; the other direction is ordered on its own.
// (no annotation: any diagnostic here fails the test)
module attributes {piper.devices = 2 : i64, piper.p2p_order = "fifo"} {
  func.func @device_0(%x: tensor<4xf32>, %y: tensor<8xf32>) {
    %s0 = "comm.send"(%x) {peer = 1 : i64, peers = [1], tag = 3 : i64} : (tensor<4xf32>) -> !comm.token
    %v, %t = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 0 : i64} : () -> (tensor<4xf32>, !comm.token)
    %s1 = "comm.send"(%y) {peer = 1 : i64, peers = [1], tag = 1 : i64} : (tensor<8xf32>) -> !comm.token
    return
  }
  func.func @device_1(%x: tensor<4xf32>) {
    %s = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 0 : i64} : (tensor<4xf32>) -> !comm.token
    %v3, %t3 = "comm.recv"() {peer = 0 : i64, peers = [0], tag = 3 : i64} : () -> (tensor<4xf32>, !comm.token)
    %v1, %t1 = "comm.recv"() {peer = 0 : i64, peers = [0], tag = 1 : i64} : () -> (tensor<8xf32>, !comm.token)
    return
  }
}

// -----

// The 1F1B case: device 1 sends tag 9 before tag 5, device 0 receives 5 first. Correct under
// MPI (tags match), refused under fifo: NCCL would hand tag 9's bytes to the receive of 5.
module attributes {piper.devices = 2 : i64, piper.p2p_order = "fifo"} {
  func.func @device_0() {
    // expected-error@+1 {{piper-verify-plan: device 0 receives tag 5 from device 1 first, but device 1 sends it tag 9 before that: without tags (NCCL) the pair's messages arrive in send order; run --piper-order-p2p (piper-compile does for --target cuda)}}
    %a, %ta = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 5 : i64} : () -> (tensor<4xf32>, !comm.token)
    %b, %tb = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 9 : i64} : () -> (tensor<4xf32>, !comm.token)
    return
  }
  func.func @device_1(%x: tensor<4xf32>, %y: tensor<4xf32>) {
    %s9 = "comm.send"(%y) {peer = 0 : i64, peers = [0], tag = 9 : i64} : (tensor<4xf32>) -> !comm.token
    %s5 = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 5 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
}

// -----

// The same plan without the mark is accepted: MPI matches by tag.
module attributes {piper.devices = 2 : i64} {
  func.func @device_0() {
    %a, %ta = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 5 : i64} : () -> (tensor<4xf32>, !comm.token)
    %b, %tb = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 9 : i64} : () -> (tensor<4xf32>, !comm.token)
    return
  }
  func.func @device_1(%x: tensor<4xf32>, %y: tensor<4xf32>) {
    %s9 = "comm.send"(%y) {peer = 0 : i64, peers = [0], tag = 9 : i64} : (tensor<4xf32>) -> !comm.token
    %s5 = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 5 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
}

// -----

// A receive posted while an earlier send of the pair is still unreceived: device 0 posts
// tag 2 while tag 1, sent before it, has not been received.
module attributes {piper.devices = 2 : i64, piper.p2p_order = "fifo"} {
  func.func @device_0() {
    %a, %ta = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 0 : i64} : () -> (tensor<4xf32>, !comm.token)
    // expected-error@+1 {{piper-verify-plan: device 0 receives tag 2 from device 1 first, but device 1 sends it tag 1 before that}}
    %c, %tc = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 2 : i64} : () -> (tensor<4xf32>, !comm.token)
    %b, %tb = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 1 : i64} : () -> (tensor<4xf32>, !comm.token)
    return
  }
  func.func @device_1(%x: tensor<4xf32>) {
    %s0 = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 0 : i64} : (tensor<4xf32>) -> !comm.token
    %s1 = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 1 : i64} : (tensor<4xf32>) -> !comm.token
    %s2 = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 2 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
}

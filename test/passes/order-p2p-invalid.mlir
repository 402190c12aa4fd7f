// --piper-order-p2p refuses a plan whose receive must move earlier than its buffer exists.
// RUN: piper-opt %s --split-input-file --piper-order-p2p --verify-diagnostics -o /dev/null

// A recv_into whose buffer is made after the place its receive must move to: refused.
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%x: tensor<4xf32>) {
    %a, %ta = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 5 : i64} : () -> (tensor<4xf32>, !comm.token)
    %p = "tdag.add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    // expected-error@+1 {{piper-order-p2p: this receive of tag 9 from plan 1 must be posted earlier (its sender sends it before the receive that follows it here), but its buffer is defined after that point; NCCL cannot carry this plan's send/recv (run with --comm mpi)}}
    %tb = "comm.recv_into"(%p) {peer = 1 : i64, peers = [1], tag = 9 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
  func.func @device_1(%x: tensor<4xf32>) {
    %s9 = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 9 : i64} : (tensor<4xf32>) -> !comm.token
    %s5 = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 5 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
}

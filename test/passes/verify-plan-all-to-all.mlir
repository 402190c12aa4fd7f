// --piper-verify-plan on expert-parallel all-to-alls (hand-written plans): every member of the
// group must issue the group's all-to-alls in the same order, with the same sizes.
// RUN: piper-opt %s --split-input-file --piper-verify-plan --verify-diagnostics > /dev/null

// Accepted: both replicas exchange the counts, then the rows, then the expert outputs.
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%c: tensor<4xi32>, %r: tensor<8x4xf32>) {
    %c2, %t1 = "comm.all_to_all"(%c) {group = [0, 1]} : (tensor<4xi32>) -> (tensor<4xi32>, !comm.token)
    %r2, %t2 = "comm.all_to_all"(%r) {group = [0, 1]} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, !comm.token)
    %o2, %t3 = "comm.all_to_all"(%r2) {group = [0, 1]} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, !comm.token)
    return
  }
  func.func @device_1(%c: tensor<4xi32>, %r: tensor<8x4xf32>) {
    %c2, %t1 = "comm.all_to_all"(%c) {group = [0, 1]} : (tensor<4xi32>) -> (tensor<4xi32>, !comm.token)
    %r2, %t2 = "comm.all_to_all"(%r) {group = [0, 1]} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, !comm.token)
    %o2, %t3 = "comm.all_to_all"(%r2) {group = [0, 1]} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, !comm.token)
    return
  }
}

// -----

// One replica exchanges the rows before the counts: the two all-to-alls would pair up with
// different sizes.
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%c: tensor<4xi32>, %r: tensor<8x4xf32>) {
    // expected-error@+1 {{piper-verify-plan: devices 0 and 1 reach different collectives on the same group at the same point (a hang or a wrong result)}}
    %c2, %t1 = "comm.all_to_all"(%c) {group = [0, 1]} : (tensor<4xi32>) -> (tensor<4xi32>, !comm.token)
    %r2, %t2 = "comm.all_to_all"(%r) {group = [0, 1]} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, !comm.token)
    return
  }
  func.func @device_1(%c: tensor<4xi32>, %r: tensor<8x4xf32>) {
    // expected-note@+1 {{piper-verify-plan: device 1 reaches this one there}}
    %r2, %t2 = "comm.all_to_all"(%r) {group = [0, 1]} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, !comm.token)
    %c2, %t1 = "comm.all_to_all"(%c) {group = [0, 1]} : (tensor<4xi32>) -> (tensor<4xi32>, !comm.token)
    return
  }
}

// -----

// An all-to-all against an all-reduce of the same size on the same group: not the same
// collective.
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%r: tensor<8x4xf32>) {
    // expected-error@+1 {{piper-verify-plan: devices 0 and 1 reach different collectives on the same group at the same point (a hang or a wrong result)}}
    %r2, %t2 = "comm.all_to_all"(%r) {group = [0, 1]} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, !comm.token)
    return
  }
  func.func @device_1(%r: tensor<8x4xf32>) {
    // expected-note@+1 {{piper-verify-plan: device 1 reaches this one there}}
    %r2, %t2 = "comm.all_reduce"(%r) {group = [0, 1]} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, !comm.token)
    return
  }
}

// -----

// One replica skips the combine all-to-all: device 0 waits in it forever, while device 1 goes
// on to the step's gradient-norm all-reduce and waits there for device 0.
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%r: tensor<8x4xf32>) {
    %r2, %t2 = "comm.all_to_all"(%r) {group = [0, 1]} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, !comm.token)
    // expected-error@+1 {{piper-verify-plan: the plan deadlocks: device 0 waits forever at comm.all_to_all}}
    %o2, %t3 = "comm.all_to_all"(%r2) {group = [0, 1]} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, !comm.token)
    return
  }
  // expected-error@+1 {{piper-verify-plan: the plan deadlocks: device 1 waits forever at the gradient-norm all-reduce before its first update}}
  func.func @device_1(%r: tensor<8x4xf32>) {
    %r2, %t2 = "comm.all_to_all"(%r) {group = [0, 1]} : (tensor<8x4xf32>) -> (tensor<8x4xf32>, !comm.token)
    return
  }
}

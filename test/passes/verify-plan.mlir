// --piper-verify-plan on hand-written per-device plans: it must accept a plan whose sends,
// receives and collectives line up, and reject each way a plan can hang or go wrong.
// RUN: piper-opt %s --split-input-file --piper-verify-plan --verify-diagnostics > /dev/null

// Accepted: device 0 sends then all-reduces; device 1 receives then all-reduces.
// (no annotation: any diagnostic here fails the test)
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%x: tensor<4xf32>, %y: tensor<8xf32>) {
    %t = "comm.send"(%x) {peer = 1 : i64, peers = [1], tag = 0 : i64} : (tensor<4xf32>) -> !comm.token
    %r, %rt = "comm.all_reduce"(%y) {group = [0, 1]} : (tensor<8xf32>) -> (tensor<8xf32>, !comm.token)
    return
  }
  func.func @device_1(%y: tensor<8xf32>) {
    %v, %t = "comm.recv"() {peer = 0 : i64, peers = [0], tag = 0 : i64} : () -> (tensor<4xf32>, !comm.token)
    %r, %rt = "comm.all_reduce"(%y) {group = [0, 1]} : (tensor<8xf32>) -> (tensor<8xf32>, !comm.token)
    return
  }
}

// -----

// Replicas issue their all-reduces in different orders: caught at the first pair.
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%a: tensor<4xf32>, %b: tensor<8xf32>) {
    // expected-error@+1 {{piper-verify-plan: devices 0 and 1 reach different collectives on the same group at the same point (a hang or a wrong result)}}
    %r1, %t1 = "comm.all_reduce"(%a) {group = [0, 1]} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    %r2, %t2 = "comm.all_reduce"(%b) {group = [0, 1]} : (tensor<8xf32>) -> (tensor<8xf32>, !comm.token)
    return
  }
  func.func @device_1(%a: tensor<4xf32>, %b: tensor<8xf32>) {
    // expected-note@+1 {{piper-verify-plan: device 1 reaches this one there}}
    %r2, %t2 = "comm.all_reduce"(%b) {group = [0, 1]} : (tensor<8xf32>) -> (tensor<8xf32>, !comm.token)
    %r1, %t1 = "comm.all_reduce"(%a) {group = [0, 1]} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    return
  }
}

// -----

// Both devices receive before they send: the classic deadlock.
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%x: tensor<4xf32>) {
    // expected-error@+1 {{piper-verify-plan: the plan deadlocks: device 0 waits forever at comm.recv (tag 1, peer 1)}}
    %v, %t = "comm.recv"() {peer = 1 : i64, peers = [1], tag = 1 : i64} : () -> (tensor<4xf32>, !comm.token)
    %s = "comm.send"(%x) {peer = 1 : i64, peers = [1], tag = 0 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
  func.func @device_1(%x: tensor<4xf32>) {
    // expected-error@+1 {{piper-verify-plan: the plan deadlocks: device 1 waits forever at comm.recv (tag 0, peer 0)}}
    %v, %t = "comm.recv"() {peer = 0 : i64, peers = [0], tag = 0 : i64} : () -> (tensor<4xf32>, !comm.token)
    %s = "comm.send"(%x) {peer = 0 : i64, peers = [0], tag = 1 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
}

// -----

// Sizes disagree, and a send nobody receives.
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%x: tensor<4xf32>) {
    %s = "comm.send"(%x) {peer = 1 : i64, peers = [1], tag = 0 : i64} : (tensor<4xf32>) -> !comm.token
    %s2 = "comm.send"(%x) {peer = 1 : i64, peers = [1], tag = 5 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
  func.func @device_1() {
    // expected-error@+1 {{piper-verify-plan: device 1 receives 8 elements with tag 0 but device 0 sends 4}}
    %v, %t = "comm.recv"() {peer = 0 : i64, peers = [0], tag = 0 : i64} : () -> (tensor<8xf32>, !comm.token)
    return
  }
}

// -----

// expected-error@+1 {{piper-verify-plan: device 0 sends tag 5 to device 1, which never receives it}}
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%x: tensor<4xf32>) {
    %s2 = "comm.send"(%x) {peer = 1 : i64, peers = [1], tag = 5 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
  func.func @device_1() {
    return
  }
}

// -----

// The gradient-norm all-reduce (a barrier of the whole world before each device's first
// update-pass op) would hang: device 1 receives, outside the update pass, what device 0 sends
// only in its update pass, i.e. after its norm.
module attributes {piper.devices = 2 : i64} {
  // expected-error@+1 {{piper-verify-plan: the plan deadlocks: device 0 waits forever at the gradient-norm all-reduce before its first update}}
  func.func @device_0(%x: tensor<4xf32>) {
    %t = "comm.send"(%x) {pass = "UPD", peer = 1 : i64, peers = [1], tag = 3 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
  func.func @device_1() {
    // expected-error@+1 {{piper-verify-plan: the plan deadlocks: device 1 waits forever at comm.recv (tag 3, peer 0)}}
    %v, %rt = "comm.recv"() {pass = "B", peer = 0 : i64, peers = [0], tag = 3 : i64} : () -> (tensor<4xf32>, !comm.token)
    return
  }
}

// -----

// The evaluation step (forward ops and forward transfers only) is proven on its own: here the
// whole step is fine, but device 1's forward recv waits for a backward send the evaluation
// step does not run.
// expected-error@+1 {{piper-verify-plan: (the errors above are of the evaluation step}}
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%x: tensor<4xf32>) {
    %t = "comm.send"(%x) {pass = "B", peer = 1 : i64, peers = [1], tag = 5 : i64} : (tensor<4xf32>) -> !comm.token
    return
  }
  func.func @device_1() {
    // expected-error@+1 {{piper-verify-plan: the plan deadlocks: device 1 waits forever at comm.recv (tag 5, peer 0)}}
    %v, %rt = "comm.recv"() {peer = 0 : i64, peers = [0], tag = 5 : i64} : () -> (tensor<4xf32>, !comm.token)
    return
  }
}

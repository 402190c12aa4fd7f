// --piper-verify-plan on context parallelism's ring attention (hand-written plans): a ring op
// is a collective of its group, so every member must issue the group's ring ops (and its other
// collectives) in the same order with the same sizes; one that skips a ring op hangs the rest.
// RUN: piper-opt %s --split-input-file --piper-verify-plan --verify-diagnostics > /dev/null

// Accepted: both members run the forward ring, then the backward ring, then the gradient
// all-reduce of the group.
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%qkv: tensor<1x8x24xf32>, %dy: tensor<1x8x8xf32>) {
    %o, %l, %t1 = "comm.ring_attention"(%qkv) {group = [0, 1], tag = 100 : i64, heads = 2 : i64} : (tensor<1x8x24xf32>) -> (tensor<1x8x8xf32>, tensor<1x2x8xf32>, !comm.token)
    %d, %t2 = "comm.ring_attention_grad"(%dy, %o, %qkv, %l) {group = [0, 1], tag = 102 : i64, heads = 2 : i64} : (tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8x24xf32>, tensor<1x2x8xf32>) -> (tensor<1x8x24xf32>, !comm.token)
    %s, %t3 = "comm.all_reduce"(%d) {group = [0, 1]} : (tensor<1x8x24xf32>) -> (tensor<1x8x24xf32>, !comm.token)
    return
  }
  func.func @device_1(%qkv: tensor<1x8x24xf32>, %dy: tensor<1x8x8xf32>) {
    %o, %l, %t1 = "comm.ring_attention"(%qkv) {group = [0, 1], tag = 100 : i64, heads = 2 : i64} : (tensor<1x8x24xf32>) -> (tensor<1x8x8xf32>, tensor<1x2x8xf32>, !comm.token)
    %d, %t2 = "comm.ring_attention_grad"(%dy, %o, %qkv, %l) {group = [0, 1], tag = 102 : i64, heads = 2 : i64} : (tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8x24xf32>, tensor<1x2x8xf32>) -> (tensor<1x8x24xf32>, !comm.token)
    %s, %t3 = "comm.all_reduce"(%d) {group = [0, 1]} : (tensor<1x8x24xf32>) -> (tensor<1x8x24xf32>, !comm.token)
    return
  }
}

// -----

// One member reduces before its ring: the two would meet at different collectives of the group.
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%q: tensor<1x8x8xf32>, %k: tensor<1x8x4xf32>) {
    // expected-error@+1 {{piper-verify-plan: devices 0 and 1 reach different collectives on the same group at the same point (a hang or a wrong result)}}
    %o, %l, %t1 = "comm.ring_gqa_attention"(%q, %k, %k) {group = [0, 1], tag = 100 : i64, heads = 2 : i64, kv_heads = 1 : i64} : (tensor<1x8x8xf32>, tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> (tensor<1x8x8xf32>, tensor<1x2x8xf32>, !comm.token)
    %s, %t3 = "comm.all_reduce"(%q) {group = [0, 1]} : (tensor<1x8x8xf32>) -> (tensor<1x8x8xf32>, !comm.token)
    return
  }
  func.func @device_1(%q: tensor<1x8x8xf32>, %k: tensor<1x8x4xf32>) {
    // expected-note@+1 {{piper-verify-plan: device 1 reaches this one there}}
    %s, %t3 = "comm.all_reduce"(%q) {group = [0, 1]} : (tensor<1x8x8xf32>) -> (tensor<1x8x8xf32>, !comm.token)
    %o, %l, %t1 = "comm.ring_gqa_attention"(%q, %k, %k) {group = [0, 1], tag = 100 : i64, heads = 2 : i64, kv_heads = 1 : i64} : (tensor<1x8x8xf32>, tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> (tensor<1x8x8xf32>, tensor<1x2x8xf32>, !comm.token)
    return
  }
}

// -----

// One member skips its backward ring: the other waits in it forever, and the first waits at
// the step's gradient-norm all-reduce.
module attributes {piper.devices = 2 : i64} {
  func.func @device_0(%qkv: tensor<1x8x24xf32>, %dy: tensor<1x8x8xf32>) {
    %o, %l, %t1 = "comm.ring_attention"(%qkv) {group = [0, 1], tag = 100 : i64, heads = 2 : i64} : (tensor<1x8x24xf32>) -> (tensor<1x8x8xf32>, tensor<1x2x8xf32>, !comm.token)
    // expected-error@+1 {{piper-verify-plan: the plan deadlocks: device 0 waits forever at comm.ring_attention_grad}}
    %d, %t2 = "comm.ring_attention_grad"(%dy, %o, %qkv, %l) {group = [0, 1], tag = 102 : i64, heads = 2 : i64} : (tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8x24xf32>, tensor<1x2x8xf32>) -> (tensor<1x8x24xf32>, !comm.token)
    return
  }
  // expected-error@+1 {{piper-verify-plan: the plan deadlocks: device 1 waits forever at the gradient-norm all-reduce before its first update}}
  func.func @device_1(%qkv: tensor<1x8x24xf32>, %dy: tensor<1x8x8xf32>) {
    %o, %l, %t1 = "comm.ring_attention"(%qkv) {group = [0, 1], tag = 100 : i64, heads = 2 : i64} : (tensor<1x8x24xf32>) -> (tensor<1x8x8xf32>, tensor<1x2x8xf32>, !comm.token)
    return
  }
}

// --piper-verify-plan on plans per role with tensor-parallel group families (extract.c:
// group_stride S: replica k's group is the listed one + k * S). Roles 0 and 1 are devices
// [0, 2] and [1, 3] (stride 2, R = 2), a TP2 x DP2 layout.
// RUN: not piper-opt %s --split-input-file --piper-verify-plan 2>&1 | FileCheck %s

// A family whose stride is not its roles' (3, not 2): replica 1's group would be [3, 4].
// CHECK: verify-plan-group-family.mlir:[[@LINE+4]]:12: error: piper-verify-plan: in a plan per role, a collective's group must be whole roles, or with group_stride S replica 0 of roles of stride S (a group family), in ascending order
module attributes {piper.devices = 4 : i64, piper.roles = 2 : i64} {
  func.func @role_0() attributes {piper.role = [0, 2, 2]} {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    %r:2 = "comm.all_reduce"(%p) {group = [0, 1], group_stride = 3 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    return
  }
  func.func @role_1() attributes {piper.role = [1, 2, 2]} {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    %r:2 = "comm.all_reduce"(%p) {group = [0, 1], group_stride = 3 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    return
  }
}

// -----

// Replica 0's TP group without group_stride: a plain group is the same for every replica, so
// [0, 1] would pair replica 1 (devices 2, 3) with replica 0: not whole roles.
// CHECK: verify-plan-group-family.mlir:[[@LINE+4]]:12: error: piper-verify-plan: in a plan per role, a collective's group must be whole roles
module attributes {piper.devices = 4 : i64, piper.roles = 2 : i64} {
  func.func @role_0() attributes {piper.role = [0, 2, 2]} {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    %r:2 = "comm.all_reduce"(%p) {group = [0, 1]} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    return
  }
  func.func @role_1() attributes {piper.role = [1, 2, 2]} {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    %r:2 = "comm.all_reduce"(%p) {group = [0, 1]} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    return
  }
}

// -----

// A family collective waits for replica 0 of each of its roles: role 1 never reaches it (it
// runs a data-parallel all-reduce over its own role instead), so role 0 waits forever.
// CHECK: verify-plan-group-family.mlir:[[@LINE+5]]:12: error: piper-verify-plan: the plan deadlocks: device 0 waits forever at comm.all_reduce
// CHECK: error: piper-verify-plan: the plan deadlocks: device 1 waits forever at the gradient-norm all-reduce
module attributes {piper.devices = 4 : i64, piper.roles = 2 : i64} {
  func.func @role_0() attributes {piper.role = [0, 2, 2]} {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    %r:2 = "comm.all_reduce"(%p) {group = [0, 1], group_stride = 2 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    return
  }
  func.func @role_1() attributes {piper.role = [1, 2, 2]} {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    %r:2 = "comm.all_reduce"(%p) {group = [1, 3]} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    return
  }
}

// -----

// The same family on both roles, then each role's data-parallel reduction: hang-free (no
// diagnostic; the last split checks that nothing follows).
module attributes {piper.devices = 4 : i64, piper.roles = 2 : i64} {
  func.func @role_0() attributes {piper.role = [0, 2, 2]} {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    %r:2 = "comm.all_reduce"(%p) {group = [0, 1], group_stride = 2 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    %d:2 = "comm.all_reduce"(%r#0) {group = [0, 2]} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    return
  }
  func.func @role_1() attributes {piper.role = [1, 2, 2]} {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    %r:2 = "comm.all_reduce"(%p) {group = [0, 1], group_stride = 2 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    %d:2 = "comm.all_reduce"(%r#0) {group = [1, 3]} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    return
  }
}
// CHECK-NOT: error

// -----

// A role range with stride 0 is refused (the group checks divide by the stride), and a role
// without a plan function (role 1 here) holds no device: its group member is no role's.
// CHECK: verify-plan-group-family.mlir:[[@LINE+2]]:3: error: piper-verify-plan: a role's plan needs piper.role = [start, stride, count] (integers, stride and count at least 1)
module attributes {piper.devices = 4 : i64, piper.roles = 2 : i64} {
  func.func @role_0() attributes {piper.role = [0, 0, 2]} {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    %r:2 = "comm.all_reduce"(%p) {group = [0, 1], group_stride = 2 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    return
  }
}

// -----

// CHECK: verify-plan-group-family.mlir:[[@LINE+4]]:12: error: piper-verify-plan: in a plan per role, a collective's group must be whole roles
module attributes {piper.devices = 4 : i64, piper.roles = 2 : i64} {
  func.func @role_0() attributes {piper.role = [0, 2, 2]} {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    %r:2 = "comm.all_reduce"(%p) {group = [0, 1], group_stride = 2 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
    return
  }
}

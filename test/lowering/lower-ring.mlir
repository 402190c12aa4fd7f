// --piper-lower-to-llvm on context parallelism's ring attention ops: each becomes one blocking
// call of its runtime kernel (runtime/cp_attention.c) with the sizes read from the types, the
// group's communicator id and the tag; its token stands for nothing (no prt_wait follows).
// RUN: piper-opt %s --piper-lower-to-llvm | FileCheck %s
// The calls resolve against libpiper_rt: the plan links into a training binary.
// RUN: piper-compile %s -o %t.train && test -x %t.train

// Device 0, GPT's packed qkv B 1, Tl 8, C 8, H 2, group [0, 1] (id 0), tags 100 and 102.
// CHECK-LABEL: llvm.func @piper_step_dev0
// CHECK: %[[B:.*]] = llvm.mlir.constant(1 : i64)
// CHECK-NEXT: %[[T:.*]] = llvm.mlir.constant(8 : i64)
// CHECK-NEXT: %[[C:.*]] = llvm.mlir.constant(8 : i64)
// CHECK-NEXT: %[[H:.*]] = llvm.mlir.constant(2 : i64)
// CHECK-NEXT: %[[G:.*]] = llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[TAG:.*]] = llvm.mlir.constant(100 : i64)
// CHECK-NEXT: llvm.call @prt_ring_attention_fwd(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %[[B]], %[[T]], %[[C]], %[[H]], %[[G]], %[[TAG]]) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
// CHECK-NOT: prt_wait
// CHECK: llvm.mlir.constant(102 : i64)
// CHECK-NEXT: llvm.call @prt_ring_attention_bwd(%arg0, {{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64) -> ()
// CHECK-NOT: prt_wait
// CHECK: llvm.return
// Device 1, grouped-query B 2, Tl 6, H 2 over KV 1, D 4: the forward, then the backward (tag 106).
// CHECK-LABEL: llvm.func @piper_step_dev1
// CHECK: %[[B1:.*]] = llvm.mlir.constant(2 : i64)
// CHECK-NEXT: %[[T1:.*]] = llvm.mlir.constant(6 : i64)
// CHECK-NEXT: %[[H1:.*]] = llvm.mlir.constant(2 : i64)
// CHECK-NEXT: %[[KV1:.*]] = llvm.mlir.constant(1 : i64)
// CHECK-NEXT: %[[D1:.*]] = llvm.mlir.constant(4 : i64)
// CHECK-NEXT: %[[G1:.*]] = llvm.mlir.constant(0 : i64)
// CHECK-NEXT: %[[TAG1:.*]] = llvm.mlir.constant(104 : i64)
// CHECK-NEXT: llvm.call @prt_ring_gqa_attention_fwd(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[B1]], %[[T1]], %[[H1]], %[[KV1]], %[[D1]], %[[G1]], %[[TAG1]])
// CHECK: llvm.mlir.constant(106 : i64)
// CHECK-NEXT: llvm.call @prt_ring_gqa_attention_bwd(%arg0, {{.*}}) : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64, i64, i64, i64, i64) -> ()
// The group is declared in setup like any collective's.
// CHECK-LABEL: llvm.func @piper_setup(
// CHECK: llvm.call @prt_declare_group(
module attributes {piper.devices = 2 : i64, piper.global_batch = 1 : i64} {
  func.func @device_0() {
    %qkv = "tdag.param"() {init = "normal", name = "qkv"} : () -> tensor<1x8x24xf32>
    %o, %l, %t = "comm.ring_attention"(%qkv) {group = [0, 1], tag = 100 : i64, heads = 2 : i64} : (tensor<1x8x24xf32>) -> (tensor<1x8x8xf32>, tensor<1x2x8xf32>, !comm.token)
    "comm.wait"(%t) : (!comm.token) -> ()
    %d, %t2 = "comm.ring_attention_grad"(%o, %o, %qkv, %l) {group = [0, 1], tag = 102 : i64, heads = 2 : i64} : (tensor<1x8x8xf32>, tensor<1x8x8xf32>, tensor<1x8x24xf32>, tensor<1x2x8xf32>) -> (tensor<1x8x24xf32>, !comm.token)
    "comm.wait"(%t2) : (!comm.token) -> ()
    return
  }
  func.func @device_1() {
    %q = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<2x6x8xf32>
    %k = "tdag.param"() {init = "normal", name = "k"} : () -> tensor<2x6x4xf32>
    %o, %l, %t = "comm.ring_gqa_attention"(%q, %k, %k) {group = [0, 1], tag = 104 : i64, heads = 2 : i64, kv_heads = 1 : i64} : (tensor<2x6x8xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>) -> (tensor<2x6x8xf32>, tensor<2x2x6xf32>, !comm.token)
    "comm.wait"(%t) : (!comm.token) -> ()
    %dq, %dk, %dv, %t2 = "comm.ring_gqa_attention_grad"(%o, %o, %q, %k, %k, %l) {group = [0, 1], tag = 106 : i64, heads = 2 : i64, kv_heads = 1 : i64} : (tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>, tensor<2x2x6xf32>) -> (tensor<2x6x8xf32>, tensor<2x6x4xf32>, tensor<2x6x4xf32>, !comm.token)
    "comm.wait"(%t2) : (!comm.token) -> ()
    return
  }
}

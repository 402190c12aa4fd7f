// comm and sched ops parse, verify and round-trip.
// RUN: piper-opt %s | piper-opt | FileCheck %s

// CHECK-LABEL: func.func @comm
func.func @comm(%x: tensor<4xf32>) {
  // CHECK: "comm.send"(%{{.*}}) {devices = [0, 2], peers = [1, 3], stream = "pp", tag = 7 : i64} : (tensor<4xf32>) -> !comm.token
  %t0 = "comm.send"(%x) {devices = [0, 2], peers = [1, 3], tag = 7 : i64, stream = "pp"} : (tensor<4xf32>) -> !comm.token
  // CHECK: "comm.recv"() {peers = [1], tag = 8 : i64} : () -> (tensor<4xf32>, !comm.token)
  %y, %t1 = "comm.recv"() {peers = [1], tag = 8 : i64} : () -> (tensor<4xf32>, !comm.token)
  // CHECK: "comm.recv_into"(%{{.*}}) {peers = [0], tag = 9 : i64} : (tensor<4xf32>) -> !comm.token
  %t6 = "comm.recv_into"(%x) {peers = [0], tag = 9 : i64} : (tensor<4xf32>) -> !comm.token
  // CHECK: "comm.all_reduce"(%{{.*}}) {group = [0, 1]}
  %s, %t2 = "comm.all_reduce"(%y) {group = [0, 1]} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
  // CHECK: "comm.reduce_scatter"
  %rs, %t3 = "comm.reduce_scatter"(%s) {group = [0, 1]} : (tensor<4xf32>) -> (tensor<2xf32>, !comm.token)
  // CHECK: "comm.all_gather"
  %ag, %t4 = "comm.all_gather"(%rs) {group = [0, 1]} : (tensor<2xf32>) -> (tensor<4xf32>, !comm.token)
  // CHECK: "comm.all_to_all"
  %aa, %t5 = "comm.all_to_all"(%ag) {group = [0, 1]} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
  // CHECK: "comm.wait"(%{{.*}}, %{{.*}}) : (!comm.token, !comm.token) -> ()
  "comm.wait"(%t0, %t1) : (!comm.token, !comm.token) -> ()
  return
}

// CHECK-LABEL: func.func @strategy
func.func @strategy() {
  // CHECK: "sched.split"() {dim_name = "mb", filter = {PP = "*"}, num_microbatches = 4 : i64}
  "sched.split"() {filter = {PP = "*"}, dim_name = "mb", num_microbatches = 4 : i64} : () -> ()
  // CHECK: "sched.place"() {devices = [0, 1], filter = {PP = 0 : i64}}
  "sched.place"() {filter = {PP = 0 : i64}, devices = [0, 1]} : () -> ()
  // CHECK: "sched.replicate"() {devices = [0, 1], filter = {PP = 0 : i64}, reduce_stream = "dp", shard_grads}
  "sched.replicate"() {filter = {PP = 0 : i64}, devices = [0, 1], reduce_stream = "dp", shard_grads} : () -> ()
  // CHECK: "sched.shard"
  "sched.shard"() {filter = {EP = 0 : i64}, devices = [0, 1]} : () -> ()
  // CHECK: "sched.order"() {filters = {{\[\[}}{PASS = "F", PP = 0 : i64}], [{PASS = "B", PP = 0 : i64}]]}
  "sched.order"() {filters = [[{PP = 0 : i64, PASS = "F"}], [{PP = 0 : i64, PASS = "B"}]]} : () -> ()
  return
}

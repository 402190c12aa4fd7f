// Malformed tdag IR is rejected with a diagnostic at the offending op's line and column.
// RUN: piper-opt %s --split-input-file --verify-diagnostics > /dev/null

func.func @unknown_op() {
  // expected-error@+1 {{tdag.frobnicate}}
  %0 = "tdag.frobnicate"() : () -> tensor<2xf32>
  return
}

// -----

func.func @linear_weight_shape(%x: tensor<2x3x4xf32>, %w: tensor<5x6xf32>, %b: tensor<5xf32>) {
  // expected-error@+1 {{weight must be (N,K) with K = 4 from x tensor<2x3x4xf32>, got tensor<5x6xf32>}}
  %0 = "tdag.linear"(%x, %w, %b) : (tensor<2x3x4xf32>, tensor<5x6xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  return
}

// -----

func.func @linear_result_shape(%x: tensor<2x4xf32>, %w: tensor<5x4xf32>, %b: tensor<5xf32>) {
  // expected-error@+1 {{result must be x's shape with last dim 5, got tensor<2x6xf32>}}
  %0 = "tdag.linear"(%x, %w, %b) : (tensor<2x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @linear_missing_bias(%x: tensor<2x4xf32>, %w: tensor<5x4xf32>) {
  // expected-error@+1 {{op expects exactly 3 operands, but got 2}}
  %0 = "tdag.linear"(%x, %w) : (tensor<2x4xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @heads_do_not_divide(%qkv: tensor<1x2x12xf32>) {
  // expected-error@+1 {{heads = 3 must be positive and divide C = 4}}
  %out, %p = "tdag.attention"(%qkv) {heads = 3 : i64} : (tensor<1x2x12xf32>) -> (tensor<1x2x4xf32>, tensor<1x3x2xf32>)
  return
}

// -----

// the saved result is one log-sum-exp per query row (B,H,T), not the probabilities (B,H,T,T)
func.func @attention_probs_not_lse(%qkv: tensor<1x2x12xf32>) {
  // expected-error@+1 {{expects out (B,T,C) and lse (B,H,T) for qkv tensor<1x2x12xf32>, got tensor<1x2x4xf32> and tensor<1x2x2x2xf32>}}
  %out, %p = "tdag.attention"(%qkv) {heads = 2 : i64} : (tensor<1x2x12xf32>) -> (tensor<1x2x4xf32>, tensor<1x2x2x2xf32>)
  return
}

// -----

// the backward's out (the forward's) and dout must have one shape
func.func @attention_grad_out_shape(%qkv: tensor<1x2x12xf32>, %dout: tensor<1x2x4xf32>, %out: tensor<1x2x8xf32>, %lse: tensor<1x2x2xf32>) {
  // expected-error@+1 {{expects out (B,T,C) and lse (B,H,T) for qkv tensor<1x2x12xf32>, got tensor<1x2x8xf32> and tensor<1x2x2xf32>}}
  %d = "tdag.attention_grad"(%dout, %qkv, %out, %lse) {heads = 2 : i64} : (tensor<1x2x4xf32>, tensor<1x2x12xf32>, tensor<1x2x8xf32>, tensor<1x2x2xf32>) -> tensor<1x2x12xf32>
  return
}

// -----

func.func @attention_grad_dout_shape(%qkv: tensor<1x2x12xf32>, %dout: tensor<1x3x4xf32>, %out: tensor<1x2x4xf32>, %lse: tensor<1x2x2xf32>) {
  // expected-error@+1 {{dout tensor<1x3x4xf32> must have out's shape tensor<1x2x4xf32>}}
  %d = "tdag.attention_grad"(%dout, %qkv, %out, %lse) {heads = 2 : i64} : (tensor<1x3x4xf32>, tensor<1x2x12xf32>, tensor<1x2x4xf32>, tensor<1x2x2xf32>) -> tensor<1x2x12xf32>
  return
}

// -----

func.func @bad_init() {
  // expected-error@+1 {{init must be "normal", "zeros" or "ones", got "uniform"}}
  %0 = "tdag.param"() {init = "uniform", name = "w"} : () -> tensor<4xf32>
  return
}

// -----

func.func @param_without_name() {
  // expected-error@+1 {{name}}
  %0 = "tdag.param"() {init = "zeros"} : () -> tensor<4xf32>
  return
}

// -----

func.func @float_tokens() {
  // expected-error@+1 {{result #0 must be a statically shaped tensor of i32, got tensor<1x2xf32>}}
  %0 = "tdag.input"() {name = "tokens"} : () -> tensor<1x2xf32>
  return
}

// -----

func.func @dynamic_shape(%x: tensor<?x4xf32>) {
  // expected-error@+1 {{operand #0 must be a statically shaped tensor of f32, got tensor<?x4xf32>}}
  %0 = "tdag.gelu"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @float_targets(%l: tensor<1x2x8xf32>, %t: tensor<1x2xf32>) {
  // expected-error@+1 {{operand #1 must be a statically shaped tensor of i32, got tensor<1x2xf32>}}
  %loss, %p = "tdag.cross_entropy"(%l, %t) : (tensor<1x2x8xf32>, tensor<1x2xf32>) -> (tensor<f32>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @adamw_shapes(%g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<5xf32>) {
  %p = "tdag.param"() {init = "zeros", name = "b"} : () -> tensor<4xf32>
  // expected-error@+1 {{operand #3 tensor<5xf32> must have the parameter's shape tensor<4xf32>}}
  "tdag.adamw"(%p, %g, %m, %v) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, decay = 0 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<5xf32>) -> ()
  return
}

// -----

// ZeRO: 3 shards of a 10-element parameter are 4 elements each (ceil(10/3)).
func.func @adamw_bad_shards(%g: tensor<10xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) {
  %p = "tdag.param"() {init = "zeros", name = "b"} : () -> tensor<10xf32>
  // expected-error@+1 {{with 3 shards of a 10-element parameter the moments must be (4) and the gradient 10 or 4 elements}}
  "tdag.adamw"(%p, %g, %m, %v) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, decay = 0 : i64, shards = 3 : i64} : (tensor<10xf32>, tensor<10xf32>, tensor<3xf32>, tensor<3xf32>) -> ()
  return
}

// -----

func.func @adamw_not_a_param(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) {
  // expected-error@+1 {{the updated operand must be a tdag.param}}
  "tdag.adamw"(%p, %g, %m, %v) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, decay = 0 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
  return
}

// -----

func.func @comm_group_not_array(%x: tensor<4xf32>) {
  // expected-error@+1 {{'3 : i64' does not satisfy the constraint}}
  %s, %t = "comm.all_reduce"(%x) {group = 3 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
  return
}

// -----

// The lowering declares a moment by the update that reads it: one with no tdag.adamw user
// once made it dereference NULL.
func.func @adam_state_unused() {
  // expected-error@+1 {{an AdamW moment (slot "exp_avg") must be used exactly once, as operand #2 of a tdag.adamw}}
  %m = "tdag.adam_state"() {param = "p", slot = "exp_avg", shards = 2 : i64, shard = 0 : i64} : () -> tensor<2xf32>
  return
}

// -----

func.func @adam_state_wrong_operand(%g: tensor<4xf32>) {
  %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
  // expected-error@+1 {{an AdamW moment (slot "exp_avg_sq") must be used exactly once, as operand #3 of a tdag.adamw}}
  %m = "tdag.adam_state"() {param = "p", slot = "exp_avg_sq"} : () -> tensor<4xf32>
  "tdag.adamw"(%p, %g, %m, %m) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, decay = 0 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
  return
}

// -----

func.func @adam_state_bad_slot() {
  // expected-error@+1 {{slot must be "exp_avg" or "exp_avg_sq", got "momentum"}}
  %m = "tdag.adam_state"() {param = "p", slot = "momentum"} : () -> tensor<4xf32>
  return
}

// -----

// shards = 0 once divided by zero in the memory plan; shard must name one of the shards.
func.func @zero_shards() {
  // expected-error@+1 {{shards must be an integer in [1, 1048576]}}
  %p = "tdag.param"() {init = "normal", name = "p", shards = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----

func.func @shard_out_of_range() {
  // expected-error@+1 {{shard must be an integer in [0, 1]}}
  %p = "tdag.param"() {init = "normal", name = "p", shards = 2 : i64, shard = 2 : i64} : () -> tensor<4xf32>
  return
}

// -----

// Element counts and byte sizes are int64 products of the dims: one that overflows is refused
// (it once wrapped to a small or negative size in the memory plan).
func.func @numel_overflows() {
  // expected-error@+1 {{result #0: tensor<4294967296x4294967296xf32> has more elements or bytes than int64 can count}}
  %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4294967296x4294967296xf32>
  return
}

// -----

func.func @bytes_overflow() {
  // expected-error@+1 {{result #0: tensor<4611686018427387904xf32> has more elements or bytes than int64 can count}}
  %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4611686018427387904xf32>
  return
}

// -----

func.func @comm_numel_overflows(%p: tensor<4294967296x4294967296xf32>) {
  // expected-error@+1 {{operand #0: tensor<4294967296x4294967296xf32> has more elements or bytes than int64 can count}}
  %t = "comm.send"(%p) {peers = [1], tag = 0 : i64} : (tensor<4294967296x4294967296xf32>) -> !comm.token
  return
}

// -----

// Device ids index per-device tables (--piper-print-dag once read outside its colour array for
// a negative one).
func.func @negative_device() {
  // expected-error@+1 {{devices must be a non-empty list of device ids in [0, 1048575]}}
  %p = "tdag.param"() {init = "normal", name = "p", devices = [-1]} : () -> tensor<4xf32>
  return
}

// -----

func.func @group_not_ids(%p: tensor<4xf32>) {
  // expected-error@+1 {{group must be a non-empty list of device ids in [0, 1048575]}}
  %r, %t = "comm.all_reduce"(%p) {group = [0, "one"]} : (tensor<4xf32>) -> (tensor<4xf32>, !comm.token)
  return
}

// -----

// A hand-written strategy's filters are checked like the JSON importer's: a tag value that is
// not an index or "*" once crashed the order pass, which read it as an integer.
// expected-error@+1 {{filters must be a list of lists of filters; a filter maps tag names to an integer index >= 0 or "*", and PASS to "F", "B", "BI" or "BW"}}
"sched.order"() {filters = [[{PP = 0 : i64}], [{PP = 1.5 : f64}]]} : () -> ()

// -----

// expected-error@+1 {{filter: a filter maps tag names to an integer index >= 0 or "*", and PASS to "F", "B", "BI" or "BW"}}
"sched.place"() {filter = {PP = 0 : i64, PASS = "X"}, devices = [0]} : () -> ()

// -----

// expected-error@+1 {{devices must be a non-empty list of device ids in [0, 1048575]}}
"sched.place"() {filter = {PP = 0 : i64}, devices = [-9223372036854775808]} : () -> ()

// -----

// 2^20 = 1,048,576 devices (ids 0 .. 1048575) is the most Piper plans for.
// expected-error@+1 {{devices must be a non-empty list of device ids in [0, 1048575]}}
"sched.place"() {filter = {PP = 0 : i64}, devices = [1048575, 1048576]} : () -> ()

// -----

// expected-error@+1 {{num_microbatches must be an integer in [1, 1048576]}}
"sched.split"() {filter = {PP = "*"}, dim_name = "mb", num_microbatches = 0 : i64} : () -> ()

// -----

// offset + numel is a checked sum: a huge offset once wrapped negative and passed.
func.func @view_offset_wraps(%flat: tensor<8xf32>) {
  // expected-error@+1 {{views tensor<4xf32> at offset 9223372036854775807 of tensor<8xf32>, which is not a flat tensor that holds it}}
  %v = "tdag.view"(%flat) {offset = 9223372036854775807 : i64} : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @peers_not_per_device(%p: tensor<4xf32>) {
  // expected-error@+1 {{peers must list one device per device in devices (2), got 1}}
  %t = "comm.send"(%p) {devices = [0, 1], peers = [2], tag = 0 : i64} : (tensor<4xf32>) -> !comm.token
  return
}

// -----

// Every pass that groups or filters ops reads `tags` as a dictionary (a string here crashed
// the lowering's trace labels; found by the opt fuzz target).
func.func @tags_not_a_dictionary(%x: tensor<4xf32>) {
  // expected-error@+1 {{tags must be a dictionary of integer tags}}
  %g = "tdag.gelu"(%x) {tags = "B"} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @tag_not_an_integer(%x: tensor<4xf32>) {
  // expected-error@+1 {{tags must be a dictionary of integer tags}}
  %g = "tdag.gelu"(%x) {tags = {PP = "0"}} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// shard_tensor directives that cannot apply: each error is at the directive (here a sched op
// in the same file; from a JSON strategy, at its line:col there), with notes at the ops or
// directives involved.
// RUN: piper-opt %s --split-input-file --piper-autodiff --piper-place --piper-shard-tensor --verify-diagnostics > /dev/null

// A tensor-parallel group of one device splits nothing.
func.func @m() {
  %tok = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte", tags = {PP = 0 : i64}} : () -> tensor<16x8xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe", tags = {PP = 0 : i64}} : () -> tensor<4x8xf32>
  %x = "tdag.embedding"(%tok, %wte, %wpe) {tags = {PP = 0 : i64}} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %w1 = "tdag.param"() {init = "normal", name = "fc.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32x8xf32>
  %b1 = "tdag.param"() {init = "zeros", name = "fc.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32xf32>
  %w2 = "tdag.param"() {init = "normal", name = "proj.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8x32xf32>
  %b2 = "tdag.param"() {init = "zeros", name = "proj.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8xf32>
  %h = "tdag.linear"(%x, %w1, %b1) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  %g = "tdag.gelu"(%h) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %y = "tdag.linear"(%g, %w2, %b2) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>, tensor<8x32xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r = "tdag.add"(%x, %y) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = "tdag.matmul_nt"(%r, %wte) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %tgt = "tdag.input"() {name = "targets", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %loss, %probs = "tdag.cross_entropy"(%logits, %tgt) {tags = {PP = 0 : i64}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x16xf32>)
  "tdag.output"(%loss) {name = "loss", tags = {PP = 0 : i64}} : (tensor<f32>) -> ()
  return
}
"sched.place"() {devices = [0], filter = {PP = 0 : i64}} : () -> ()
// expected-error@+1 {{shard_tensor: a tensor-parallel group needs at least two devices, got 1}}
"sched.shard_tensor"() {devices = [0], filter = {TP = "*"}, stream = "tp"} : () -> ()

// -----

// Groups overlap without being equal: an error at the later one, a note at the other.
func.func @m() {
  %tok = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte", tags = {PP = 0 : i64}} : () -> tensor<16x8xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe", tags = {PP = 0 : i64}} : () -> tensor<4x8xf32>
  %x = "tdag.embedding"(%tok, %wte, %wpe) {tags = {PP = 0 : i64}} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %w1 = "tdag.param"() {init = "normal", name = "fc.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32x8xf32>
  %b1 = "tdag.param"() {init = "zeros", name = "fc.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32xf32>
  %w2 = "tdag.param"() {init = "normal", name = "proj.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8x32xf32>
  %b2 = "tdag.param"() {init = "zeros", name = "proj.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8xf32>
  %h = "tdag.linear"(%x, %w1, %b1) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  %g = "tdag.gelu"(%h) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %y = "tdag.linear"(%g, %w2, %b2) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>, tensor<8x32xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r = "tdag.add"(%x, %y) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = "tdag.matmul_nt"(%r, %wte) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %tgt = "tdag.input"() {name = "targets", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %loss, %probs = "tdag.cross_entropy"(%logits, %tgt) {tags = {PP = 0 : i64}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x16xf32>)
  "tdag.output"(%loss) {name = "loss", tags = {PP = 0 : i64}} : (tensor<f32>) -> ()
  return
}
"sched.place"() {devices = [0, 1, 2], filter = {PP = 0 : i64}} : () -> ()
// expected-note@+1 {{shard_tensor: the other group}}
"sched.shard_tensor"() {devices = [0, 1], filter = {TP = "*"}, stream = "tp"} : () -> ()
// expected-error@+1 {{shard_tensor: this group overlaps another shard_tensor directive's group without being equal to it}}
"sched.shard_tensor"() {devices = [1, 2], filter = {TP = "*"}, stream = "tp"} : () -> ()

// -----

// A device listed twice in a group.
func.func @m() {
  %tok = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte", tags = {PP = 0 : i64}} : () -> tensor<16x8xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe", tags = {PP = 0 : i64}} : () -> tensor<4x8xf32>
  %x = "tdag.embedding"(%tok, %wte, %wpe) {tags = {PP = 0 : i64}} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %w1 = "tdag.param"() {init = "normal", name = "fc.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32x8xf32>
  %b1 = "tdag.param"() {init = "zeros", name = "fc.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32xf32>
  %w2 = "tdag.param"() {init = "normal", name = "proj.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8x32xf32>
  %b2 = "tdag.param"() {init = "zeros", name = "proj.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8xf32>
  %h = "tdag.linear"(%x, %w1, %b1) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  %g = "tdag.gelu"(%h) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %y = "tdag.linear"(%g, %w2, %b2) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>, tensor<8x32xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r = "tdag.add"(%x, %y) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = "tdag.matmul_nt"(%r, %wte) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %tgt = "tdag.input"() {name = "targets", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %loss, %probs = "tdag.cross_entropy"(%logits, %tgt) {tags = {PP = 0 : i64}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x16xf32>)
  "tdag.output"(%loss) {name = "loss", tags = {PP = 0 : i64}} : (tensor<f32>) -> ()
  return
}
"sched.place"() {devices = [0, 1], filter = {PP = 0 : i64}} : () -> ()
// expected-error@+1 {{shard_tensor: device 1 is listed twice}}
"sched.shard_tensor"() {devices = [1, 1], filter = {TP = "*"}, stream = "tp"} : () -> ()

// -----

// Groups of different sizes.
func.func @m() {
  %tok = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte", tags = {PP = 0 : i64}} : () -> tensor<16x8xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe", tags = {PP = 0 : i64}} : () -> tensor<4x8xf32>
  %x = "tdag.embedding"(%tok, %wte, %wpe) {tags = {PP = 0 : i64}} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %w1 = "tdag.param"() {init = "normal", name = "fc.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32x8xf32>
  %b1 = "tdag.param"() {init = "zeros", name = "fc.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32xf32>
  %w2 = "tdag.param"() {init = "normal", name = "proj.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8x32xf32>
  %b2 = "tdag.param"() {init = "zeros", name = "proj.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8xf32>
  %h = "tdag.linear"(%x, %w1, %b1) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  %g = "tdag.gelu"(%h) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %y = "tdag.linear"(%g, %w2, %b2) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>, tensor<8x32xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r = "tdag.add"(%x, %y) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = "tdag.matmul_nt"(%r, %wte) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %tgt = "tdag.input"() {name = "targets", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %loss, %probs = "tdag.cross_entropy"(%logits, %tgt) {tags = {PP = 0 : i64}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x16xf32>)
  "tdag.output"(%loss) {name = "loss", tags = {PP = 0 : i64}} : (tensor<f32>) -> ()
  return
}
"sched.place"() {devices = [0, 1, 2, 3, 4], filter = {PP = 0 : i64}} : () -> ()
"sched.shard_tensor"() {devices = [0, 1], filter = {TP = "*"}, stream = "tp"} : () -> ()
// expected-error@+1 {{shard_tensor: groups of 2 and 3 devices; every shard_tensor group must have the same size}}
"sched.shard_tensor"() {devices = [2, 3, 4], filter = {TP = "*"}, stream = "tp"} : () -> ()

// -----

// The FFN dim (32) is not divisible by a group of 3.
func.func @m() {
  %tok = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte", tags = {PP = 0 : i64}} : () -> tensor<16x8xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe", tags = {PP = 0 : i64}} : () -> tensor<4x8xf32>
  %x = "tdag.embedding"(%tok, %wte, %wpe) {tags = {PP = 0 : i64}} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %w1 = "tdag.param"() {init = "normal", name = "fc.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32x8xf32>
  %b1 = "tdag.param"() {init = "zeros", name = "fc.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32xf32>
  %w2 = "tdag.param"() {init = "normal", name = "proj.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8x32xf32>
  %b2 = "tdag.param"() {init = "zeros", name = "proj.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8xf32>
  // expected-note@+1 {{shard_tensor: this linear}}
  %h = "tdag.linear"(%x, %w1, %b1) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  %g = "tdag.gelu"(%h) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %y = "tdag.linear"(%g, %w2, %b2) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>, tensor<8x32xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r = "tdag.add"(%x, %y) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = "tdag.matmul_nt"(%r, %wte) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %tgt = "tdag.input"() {name = "targets", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %loss, %probs = "tdag.cross_entropy"(%logits, %tgt) {tags = {PP = 0 : i64}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x16xf32>)
  "tdag.output"(%loss) {name = "loss", tags = {PP = 0 : i64}} : (tensor<f32>) -> ()
  return
}
"sched.place"() {devices = [0, 1, 2], filter = {PP = 0 : i64}} : () -> ()
// expected-error@+1 {{shard_tensor: a column-parallel linear has 32 output features (the FFN dim), which the group of 3 devices does not divide}}
"sched.shard_tensor"() {devices = [0, 1, 2], filter = {TP = "*"}, stream = "tp"} : () -> ()

// -----

// The filter matches no op.
func.func @m() {
  %tok = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte", tags = {PP = 0 : i64}} : () -> tensor<16x8xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe", tags = {PP = 0 : i64}} : () -> tensor<4x8xf32>
  %x = "tdag.embedding"(%tok, %wte, %wpe) {tags = {PP = 0 : i64}} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %w1 = "tdag.param"() {init = "normal", name = "fc.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32x8xf32>
  %b1 = "tdag.param"() {init = "zeros", name = "fc.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32xf32>
  %w2 = "tdag.param"() {init = "normal", name = "proj.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8x32xf32>
  %b2 = "tdag.param"() {init = "zeros", name = "proj.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8xf32>
  %h = "tdag.linear"(%x, %w1, %b1) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  %g = "tdag.gelu"(%h) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %y = "tdag.linear"(%g, %w2, %b2) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>, tensor<8x32xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r = "tdag.add"(%x, %y) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = "tdag.matmul_nt"(%r, %wte) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %tgt = "tdag.input"() {name = "targets", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %loss, %probs = "tdag.cross_entropy"(%logits, %tgt) {tags = {PP = 0 : i64}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x16xf32>)
  "tdag.output"(%loss) {name = "loss", tags = {PP = 0 : i64}} : (tensor<f32>) -> ()
  return
}
"sched.place"() {devices = [0, 1], filter = {PP = 0 : i64}} : () -> ()
// expected-error@+1 {{shard_tensor: the filter matches no op of the model}}
"sched.shard_tensor"() {devices = [0, 1], filter = {TP = 7 : i64}, stream = "tp"} : () -> ()

// -----

// The selected ops are not placed on the group.
func.func @m() {
  %tok = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte", tags = {PP = 0 : i64}} : () -> tensor<16x8xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe", tags = {PP = 0 : i64}} : () -> tensor<4x8xf32>
  %x = "tdag.embedding"(%tok, %wte, %wpe) {tags = {PP = 0 : i64}} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  // expected-note@+1 {{shard_tensor: this op of node F PP=0 TP=0}}
  %w1 = "tdag.param"() {init = "normal", name = "fc.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32x8xf32>
  %b1 = "tdag.param"() {init = "zeros", name = "fc.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32xf32>
  %w2 = "tdag.param"() {init = "normal", name = "proj.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8x32xf32>
  %b2 = "tdag.param"() {init = "zeros", name = "proj.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8xf32>
  %h = "tdag.linear"(%x, %w1, %b1) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  %g = "tdag.gelu"(%h) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %y = "tdag.linear"(%g, %w2, %b2) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>, tensor<8x32xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r = "tdag.add"(%x, %y) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = "tdag.matmul_nt"(%r, %wte) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %tgt = "tdag.input"() {name = "targets", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %loss, %probs = "tdag.cross_entropy"(%logits, %tgt) {tags = {PP = 0 : i64}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x16xf32>)
  "tdag.output"(%loss) {name = "loss", tags = {PP = 0 : i64}} : (tensor<f32>) -> ()
  return
}
"sched.place"() {devices = [0], filter = {PP = 0 : i64}} : () -> ()
// expected-error@+1 {{shard_tensor: the selected ops must be placed on this group's devices}}
"sched.shard_tensor"() {devices = [0, 1], filter = {TP = "*"}, stream = "tp"} : () -> ()

// -----

// A filter selecting a region without column/row structure: {PP = 0} takes the embedding,
// which no column -> row chain holds.
func.func @m() {
  %tok = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte", tags = {PP = 0 : i64}} : () -> tensor<16x8xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe", tags = {PP = 0 : i64}} : () -> tensor<4x8xf32>
  // expected-note@+1 {{shard_tensor: this op of node F PP=0}}
  %x = "tdag.embedding"(%tok, %wte, %wpe) {tags = {PP = 0 : i64}} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %w1 = "tdag.param"() {init = "normal", name = "fc.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32x8xf32>
  %b1 = "tdag.param"() {init = "zeros", name = "fc.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32xf32>
  %w2 = "tdag.param"() {init = "normal", name = "proj.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8x32xf32>
  %b2 = "tdag.param"() {init = "zeros", name = "proj.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8xf32>
  %h = "tdag.linear"(%x, %w1, %b1) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<2x4x32xf32>
  %g = "tdag.gelu"(%h) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %y = "tdag.linear"(%g, %w2, %b2) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>, tensor<8x32xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r = "tdag.add"(%x, %y) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = "tdag.matmul_nt"(%r, %wte) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %tgt = "tdag.input"() {name = "targets", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %loss, %probs = "tdag.cross_entropy"(%logits, %tgt) {tags = {PP = 0 : i64}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x16xf32>)
  "tdag.output"(%loss) {name = "loss", tags = {PP = 0 : i64}} : (tensor<f32>) -> ()
  return
}
"sched.place"() {devices = [0, 1], filter = {PP = 0 : i64}} : () -> ()
// expected-error@+1 {{shard_tensor: the filter selects a region without column/row structure (an op outside every column -> row chain)}}
"sched.shard_tensor"() {devices = [0, 1], filter = {PP = 0 : i64}, stream = "tp"} : () -> ()

// -----

// Attention with 2 heads on a group of 4.
func.func @m() {
  %tok = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte", tags = {PP = 0 : i64}} : () -> tensor<16x8xf32>
  %wpe = "tdag.param"() {init = "normal", name = "wpe", tags = {PP = 0 : i64}} : () -> tensor<4x8xf32>
  %x = "tdag.embedding"(%tok, %wte, %wpe) {tags = {PP = 0 : i64}} : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
  %w1 = "tdag.param"() {init = "normal", name = "c_attn.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<24x8xf32>
  %b1 = "tdag.param"() {init = "zeros", name = "c_attn.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<24xf32>
  %w2 = "tdag.param"() {init = "normal", name = "c_proj.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8x8xf32>
  %b2 = "tdag.param"() {init = "zeros", name = "c_proj.bias", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8xf32>
  %qkv = "tdag.linear"(%x, %w1, %b1) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> tensor<2x4x24xf32>
  // expected-note@+1 {{shard_tensor: this attention}}
  %a, %p = "tdag.attention"(%qkv) {heads = 2 : i64, tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x2x4xf32>)
  %y = "tdag.linear"(%a, %w2, %b2) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %r = "tdag.add"(%x, %y) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = "tdag.matmul_nt"(%r, %wte) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %tgt = "tdag.input"() {name = "targets", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %loss, %probs = "tdag.cross_entropy"(%logits, %tgt) {tags = {PP = 0 : i64}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x16xf32>)
  "tdag.output"(%loss) {name = "loss", tags = {PP = 0 : i64}} : (tensor<f32>) -> ()
  return
}
"sched.place"() {devices = [0, 1, 2, 3], filter = {PP = 0 : i64}} : () -> ()
// expected-error@+1 {{shard_tensor: attention has 2 heads, which the group of 4 devices does not divide}}
"sched.shard_tensor"() {devices = [0, 1, 2, 3], filter = {TP = "*"}, stream = "tp"} : () -> ()

// -----

// Hand-written slice attributes that do not describe the tensor are refused when the IR is
// read (the lowering and the runtime size storage from them).
func.func @bad_slice() {
  // expected-error@+1 {{tp_full and tp_slice must be the whole shape and [block, stride, blocks, step] (positive integers) of blocks * block = 64 elements (or, with shards, a ZeRO shard of that many) inside it}}
  %w = "tdag.param"() {init = "normal", name = "w", tp_full = [16, 8], tp_slice = [64, 128, 2, 64]} : () -> tensor<8x8xf32>
  // expected-error@+1 {{tp_full and tp_slice belong on a tdag.param or tdag.adam_state}}
  %g = "tdag.gelu"(%w) {tp_full = [8]} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

// A region op reading a value from outside it (only column linears may): swiglu's second
// operand comes from a linear without the TP tag.
func.func @m() {
  %tok = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte", tags = {PP = 0 : i64}} : () -> tensor<16x8xf32>
  %x = "tdag.embed"(%tok, %wte) {tags = {PP = 0 : i64}} : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %wg = "tdag.param"() {init = "normal", name = "gate.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32x8xf32>
  %wu = "tdag.param"() {init = "normal", name = "up.weight", tags = {PP = 0 : i64}} : () -> tensor<32x8xf32>
  %wd = "tdag.param"() {init = "normal", name = "down.weight", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8x32xf32>
  %g = "tdag.matmul_nt"(%x, %wg) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<32x8xf32>) -> tensor<2x4x32xf32>
  %u = "tdag.matmul_nt"(%x, %wu) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<32x8xf32>) -> tensor<2x4x32xf32>
  // expected-note@+1 {{shard_tensor: this op of node F PP=0 TP=0}}
  %a = "tdag.swiglu"(%g, %u) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>, tensor<2x4x32xf32>) -> tensor<2x4x32xf32>
  %y = "tdag.matmul_nt"(%a, %wd) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>, tensor<8x32xf32>) -> tensor<2x4x8xf32>
  %r = "tdag.add"(%x, %y) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = "tdag.matmul_nt"(%r, %wte) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %tgt = "tdag.input"() {name = "targets", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %loss, %probs = "tdag.cross_entropy"(%logits, %tgt) {tags = {PP = 0 : i64}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x16xf32>)
  "tdag.output"(%loss) {name = "loss", tags = {PP = 0 : i64}} : (tensor<f32>) -> ()
  return
}
"sched.place"() {devices = [0, 1], filter = {PP = 0 : i64}} : () -> ()
// expected-error@+1 {{shard_tensor: the filter selects a region without column/row structure (an op inside the region reads a value from outside it; only its column linears may)}}
"sched.shard_tensor"() {devices = [0, 1], filter = {TP = "*"}, stream = "tp"} : () -> ()

// -----

// Two row linears in one region: a linear reading the row linear's output.
func.func @m() {
  %tok = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %wte = "tdag.param"() {init = "normal", name = "wte", tags = {PP = 0 : i64}} : () -> tensor<16x8xf32>
  %x = "tdag.embed"(%tok, %wte) {tags = {PP = 0 : i64}} : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %w1 = "tdag.param"() {init = "normal", name = "w1", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<32x8xf32>
  %w2 = "tdag.param"() {init = "normal", name = "w2", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8x32xf32>
  %w3 = "tdag.param"() {init = "normal", name = "w3", tags = {PP = 0 : i64, TP = 0 : i64}} : () -> tensor<8x8xf32>
  %h = "tdag.matmul_nt"(%x, %w1) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<32x8xf32>) -> tensor<2x4x32xf32>
  %y = "tdag.matmul_nt"(%h, %w2) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x32xf32>, tensor<8x32xf32>) -> tensor<2x4x8xf32>
  // expected-note@+1 {{shard_tensor: this op of node F PP=0 TP=0}}
  %z = "tdag.matmul_nt"(%y, %w3) {tags = {PP = 0 : i64, TP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %r = "tdag.add"(%x, %z) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %logits = "tdag.matmul_nt"(%r, %wte) {tags = {PP = 0 : i64}} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %tgt = "tdag.input"() {name = "targets", tags = {PP = 0 : i64}} : () -> tensor<2x4xi32>
  %loss, %probs = "tdag.cross_entropy"(%logits, %tgt) {tags = {PP = 0 : i64}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>, tensor<2x4x16xf32>)
  "tdag.output"(%loss) {name = "loss", tags = {PP = 0 : i64}} : (tensor<f32>) -> ()
  return
}
"sched.place"() {devices = [0, 1], filter = {PP = 0 : i64}} : () -> ()
// expected-error@+1 {{shard_tensor: the filter selects a region without column/row structure (a region with two row linears)}}
"sched.shard_tensor"() {devices = [0, 1], filter = {TP = "*"}, stream = "tp"} : () -> ()

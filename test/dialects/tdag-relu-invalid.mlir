// tdag.relu's rules as its op-list entry gives them: IRDL's one type for x and out (the
// signature "x: T" -> "out: T"), an operand count, and the row's element types (f32, or bf16
// only for the result the bf16 policy names).
// RUN: piper-opt %s --split-input-file --verify-diagnostics > /dev/null

func.func @relu_other_shape(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{expected 'tensor<2x3xf32>' but got 'tensor<3x2xf32>'}}
  %y = "tdag.relu"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @relu_grad_one_operand(%dy: tensor<4xf32>) {
  // expected-error@+1 {{op expects exactly 2 operands, but got 1}}
  %dx = "tdag.relu_grad"(%dy) : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @relu_i32(%x: tensor<4xi32>) {
  // expected-error@+1 {{operand #0 must be a statically shaped tensor of f32, got tensor<4xi32>}}
  %y = "tdag.relu"(%x) : (tensor<4xi32>) -> tensor<4xi32>
  return
}

// -----

func.func @relu_grad_bf16_policy(%dy: tensor<4xbf16>, %x: tensor<4xbf16>) {
  %dx = "tdag.relu_grad"(%dy, %x) : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  return
}

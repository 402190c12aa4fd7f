// Every kind of designator, and two diagnostics on one line; all expected: exit 0.
func.func @own_line() {
  %0 = "tdag.param"() {init = "uniform", name = "w"} : () -> tensor<4xf32> // expected-error {{init must be "normal"}}
  return
}

// -----

func.func @plus_one() {
  // expected-error@+1 {{tdag.frobnicate}}
  %0 = "tdag.frobnicate"() : () -> tensor<2xf32>
  return
}

// -----

func.func @minus_one() {
  %0 = "tdag.param"() {init = "uniform", name = "w"} : () -> tensor<4xf32>
  // expected-error@-1 {{got "uniform"}}
  return
}

// -----

func.func @below_and_above() {
  // expected-error@below {{init must be}}
  %0 = "tdag.param"() {init = "uniform", name = "w"} : () -> tensor<4xf32>
  return
}

// -----

func.func @above(%x: tensor<2x4xf32>, %w: tensor<5x4xf32>) {
  %0 = "tdag.linear"(%x, %w) : (tensor<2x4xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
  // expected-error@above {{expects exactly 3 operands}}
  return
}

// -----

// A chunk that verifies and expects nothing.
func.func @fine(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "tdag.gelu"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

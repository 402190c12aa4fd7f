// Line 4 fails to verify and nothing expects it; line 10 expects a different message.
func.func @bad() {

  %0 = "tdag.param"() {init = "uniform", name = "w"} : () -> tensor<4xf32>
  return
}

// -----

// expected-error@+1 {{some other message}}
func.func @wrong_text(%x: tensor<2x4xf32>, %w: tensor<5x4xf32>) {
  %0 = "tdag.linear"(%x, %w) : (tensor<2x4xf32>, tensor<5x4xf32>) -> tensor<2x5xf32>
  return
}

// -----

// A malformed annotation is an error at its line.
// expected-error@+x {{whatever}}
func.func @malformed() {
  return
}

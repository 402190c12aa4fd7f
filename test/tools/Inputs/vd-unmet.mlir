// This input is valid: the expectation on line 4 is never met.
func.func @fine(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "tdag.gelu"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error@-1 {{no such error}}
  return %0 : tensor<2xf32>
}

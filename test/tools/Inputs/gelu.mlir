func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "tdag.gelu"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

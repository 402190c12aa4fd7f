func.func @tp_offset_float() {
  // expected-error@+1 {{tp_offset must be an integer}}
  %p = "tdag.param"() {init = "normal", name = "w", tp_full = [4, 8], tp_slice = [16, 16, 1, 16], tp_offset = 1.5 : f64} : () -> tensor<2x8xf32>
  return
}


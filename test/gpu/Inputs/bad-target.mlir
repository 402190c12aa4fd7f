// A module naming a target piper does not have (test/gpu/target-invalid.test).
module attributes {piper.target = "rocm"} {
func.func @f() {
  %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
  return
}
}

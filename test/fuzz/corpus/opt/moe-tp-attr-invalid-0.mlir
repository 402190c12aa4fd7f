// Attributes of the wrong type on the expert- and tensor-parallel ops and directives: piperGetIntAttr would
// read a non-integer as its fallback (one group, offset 0), so the verifier refuses them.
// Found writing the hostile cases of the 2026-11-23 fuzz campaign (README "Robustness").

func.func @groups_string(%h: tensor<2x4xf32>, %ex: tensor<2x2xi32>) {
  // expected-error@+1 {{groups must be an integer}}
  %rows, %counts = "tdag.moe_dispatch"(%h, %ex) {num_experts = 4 : i64, groups = "two"} : (tensor<2x4xf32>, tensor<2x2xi32>) -> (tensor<4x4xf32>, tensor<4xi32>)
  return
}


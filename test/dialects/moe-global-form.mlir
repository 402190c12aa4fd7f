// Before --piper-extract, a shard directive's moe_experts holds the experts of all its G
// replicas (E weights each, E/G per replica) and counts (E) = (G * E/G): the global DAG that
// `piper-opt --piper-apply-strategy` prints. It verifies, so the printed DAG can be read back
// (before the fix: "counts must be (groups * local experts) = (4)"); the lowering, whose
// kernels index counts by G * local experts, takes only a device's op and says to extract.
// RUN: piper-opt %s | FileCheck %s
// RUN: not piper-opt %s --piper-lower-to-llvm 2>&1 | FileCheck %s --check-prefix=LOWER

// E = 2 experts over G = 2 replicas: counts (2), two weights per group.
// CHECK-LABEL: func.func @global
// CHECK: "tdag.moe_experts"{{.*}}groups = 2 : i64
func.func @global(%rows: tensor<8x4xf32>, %counts: tensor<2xi32>, %g0: tensor<3x4xf32>, %g1: tensor<3x4xf32>, %d0: tensor<4x3xf32>, %d1: tensor<4x3xf32>) {
  // LOWER: moe-global-form.mlir:[[@LINE+1]]:16: error: piper-lower-to-llvm: this expert op still holds the experts of all its groups' devices (a shard directive's global DAG); run --piper-extract first
  %out, %hid = "tdag.moe_experts"(%rows, %counts, %g0, %g1, %g0, %g1, %d0, %d1) {groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 2, 2, 2>} : (tensor<8x4xf32>, tensor<2xi32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<8x4xf32>, tensor<8x6xf32>)
  return
}

// --piper-place names the model's tags when a filter matches nothing: every tag, with the
// range of its indices, however many there are; what does not fit in the message is counted,
// never dropped silently.
// RUN: not piper-opt %s --split-input-file --piper-place 2>&1 | FileCheck %s

// Twenty tags (there was room for sixteen once), each over two ops: indices i and i + 1.
// CHECK: error: place: the filter matches no op of the model (its tags are: t00 0..1, t01 1..2, t02 2..3, t03 3..4, t04 4..5, t05 5..6, t06 6..7, t07 7..8, t08 8..9, t09 9..10, t10 10..11, t11 11..12, t12 12..13, t13 13..14, t14 14..15, t15 15..16, t16 16..17, t17 17..18, t18 18..19, t19 19..20)
module {
  func.func @train(%g: tensor<4xf32>) {
    %p = "tdag.param"() {init = "normal", name = "p", tags = {t00 = 0 : i64, t01 = 1 : i64, t02 = 2 : i64, t03 = 3 : i64, t04 = 4 : i64, t05 = 5 : i64, t06 = 6 : i64, t07 = 7 : i64, t08 = 8 : i64, t09 = 9 : i64, t10 = 10 : i64, t11 = 11 : i64, t12 = 12 : i64, t13 = 13 : i64, t14 = 14 : i64, t15 = 15 : i64, t16 = 16 : i64, t17 = 17 : i64, t18 = 18 : i64, t19 = 19 : i64}} : () -> tensor<4xf32>
    %m = "tdag.adam_state"() {param = "p", slot = "exp_avg", tags = {t00 = 1 : i64, t01 = 2 : i64, t02 = 3 : i64, t03 = 4 : i64, t04 = 5 : i64, t05 = 6 : i64, t06 = 7 : i64, t07 = 8 : i64, t08 = 9 : i64, t09 = 10 : i64, t10 = 11 : i64, t11 = 12 : i64, t12 = 13 : i64, t13 = 14 : i64, t14 = 15 : i64, t15 = 16 : i64, t16 = 17 : i64, t17 = 18 : i64, t18 = 19 : i64, t19 = 20 : i64}} : () -> tensor<4xf32>
    %v = "tdag.adam_state"() {param = "p", slot = "exp_avg_sq"} : () -> tensor<4xf32>
    "tdag.adamw"(%p, %g, %m, %v) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, decay = 0 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
    return
  }
  "sched.place"() {devices = [0], filter = {PP = 7 : i64}} : () -> ()
}

// -----

// Twelve tags of 40 characters, 45-47 bytes each in the list: ten fit in the message's 512
// bytes with room kept for the marker, and the marker counts the other two.
// CHECK: error: place: the filter matches no op of the model (its tags are: k00_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 0..0, k01_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 0..0, k02_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 0..0, k03_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 0..0, k04_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 0..0, k05_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 0..0, k06_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 0..0, k07_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 0..0, k08_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 0..0, k09_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx 0..0, ... (2 more))
module {
  func.func @train(%g: tensor<4xf32>) {
    %p = "tdag.param"() {init = "normal", name = "p", tags = {k00_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k01_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k02_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k03_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k04_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k05_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k06_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k07_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k08_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k09_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k10_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k11_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64}} : () -> tensor<4xf32>
    %m = "tdag.adam_state"() {param = "p", slot = "exp_avg", tags = {k00_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k01_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k02_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k03_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k04_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k05_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k06_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k07_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k08_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k09_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k10_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64, k11_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx = 0 : i64}} : () -> tensor<4xf32>
    %v = "tdag.adam_state"() {param = "p", slot = "exp_avg_sq"} : () -> tensor<4xf32>
    "tdag.adamw"(%p, %g, %m, %v) {beta1 = 0.9 : f64, beta2 = 0.95 : f64, eps = 1.0e-08 : f64, decay = 0 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
    return
  }
  "sched.place"() {devices = [0], filter = {PP = 7 : i64}} : () -> ()
}

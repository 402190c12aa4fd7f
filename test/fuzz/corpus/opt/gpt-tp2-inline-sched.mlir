module {
  func.func @gpt() {
    %0 = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2x2xi32>
    %1 = "tdag.param"() {init = "normal", name = "wte.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %2 = "tdag.param"() {init = "normal", name = "wpe.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2x8xf32>
    %3 = "tdag.embedding"(%0, %1, %2) {tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<2x2xi32>, tensor<256x8xf32>, tensor<2x8xf32>) -> tensor<2x2x8xf32>
    %4 = "tdag.param"() {init = "ones", name = "h.0.ln_1.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %5 = "tdag.param"() {init = "zeros", name = "h.0.ln_1.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %6 = "tdag.param"() {init = "normal", name = "h.0.attn.c_attn.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<24x8xf32>
    %7 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_attn.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<24xf32>
    %8 = "tdag.param"() {init = "normal", name = "h.0.attn.c_proj.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %9 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_proj.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %10 = "tdag.param"() {init = "ones", name = "h.0.ln_2.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %11 = "tdag.param"() {init = "zeros", name = "h.0.ln_2.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %12 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_fc.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<32x8xf32>
    %13 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_fc.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<32xf32>
    %14 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_proj.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x32xf32>
    %15 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_proj.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %16:3 = "tdag.layernorm"(%3, %4, %5) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    %17 = "tdag.linear"(%16#0, %6, %7) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<24x8xf32>, tensor<24xf32>) -> tensor<2x2x24xf32>
    %18:2 = "tdag.attention"(%17) {heads = 2 : i64, tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x24xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x2xf32>)
    %19 = "tdag.linear"(%18#0, %8, %9) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
    %20 = "tdag.add"(%3, %19) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %21:3 = "tdag.layernorm"(%20, %10, %11) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    %22 = "tdag.linear"(%21#0, %12, %13) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<2x2x32xf32>
    %23 = "tdag.gelu"(%22) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x32xf32>) -> tensor<2x2x32xf32>
    %24 = "tdag.linear"(%23, %14, %15) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x32xf32>, tensor<8x32xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
    %25 = "tdag.add"(%20, %24) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %26 = "tdag.param"() {init = "ones", name = "ln_f.weight", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %27 = "tdag.param"() {init = "zeros", name = "ln_f.bias", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %28:3 = "tdag.layernorm"(%25, %26, %27) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    %29 = "tdag.matmul_nt"(%28#0, %1) {tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<2x2x8xf32>, tensor<256x8xf32>) -> tensor<2x2x256xf32>
    %30 = "tdag.input"() {name = "targets", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<2x2xi32>
    %31:2 = "tdag.cross_entropy"(%29, %30) {tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> (tensor<f32>, tensor<2x2x256xf32>)
    "tdag.output"(%31#0) {name = "loss", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<f32>) -> ()
    %32 = "tdag.cross_entropy_grad"(%31#1, %30) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> tensor<2x2x256xf32>
    %33 = "tdag.linear_grad_input"(%32, %1) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<2x2x256xf32>, tensor<256x8xf32>) -> tensor<2x2x8xf32>
    %34 = "tdag.linear_grad_weight"(%32, %28#0) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<2x2x256xf32>, tensor<2x2x8xf32>) -> tensor<256x8xf32>
    %35:3 = "tdag.layernorm_grad"(%33, %25, %26, %28#1, %28#2) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %36 = "tdag.linear_grad_input"(%35#0, %14) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x32xf32>) -> tensor<2x2x32xf32>
    %37 = "tdag.linear_grad_weight"(%35#0, %23) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x32xf32>) -> tensor<8x32xf32>
    %38 = "tdag.bias_grad"(%35#0) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>) -> tensor<8xf32>
    %39 = "tdag.gelu_grad"(%36, %22) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x32xf32>, tensor<2x2x32xf32>) -> tensor<2x2x32xf32>
    %40 = "tdag.linear_grad_input"(%39, %12) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x32xf32>, tensor<32x8xf32>) -> tensor<2x2x8xf32>
    %41 = "tdag.linear_grad_weight"(%39, %21#0) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x32xf32>, tensor<2x2x8xf32>) -> tensor<32x8xf32>
    %42 = "tdag.bias_grad"(%39) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x32xf32>) -> tensor<32xf32>
    %43:3 = "tdag.layernorm_grad"(%40, %20, %10, %21#1, %21#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %44 = "tdag.add"(%35#0, %43#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %45 = "tdag.linear_grad_input"(%44, %8) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x8xf32>) -> tensor<2x2x8xf32>
    %46 = "tdag.linear_grad_weight"(%44, %18#0) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<8x8xf32>
    %47 = "tdag.bias_grad"(%44) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>) -> tensor<8xf32>
    %48 = "tdag.attention_grad"(%45, %17, %18#0, %18#1) {heads = 2 : i64, pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x24xf32>, tensor<2x2x8xf32>, tensor<2x2x2xf32>) -> tensor<2x2x24xf32>
    %49 = "tdag.linear_grad_input"(%48, %6) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x24xf32>, tensor<24x8xf32>) -> tensor<2x2x8xf32>
    %50 = "tdag.linear_grad_weight"(%48, %16#0) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x24xf32>, tensor<2x2x8xf32>) -> tensor<24x8xf32>
    %51 = "tdag.bias_grad"(%48) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x24xf32>) -> tensor<24xf32>
    %52:3 = "tdag.layernorm_grad"(%49, %3, %4, %16#1, %16#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %53 = "tdag.add"(%44, %52#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %54:2 = "tdag.embedding_grad"(%53, %0) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> (tensor<256x8xf32>, tensor<2x8xf32>)
    %55 = "tdag.add"(%34, %54#0) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>) -> tensor<256x8xf32>
    %56 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %57 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    "tdag.adamw"(%1, %55, %56, %57) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>) -> ()
    %58 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2x8xf32>
    %59 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2x8xf32>
    "tdag.adamw"(%2, %54#1, %58, %59) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> ()
    %60 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %61 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%4, %52#1, %60, %61) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %62 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %63 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%5, %52#2, %62, %63) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %64 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<24x8xf32>
    %65 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<24x8xf32>
    "tdag.adamw"(%6, %50, %64, %65) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<24x8xf32>, tensor<24x8xf32>, tensor<24x8xf32>, tensor<24x8xf32>) -> ()
    %66 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<24xf32>
    %67 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<24xf32>
    "tdag.adamw"(%7, %51, %66, %67) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>) -> ()
    %68 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %69 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    "tdag.adamw"(%8, %46, %68, %69) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> ()
    %70 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %71 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%9, %47, %70, %71) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %72 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %73 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%10, %43#1, %72, %73) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %74 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %75 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%11, %43#2, %74, %75) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %76 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<32x8xf32>
    %77 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<32x8xf32>
    "tdag.adamw"(%12, %41, %76, %77) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>) -> ()
    %78 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<32xf32>
    %79 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<32xf32>
    "tdag.adamw"(%13, %42, %78, %79) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> ()
    %80 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x32xf32>
    %81 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x32xf32>
    "tdag.adamw"(%14, %37, %80, %81) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>) -> ()
    %82 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %83 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%15, %38, %82, %83) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %84 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %85 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%26, %35#1, %84, %85) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %86 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %87 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%27, %35#2, %86, %87) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    return
  }
  "sched.place"() {devices = [0, 1], filter = {PP = 0 : i64}} : () -> ()
  "sched.shard_tensor"() {devices = [0, 1], filter = {PP = 0 : i64, TP = "*"}, stream = "tp"} : () -> ()
}

module attributes {piper.devices = 2 : i64, piper.tp_groups = [[0, 1]]} {
  func.func @gpt() {
    %0 = "tdag.input"() {devices = [0, 1], first_sample = 0 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> tensor<2x2xi32>
    %1 = "tdag.param"() {devices = [0, 1], init = "normal", name = "wte.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %2 = "tdag.param"() {devices = [0, 1], init = "normal", name = "wpe.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2x8xf32>
    %3 = "tdag.embedding"(%0, %1, %2) {devices = [0, 1], tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x2xi32>, tensor<256x8xf32>, tensor<2x8xf32>) -> tensor<2x2x8xf32>
    %4 = "tdag.param"() {devices = [0, 1], init = "ones", name = "h.0.ln_1.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %5 = "tdag.param"() {devices = [0, 1], init = "zeros", name = "h.0.ln_1.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %6 = "tdag.param"() {devices = [0, 1], init = "normal", name = "h.0.attn.c_attn.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24, 8], tp_slice = [32, 64, 3, 32]} : () -> tensor<12x8xf32>
    %7 = "tdag.param"() {devices = [0, 1], init = "zeros", name = "h.0.attn.c_attn.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24], tp_slice = [4, 8, 3, 4]} : () -> tensor<12xf32>
    %8 = "tdag.param"() {devices = [0, 1], init = "normal", name = "h.0.attn.c_proj.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 8], tp_slice = [4, 8, 8, 4]} : () -> tensor<8x4xf32>
    %9 = "tdag.param"() {devices = [0, 1], init = "zeros", name = "h.0.attn.c_proj.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %10 = "tdag.param"() {devices = [0, 1], init = "ones", name = "h.0.ln_2.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %11 = "tdag.param"() {devices = [0, 1], init = "zeros", name = "h.0.ln_2.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %12 = "tdag.param"() {devices = [0, 1], init = "normal", name = "h.0.mlp.c_fc.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32, 8], tp_slice = [128, 256, 1, 128]} : () -> tensor<16x8xf32>
    %13 = "tdag.param"() {devices = [0, 1], init = "zeros", name = "h.0.mlp.c_fc.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32], tp_slice = [16, 32, 1, 16]} : () -> tensor<16xf32>
    %14 = "tdag.param"() {devices = [0, 1], init = "normal", name = "h.0.mlp.c_proj.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 32], tp_slice = [16, 32, 8, 16]} : () -> tensor<8x16xf32>
    %15 = "tdag.param"() {devices = [0, 1], init = "zeros", name = "h.0.mlp.c_proj.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %16:3 = "tdag.layernorm"(%3, %4, %5) {devices = [0, 1], eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    %17 = "tdag.linear"(%16#0, %6, %7) {devices = [0, 1], tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<12x8xf32>, tensor<12xf32>) -> tensor<2x2x12xf32>
    %18:2 = "tdag.attention"(%17) {devices = [0, 1], heads = 1 : i64, tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_heads_split = 2 : i64} : (tensor<2x2x12xf32>) -> (tensor<2x2x4xf32>, tensor<2x1x2xf32>)
    %19 = "tdag.matmul_nt"(%18#0, %8) {devices = [0, 1], tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %20:2 = "comm.all_reduce"(%19) {devices = [0, 1], group = [0, 1], stream = "tp", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_reduce} : (tensor<2x2x8xf32>) -> (tensor<2x2x8xf32>, !comm.token)
    %21 = "tdag.bias_add"(%20#0, %9) {devices = [0, 1], tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
    %22 = "tdag.add"(%3, %21) {devices = [0, 1], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %23:3 = "tdag.layernorm"(%22, %10, %11) {devices = [0, 1], eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    %24 = "tdag.linear"(%23#0, %12, %13) {devices = [0, 1], tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x2x16xf32>
    %25 = "tdag.gelu"(%24) {devices = [0, 1], tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>) -> tensor<2x2x16xf32>
    %26 = "tdag.matmul_nt"(%25, %14) {devices = [0, 1], tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>, tensor<8x16xf32>) -> tensor<2x2x8xf32>
    %27:2 = "comm.all_reduce"(%26) {devices = [0, 1], group = [0, 1], stream = "tp", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_reduce} : (tensor<2x2x8xf32>) -> (tensor<2x2x8xf32>, !comm.token)
    %28 = "tdag.bias_add"(%27#0, %15) {devices = [0, 1], tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
    %29 = "tdag.add"(%22, %28) {devices = [0, 1], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %30 = "tdag.param"() {devices = [0, 1], init = "ones", name = "ln_f.weight", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %31 = "tdag.param"() {devices = [0, 1], init = "zeros", name = "ln_f.bias", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %32:3 = "tdag.layernorm"(%29, %30, %31) {devices = [0, 1], eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    %33 = "tdag.matmul_nt"(%32#0, %1) {devices = [0, 1], tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<256x8xf32>) -> tensor<2x2x256xf32>
    %34 = "tdag.input"() {devices = [0, 1], first_sample = 0 : i64, name = "targets", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : () -> tensor<2x2xi32>
    %35:2 = "tdag.cross_entropy"(%33, %34) {devices = [0, 1], tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> (tensor<f32>, tensor<2x2x256xf32>)
    "tdag.output"(%35#0) {devices = [0, 1], name = "loss", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<f32>) -> ()
    %36 = "tdag.cross_entropy_grad"(%35#1, %34) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}, total_rows = 4 : i64} : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> tensor<2x2x256xf32>
    %37 = "tdag.linear_grad_input"(%36, %1) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<256x8xf32>) -> tensor<2x2x8xf32>
    %38 = "tdag.linear_grad_weight"(%36, %32#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<2x2x8xf32>) -> tensor<256x8xf32>
    %39:3 = "tdag.layernorm_grad"(%37, %29, %30, %32#1, %32#2) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %40 = "tdag.linear_grad_input"(%39#0, %14) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x16xf32>) -> tensor<2x2x16xf32>
    %41 = "tdag.linear_grad_weight"(%39#0, %25) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x16xf32>) -> tensor<8x16xf32>
    %42 = "tdag.bias_grad"(%39#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>) -> tensor<8xf32>
    %43 = "tdag.gelu_grad"(%40, %24) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>, tensor<2x2x16xf32>) -> tensor<2x2x16xf32>
    %44 = "tdag.linear_grad_input"(%43, %12) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>, tensor<16x8xf32>) -> tensor<2x2x8xf32>
    %45:2 = "comm.all_reduce"(%44) {devices = [0, 1], group = [0, 1], pass = "B", stream = "tp", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_reduce} : (tensor<2x2x8xf32>) -> (tensor<2x2x8xf32>, !comm.token)
    %46 = "tdag.linear_grad_weight"(%43, %23#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>, tensor<2x2x8xf32>) -> tensor<16x8xf32>
    %47 = "tdag.bias_grad"(%43) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>) -> tensor<16xf32>
    %48:3 = "tdag.layernorm_grad"(%45#0, %22, %10, %23#1, %23#2) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %49 = "tdag.add"(%39#0, %48#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %50 = "tdag.linear_grad_input"(%49, %8) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x4xf32>) -> tensor<2x2x4xf32>
    %51 = "tdag.linear_grad_weight"(%49, %18#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x4xf32>) -> tensor<8x4xf32>
    %52 = "tdag.bias_grad"(%49) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>) -> tensor<8xf32>
    %53 = "tdag.attention_grad"(%50, %17, %18#0, %18#1) {devices = [0, 1], heads = 1 : i64, pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_heads_split = 2 : i64} : (tensor<2x2x4xf32>, tensor<2x2x12xf32>, tensor<2x2x4xf32>, tensor<2x1x2xf32>) -> tensor<2x2x12xf32>
    %54 = "tdag.linear_grad_input"(%53, %6) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x12xf32>, tensor<12x8xf32>) -> tensor<2x2x8xf32>
    %55:2 = "comm.all_reduce"(%54) {devices = [0, 1], group = [0, 1], pass = "B", stream = "tp", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_reduce} : (tensor<2x2x8xf32>) -> (tensor<2x2x8xf32>, !comm.token)
    %56 = "tdag.linear_grad_weight"(%53, %16#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x12xf32>, tensor<2x2x8xf32>) -> tensor<12x8xf32>
    %57 = "tdag.bias_grad"(%53) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x12xf32>) -> tensor<12xf32>
    %58:3 = "tdag.layernorm_grad"(%55#0, %3, %4, %16#1, %16#2) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %59 = "tdag.add"(%49, %58#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %60:2 = "tdag.embedding_grad"(%59, %0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> (tensor<256x8xf32>, tensor<2x8xf32>)
    %61 = "tdag.add"(%38, %60#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>) -> tensor<256x8xf32>
    %62 = "tdag.adam_state"() {devices = [0, 1], param = "wte.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %63 = "tdag.adam_state"() {devices = [0, 1], param = "wte.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    "tdag.adamw"(%1, %61, %62, %63) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>) -> ()
    %64 = "tdag.adam_state"() {devices = [0, 1], param = "wpe.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2x8xf32>
    %65 = "tdag.adam_state"() {devices = [0, 1], param = "wpe.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2x8xf32>
    "tdag.adamw"(%2, %60#1, %64, %65) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> ()
    %66 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.ln_1.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %67 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.ln_1.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%4, %58#1, %66, %67) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %68 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.ln_1.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %69 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.ln_1.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%5, %58#2, %68, %69) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %70 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.attn.c_attn.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24, 8], tp_slice = [32, 64, 3, 32]} : () -> tensor<12x8xf32>
    %71 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.attn.c_attn.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24, 8], tp_slice = [32, 64, 3, 32]} : () -> tensor<12x8xf32>
    "tdag.adamw"(%6, %56, %70, %71) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<12x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>) -> ()
    %72 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.attn.c_attn.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24], tp_slice = [4, 8, 3, 4]} : () -> tensor<12xf32>
    %73 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.attn.c_attn.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24], tp_slice = [4, 8, 3, 4]} : () -> tensor<12xf32>
    "tdag.adamw"(%7, %57, %72, %73) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<12xf32>, tensor<12xf32>, tensor<12xf32>, tensor<12xf32>) -> ()
    %74 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.attn.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 8], tp_slice = [4, 8, 8, 4]} : () -> tensor<8x4xf32>
    %75 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.attn.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 8], tp_slice = [4, 8, 8, 4]} : () -> tensor<8x4xf32>
    "tdag.adamw"(%8, %51, %74, %75) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> ()
    %76 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.attn.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %77 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.attn.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%9, %52, %76, %77) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %78 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.ln_2.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %79 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.ln_2.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%10, %48#1, %78, %79) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %80 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.ln_2.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %81 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.ln_2.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%11, %48#2, %80, %81) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %82 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32, 8], tp_slice = [128, 256, 1, 128]} : () -> tensor<16x8xf32>
    %83 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32, 8], tp_slice = [128, 256, 1, 128]} : () -> tensor<16x8xf32>
    "tdag.adamw"(%12, %46, %82, %83) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> ()
    %84 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32], tp_slice = [16, 32, 1, 16]} : () -> tensor<16xf32>
    %85 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32], tp_slice = [16, 32, 1, 16]} : () -> tensor<16xf32>
    "tdag.adamw"(%13, %47, %84, %85) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %86 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 32], tp_slice = [16, 32, 8, 16]} : () -> tensor<8x16xf32>
    %87 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 32], tp_slice = [16, 32, 8, 16]} : () -> tensor<8x16xf32>
    "tdag.adamw"(%14, %41, %86, %87) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> ()
    %88 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %89 = "tdag.adam_state"() {devices = [0, 1], param = "h.0.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%15, %42, %88, %89) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %90 = "tdag.adam_state"() {devices = [0, 1], param = "ln_f.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %91 = "tdag.adam_state"() {devices = [0, 1], param = "ln_f.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%30, %39#1, %90, %91) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %92 = "tdag.adam_state"() {devices = [0, 1], param = "ln_f.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %93 = "tdag.adam_state"() {devices = [0, 1], param = "ln_f.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%31, %39#2, %92, %93) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    return
  }
  "sched.split"() {dim_name = "mb", filter = {PP = "*"}, num_microbatches = 1 : i64} : () -> ()
  "sched.place"() {devices = [0, 1], filter = {PP = 0 : i64}, stream = "compute"} : () -> ()
  "sched.shard_tensor"() {devices = [0, 1], filter = {PP = 0 : i64, TP = "*"}, stream = "tp"} : () -> ()
  "sched.order"() {filters = [[{PASS = "F", PP = 0 : i64, mb = 0 : i64}], [{PASS = "B", PP = 0 : i64, mb = 0 : i64}]]} : () -> ()
}


module attributes {piper.devices = 2 : i64, piper.global_batch = 2 : i64, piper.tp_groups = [[0, 1]]} {
  func.func @device_0() attributes {piper.order = "test/fuzz/corpus/opt/gpt-tp2-dag.mlir:119:3"} {
    %0 = "tdag.param"() {init = "normal", name = "wte.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %1 = "tdag.param"() {init = "normal", name = "wpe.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2x8xf32>
    %2 = "tdag.param"() {init = "ones", name = "h.0.ln_1.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %3 = "tdag.param"() {init = "zeros", name = "h.0.ln_1.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %4 = "tdag.param"() {init = "normal", name = "h.0.attn.c_attn.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24, 8], tp_offset = 0 : i64, tp_slice = [32, 64, 3, 32]} : () -> tensor<12x8xf32>
    %5 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_attn.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24], tp_offset = 0 : i64, tp_slice = [4, 8, 3, 4]} : () -> tensor<12xf32>
    %6 = "tdag.param"() {init = "normal", name = "h.0.attn.c_proj.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 8], tp_offset = 0 : i64, tp_slice = [4, 8, 8, 4]} : () -> tensor<8x4xf32>
    %7 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_proj.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %8 = "tdag.param"() {init = "ones", name = "h.0.ln_2.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %9 = "tdag.param"() {init = "zeros", name = "h.0.ln_2.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %10 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_fc.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32, 8], tp_offset = 0 : i64, tp_slice = [128, 256, 1, 128]} : () -> tensor<16x8xf32>
    %11 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_fc.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32], tp_offset = 0 : i64, tp_slice = [16, 32, 1, 16]} : () -> tensor<16xf32>
    %12 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_proj.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 32], tp_offset = 0 : i64, tp_slice = [16, 32, 8, 16]} : () -> tensor<8x16xf32>
    %13 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_proj.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %14 = "tdag.param"() {init = "ones", name = "ln_f.weight", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %15 = "tdag.param"() {init = "zeros", name = "ln_f.bias", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %16 = "tdag.input"() {first_sample = 0 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> tensor<2x2xi32>
    %17 = "tdag.embedding"(%16, %0, %1) {tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x2xi32>, tensor<256x8xf32>, tensor<2x8xf32>) -> tensor<2x2x8xf32>
    %18:3 = "tdag.layernorm"(%17, %2, %3) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    %19 = "tdag.linear"(%18#0, %4, %5) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<12x8xf32>, tensor<12xf32>) -> tensor<2x2x12xf32>
    %20:2 = "tdag.attention"(%19) {heads = 1 : i64, tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_heads_split = 2 : i64} : (tensor<2x2x12xf32>) -> (tensor<2x2x4xf32>, tensor<2x1x2xf32>)
    %21 = "tdag.matmul_nt"(%20#0, %6) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %22:2 = "comm.all_reduce"(%21) {group = [0, 1], stream = "tp", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_reduce} : (tensor<2x2x8xf32>) -> (tensor<2x2x8xf32>, !comm.token)
    "comm.wait"(%22#1) : (!comm.token) -> ()
    %23 = "tdag.bias_add"(%22#0, %7) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
    %24 = "tdag.add"(%17, %23) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %25:3 = "tdag.layernorm"(%24, %8, %9) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    %26 = "tdag.linear"(%25#0, %10, %11) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x2x16xf32>
    %27 = "tdag.gelu"(%26) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>) -> tensor<2x2x16xf32>
    %28 = "tdag.matmul_nt"(%27, %12) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>, tensor<8x16xf32>) -> tensor<2x2x8xf32>
    %29:2 = "comm.all_reduce"(%28) {group = [0, 1], stream = "tp", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_reduce} : (tensor<2x2x8xf32>) -> (tensor<2x2x8xf32>, !comm.token)
    "comm.wait"(%29#1) : (!comm.token) -> ()
    %30 = "tdag.bias_add"(%29#0, %13) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
    %31 = "tdag.add"(%24, %30) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %32:3 = "tdag.layernorm"(%31, %14, %15) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    %33 = "tdag.matmul_nt"(%32#0, %0) {tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<256x8xf32>) -> tensor<2x2x256xf32>
    %34 = "tdag.input"() {first_sample = 0 : i64, name = "targets", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : () -> tensor<2x2xi32>
    %35:2 = "tdag.cross_entropy"(%33, %34) {tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> (tensor<f32>, tensor<2x2x256xf32>)
    "tdag.output"(%35#0) {name = "loss", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<f32>) -> ()
    %36 = "tdag.cross_entropy_grad"(%35#1, %34) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}, total_rows = 4 : i64} : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> tensor<2x2x256xf32>
    %37 = "tdag.linear_grad_input"(%36, %0) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<256x8xf32>) -> tensor<2x2x8xf32>
    %38 = "tdag.linear_grad_weight"(%36, %32#0) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<2x2x8xf32>) -> tensor<256x8xf32>
    %39:3 = "tdag.layernorm_grad"(%37, %31, %14, %32#1, %32#2) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %40 = "tdag.linear_grad_input"(%39#0, %12) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x16xf32>) -> tensor<2x2x16xf32>
    %41 = "tdag.linear_grad_weight"(%39#0, %27) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x16xf32>) -> tensor<8x16xf32>
    %42 = "tdag.bias_grad"(%39#0) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>) -> tensor<8xf32>
    %43 = "tdag.gelu_grad"(%40, %26) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>, tensor<2x2x16xf32>) -> tensor<2x2x16xf32>
    %44 = "tdag.linear_grad_input"(%43, %10) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>, tensor<16x8xf32>) -> tensor<2x2x8xf32>
    %45:2 = "comm.all_reduce"(%44) {group = [0, 1], pass = "B", stream = "tp", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_reduce} : (tensor<2x2x8xf32>) -> (tensor<2x2x8xf32>, !comm.token)
    %46 = "tdag.linear_grad_weight"(%43, %25#0) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>, tensor<2x2x8xf32>) -> tensor<16x8xf32>
    %47 = "tdag.bias_grad"(%43) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>) -> tensor<16xf32>
    "comm.wait"(%45#1) : (!comm.token) -> ()
    %48:3 = "tdag.layernorm_grad"(%45#0, %24, %8, %25#1, %25#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %49 = "tdag.add"(%39#0, %48#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %50 = "tdag.linear_grad_input"(%49, %6) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x4xf32>) -> tensor<2x2x4xf32>
    %51 = "tdag.linear_grad_weight"(%49, %20#0) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x4xf32>) -> tensor<8x4xf32>
    %52 = "tdag.bias_grad"(%49) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>) -> tensor<8xf32>
    %53 = "tdag.attention_grad"(%50, %19, %20#0, %20#1) {heads = 1 : i64, pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_heads_split = 2 : i64} : (tensor<2x2x4xf32>, tensor<2x2x12xf32>, tensor<2x2x4xf32>, tensor<2x1x2xf32>) -> tensor<2x2x12xf32>
    %54 = "tdag.linear_grad_input"(%53, %4) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x12xf32>, tensor<12x8xf32>) -> tensor<2x2x8xf32>
    %55:2 = "comm.all_reduce"(%54) {group = [0, 1], pass = "B", stream = "tp", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_reduce} : (tensor<2x2x8xf32>) -> (tensor<2x2x8xf32>, !comm.token)
    %56 = "tdag.linear_grad_weight"(%53, %18#0) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x12xf32>, tensor<2x2x8xf32>) -> tensor<12x8xf32>
    %57 = "tdag.bias_grad"(%53) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x12xf32>) -> tensor<12xf32>
    "comm.wait"(%55#1) : (!comm.token) -> ()
    %58:3 = "tdag.layernorm_grad"(%55#0, %17, %2, %18#1, %18#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %59 = "tdag.add"(%49, %58#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %60:2 = "tdag.embedding_grad"(%59, %16) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> (tensor<256x8xf32>, tensor<2x8xf32>)
    %61 = "tdag.add"(%38, %60#0) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>) -> tensor<256x8xf32>
    %62 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %63 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    "tdag.adamw"(%0, %61, %62, %63) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, embed = 0 : i64}, tp_replica = 0 : i64} : (tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>) -> ()
    %64 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2x8xf32>
    %65 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2x8xf32>
    "tdag.adamw"(%1, %60#1, %64, %65) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, embed = 0 : i64}, tp_replica = 0 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> ()
    %66 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %67 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%2, %58#1, %66, %67) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64}, tp_replica = 0 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %68 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %69 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%3, %58#2, %68, %69) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64}, tp_replica = 0 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %70 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24, 8], tp_offset = 0 : i64, tp_slice = [32, 64, 3, 32]} : () -> tensor<12x8xf32>
    %71 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24, 8], tp_offset = 0 : i64, tp_slice = [32, 64, 3, 32]} : () -> tensor<12x8xf32>
    "tdag.adamw"(%4, %56, %70, %71) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<12x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>) -> ()
    %72 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24], tp_offset = 0 : i64, tp_slice = [4, 8, 3, 4]} : () -> tensor<12xf32>
    %73 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24], tp_offset = 0 : i64, tp_slice = [4, 8, 3, 4]} : () -> tensor<12xf32>
    "tdag.adamw"(%5, %57, %72, %73) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<12xf32>, tensor<12xf32>, tensor<12xf32>, tensor<12xf32>) -> ()
    %74 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 8], tp_offset = 0 : i64, tp_slice = [4, 8, 8, 4]} : () -> tensor<8x4xf32>
    %75 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 8], tp_offset = 0 : i64, tp_slice = [4, 8, 8, 4]} : () -> tensor<8x4xf32>
    "tdag.adamw"(%6, %51, %74, %75) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> ()
    %76 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %77 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%7, %52, %76, %77) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_replica = 0 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %78 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %79 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%8, %48#1, %78, %79) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64}, tp_replica = 0 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %80 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %81 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%9, %48#2, %80, %81) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64}, tp_replica = 0 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %82 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32, 8], tp_offset = 0 : i64, tp_slice = [128, 256, 1, 128]} : () -> tensor<16x8xf32>
    %83 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32, 8], tp_offset = 0 : i64, tp_slice = [128, 256, 1, 128]} : () -> tensor<16x8xf32>
    "tdag.adamw"(%10, %46, %82, %83) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> ()
    %84 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32], tp_offset = 0 : i64, tp_slice = [16, 32, 1, 16]} : () -> tensor<16xf32>
    %85 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32], tp_offset = 0 : i64, tp_slice = [16, 32, 1, 16]} : () -> tensor<16xf32>
    "tdag.adamw"(%11, %47, %84, %85) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %86 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 32], tp_offset = 0 : i64, tp_slice = [16, 32, 8, 16]} : () -> tensor<8x16xf32>
    %87 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 32], tp_offset = 0 : i64, tp_slice = [16, 32, 8, 16]} : () -> tensor<8x16xf32>
    "tdag.adamw"(%12, %41, %86, %87) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> ()
    %88 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %89 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%13, %42, %88, %89) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_replica = 0 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %90 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %91 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%14, %39#1, %90, %91) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, head = 0 : i64}, tp_replica = 0 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %92 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %93 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%15, %39#2, %92, %93) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, head = 0 : i64}, tp_replica = 0 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    return
  }
  func.func @device_1() attributes {piper.order = "test/fuzz/corpus/opt/gpt-tp2-dag.mlir:119:3"} {
    %0 = "tdag.param"() {init = "normal", name = "wte.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %1 = "tdag.param"() {init = "normal", name = "wpe.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2x8xf32>
    %2 = "tdag.param"() {init = "ones", name = "h.0.ln_1.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %3 = "tdag.param"() {init = "zeros", name = "h.0.ln_1.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %4 = "tdag.param"() {init = "normal", name = "h.0.attn.c_attn.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24, 8], tp_offset = 32 : i64, tp_slice = [32, 64, 3, 32]} : () -> tensor<12x8xf32>
    %5 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_attn.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24], tp_offset = 4 : i64, tp_slice = [4, 8, 3, 4]} : () -> tensor<12xf32>
    %6 = "tdag.param"() {init = "normal", name = "h.0.attn.c_proj.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 8], tp_offset = 4 : i64, tp_slice = [4, 8, 8, 4]} : () -> tensor<8x4xf32>
    %7 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_proj.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %8 = "tdag.param"() {init = "ones", name = "h.0.ln_2.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %9 = "tdag.param"() {init = "zeros", name = "h.0.ln_2.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %10 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_fc.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32, 8], tp_offset = 128 : i64, tp_slice = [128, 256, 1, 128]} : () -> tensor<16x8xf32>
    %11 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_fc.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32], tp_offset = 16 : i64, tp_slice = [16, 32, 1, 16]} : () -> tensor<16xf32>
    %12 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_proj.weight", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 32], tp_offset = 16 : i64, tp_slice = [16, 32, 8, 16]} : () -> tensor<8x16xf32>
    %13 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_proj.bias", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %14 = "tdag.param"() {init = "ones", name = "ln_f.weight", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %15 = "tdag.param"() {init = "zeros", name = "ln_f.bias", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %16 = "tdag.input"() {first_sample = 0 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> tensor<2x2xi32>
    %17 = "tdag.embedding"(%16, %0, %1) {tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x2xi32>, tensor<256x8xf32>, tensor<2x8xf32>) -> tensor<2x2x8xf32>
    %18:3 = "tdag.layernorm"(%17, %2, %3) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    %19 = "tdag.linear"(%18#0, %4, %5) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<12x8xf32>, tensor<12xf32>) -> tensor<2x2x12xf32>
    %20:2 = "tdag.attention"(%19) {heads = 1 : i64, tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_heads_split = 2 : i64} : (tensor<2x2x12xf32>) -> (tensor<2x2x4xf32>, tensor<2x1x2xf32>)
    %21 = "tdag.matmul_nt"(%20#0, %6) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<8x4xf32>) -> tensor<2x2x8xf32>
    %22:2 = "comm.all_reduce"(%21) {group = [0, 1], stream = "tp", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_reduce} : (tensor<2x2x8xf32>) -> (tensor<2x2x8xf32>, !comm.token)
    "comm.wait"(%22#1) : (!comm.token) -> ()
    %23 = "tdag.bias_add"(%22#0, %7) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
    %24 = "tdag.add"(%17, %23) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %25:3 = "tdag.layernorm"(%24, %8, %9) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    %26 = "tdag.linear"(%25#0, %10, %11) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x2x16xf32>
    %27 = "tdag.gelu"(%26) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>) -> tensor<2x2x16xf32>
    %28 = "tdag.matmul_nt"(%27, %12) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>, tensor<8x16xf32>) -> tensor<2x2x8xf32>
    %29:2 = "comm.all_reduce"(%28) {group = [0, 1], stream = "tp", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_reduce} : (tensor<2x2x8xf32>) -> (tensor<2x2x8xf32>, !comm.token)
    "comm.wait"(%29#1) : (!comm.token) -> ()
    %30 = "tdag.bias_add"(%29#0, %13) {tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
    %31 = "tdag.add"(%24, %30) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %32:3 = "tdag.layernorm"(%31, %14, %15) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>)
    %33 = "tdag.matmul_nt"(%32#0, %0) {tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<256x8xf32>) -> tensor<2x2x256xf32>
    %34 = "tdag.input"() {first_sample = 0 : i64, name = "targets", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : () -> tensor<2x2xi32>
    %35:2 = "tdag.cross_entropy"(%33, %34) {tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> (tensor<f32>, tensor<2x2x256xf32>)
    %36 = "tdag.cross_entropy_grad"(%35#1, %34) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}, total_rows = 4 : i64} : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> tensor<2x2x256xf32>
    %37 = "tdag.linear_grad_input"(%36, %0) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<256x8xf32>) -> tensor<2x2x8xf32>
    %38 = "tdag.linear_grad_weight"(%36, %32#0) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<2x2x8xf32>) -> tensor<256x8xf32>
    %39:3 = "tdag.layernorm_grad"(%37, %31, %14, %32#1, %32#2) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %40 = "tdag.linear_grad_input"(%39#0, %12) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x16xf32>) -> tensor<2x2x16xf32>
    %41 = "tdag.linear_grad_weight"(%39#0, %27) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x16xf32>) -> tensor<8x16xf32>
    %42 = "tdag.bias_grad"(%39#0) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>) -> tensor<8xf32>
    %43 = "tdag.gelu_grad"(%40, %26) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>, tensor<2x2x16xf32>) -> tensor<2x2x16xf32>
    %44 = "tdag.linear_grad_input"(%43, %10) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>, tensor<16x8xf32>) -> tensor<2x2x8xf32>
    %45:2 = "comm.all_reduce"(%44) {group = [0, 1], pass = "B", stream = "tp", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_reduce} : (tensor<2x2x8xf32>) -> (tensor<2x2x8xf32>, !comm.token)
    %46 = "tdag.linear_grad_weight"(%43, %25#0) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>, tensor<2x2x8xf32>) -> tensor<16x8xf32>
    %47 = "tdag.bias_grad"(%43) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x16xf32>) -> tensor<16xf32>
    "comm.wait"(%45#1) : (!comm.token) -> ()
    %48:3 = "tdag.layernorm_grad"(%45#0, %24, %8, %25#1, %25#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %49 = "tdag.add"(%39#0, %48#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %50 = "tdag.linear_grad_input"(%49, %6) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x4xf32>) -> tensor<2x2x4xf32>
    %51 = "tdag.linear_grad_weight"(%49, %20#0) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x4xf32>) -> tensor<8x4xf32>
    %52 = "tdag.bias_grad"(%49) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>) -> tensor<8xf32>
    %53 = "tdag.attention_grad"(%50, %19, %20#0, %20#1) {heads = 1 : i64, pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_heads_split = 2 : i64} : (tensor<2x2x4xf32>, tensor<2x2x12xf32>, tensor<2x2x4xf32>, tensor<2x1x2xf32>) -> tensor<2x2x12xf32>
    %54 = "tdag.linear_grad_input"(%53, %4) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x12xf32>, tensor<12x8xf32>) -> tensor<2x2x8xf32>
    %55:2 = "comm.all_reduce"(%54) {group = [0, 1], pass = "B", stream = "tp", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, tp_reduce} : (tensor<2x2x8xf32>) -> (tensor<2x2x8xf32>, !comm.token)
    %56 = "tdag.linear_grad_weight"(%53, %18#0) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x12xf32>, tensor<2x2x8xf32>) -> tensor<12x8xf32>
    %57 = "tdag.bias_grad"(%53) {pass = "B", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x12xf32>) -> tensor<12xf32>
    "comm.wait"(%55#1) : (!comm.token) -> ()
    %58:3 = "tdag.layernorm_grad"(%55#0, %17, %2, %18#1, %18#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>)
    %59 = "tdag.add"(%49, %58#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %60:2 = "tdag.embedding_grad"(%59, %16) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> (tensor<256x8xf32>, tensor<2x8xf32>)
    %61 = "tdag.add"(%38, %60#0) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>) -> tensor<256x8xf32>
    %62 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %63 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    "tdag.adamw"(%0, %61, %62, %63) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, embed = 0 : i64}, tp_replica = 1 : i64} : (tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>) -> ()
    %64 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2x8xf32>
    %65 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2x8xf32>
    "tdag.adamw"(%1, %60#1, %64, %65) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, embed = 0 : i64}, tp_replica = 1 : i64} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> ()
    %66 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %67 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%2, %58#1, %66, %67) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}, tp_replica = 1 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %68 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %69 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%3, %58#2, %68, %69) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}, tp_replica = 1 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %70 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24, 8], tp_offset = 32 : i64, tp_slice = [32, 64, 3, 32]} : () -> tensor<12x8xf32>
    %71 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24, 8], tp_offset = 32 : i64, tp_slice = [32, 64, 3, 32]} : () -> tensor<12x8xf32>
    "tdag.adamw"(%4, %56, %70, %71) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<12x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>) -> ()
    %72 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24], tp_offset = 4 : i64, tp_slice = [4, 8, 3, 4]} : () -> tensor<12xf32>
    %73 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [24], tp_offset = 4 : i64, tp_slice = [4, 8, 3, 4]} : () -> tensor<12xf32>
    "tdag.adamw"(%5, %57, %72, %73) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<12xf32>, tensor<12xf32>, tensor<12xf32>, tensor<12xf32>) -> ()
    %74 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 8], tp_offset = 4 : i64, tp_slice = [4, 8, 8, 4]} : () -> tensor<8x4xf32>
    %75 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 8], tp_offset = 4 : i64, tp_slice = [4, 8, 8, 4]} : () -> tensor<8x4xf32>
    "tdag.adamw"(%6, %51, %74, %75) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> ()
    %76 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %77 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%7, %52, %76, %77) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_replica = 1 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %78 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %79 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%8, %48#1, %78, %79) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}, tp_replica = 1 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %80 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %81 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%9, %48#2, %80, %81) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}, tp_replica = 1 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %82 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32, 8], tp_offset = 128 : i64, tp_slice = [128, 256, 1, 128]} : () -> tensor<16x8xf32>
    %83 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32, 8], tp_offset = 128 : i64, tp_slice = [128, 256, 1, 128]} : () -> tensor<16x8xf32>
    "tdag.adamw"(%10, %46, %82, %83) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> ()
    %84 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32], tp_offset = 16 : i64, tp_slice = [16, 32, 1, 16]} : () -> tensor<16xf32>
    %85 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [32], tp_offset = 16 : i64, tp_slice = [16, 32, 1, 16]} : () -> tensor<16xf32>
    "tdag.adamw"(%11, %47, %84, %85) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %86 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 32], tp_offset = 16 : i64, tp_slice = [16, 32, 8, 16]} : () -> tensor<8x16xf32>
    %87 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_full = [8, 32], tp_offset = 16 : i64, tp_slice = [16, 32, 8, 16]} : () -> tensor<8x16xf32>
    "tdag.adamw"(%12, %41, %86, %87) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> ()
    %88 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %89 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%13, %42, %88, %89) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, TP = 0 : i64, layer = 0 : i64}, tp_replica = 1 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %90 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %91 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%14, %39#1, %90, %91) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, head = 0 : i64}, tp_replica = 1 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %92 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %93 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%15, %39#2, %92, %93) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, head = 0 : i64}, tp_replica = 1 : i64} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    return
  }
}


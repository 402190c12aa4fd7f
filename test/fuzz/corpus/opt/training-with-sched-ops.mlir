module {
  func.func @gpt() {
    %0 = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<4x8xi32>
    %1 = "tdag.param"() {init = "normal", name = "wte.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x16xf32>
    %2 = "tdag.param"() {init = "normal", name = "wpe.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<8x16xf32>
    %3 = "tdag.embedding"(%0, %1, %2) {tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<4x8xi32>, tensor<256x16xf32>, tensor<8x16xf32>) -> tensor<4x8x16xf32>
    %4 = "tdag.param"() {init = "ones", name = "h.0.ln_1.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %5 = "tdag.param"() {init = "zeros", name = "h.0.ln_1.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %6 = "tdag.param"() {init = "normal", name = "h.0.attn.c_attn.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48x16xf32>
    %7 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_attn.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48xf32>
    %8 = "tdag.param"() {init = "normal", name = "h.0.attn.c_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x16xf32>
    %9 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_proj.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %10 = "tdag.param"() {init = "ones", name = "h.0.ln_2.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %11 = "tdag.param"() {init = "zeros", name = "h.0.ln_2.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %12 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_fc.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64x16xf32>
    %13 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_fc.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64xf32>
    %14 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x64xf32>
    %15 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_proj.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %16:3 = "tdag.layernorm"(%3, %4, %5) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
    %17 = "tdag.linear"(%16#0, %6, %7) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<4x8x48xf32>
    %18:2 = "tdag.attention"(%17) {heads = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x48xf32>) -> (tensor<4x8x16xf32>, tensor<4x2x8xf32>)
    %19 = "tdag.linear"(%18#0, %8, %9) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    %20 = "tdag.add"(%3, %19) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %21:3 = "tdag.layernorm"(%20, %10, %11) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
    %22 = "tdag.linear"(%21#0, %12, %13) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<4x8x64xf32>
    %23 = "tdag.gelu"(%22) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x64xf32>) -> tensor<4x8x64xf32>
    %24 = "tdag.linear"(%23, %14, %15) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    %25 = "tdag.add"(%20, %24) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %26 = "tdag.param"() {init = "ones", name = "h.1.ln_1.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %27 = "tdag.param"() {init = "zeros", name = "h.1.ln_1.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %28 = "tdag.param"() {init = "normal", name = "h.1.attn.c_attn.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48x16xf32>
    %29 = "tdag.param"() {init = "zeros", name = "h.1.attn.c_attn.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48xf32>
    %30 = "tdag.param"() {init = "normal", name = "h.1.attn.c_proj.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x16xf32>
    %31 = "tdag.param"() {init = "zeros", name = "h.1.attn.c_proj.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %32 = "tdag.param"() {init = "ones", name = "h.1.ln_2.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %33 = "tdag.param"() {init = "zeros", name = "h.1.ln_2.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %34 = "tdag.param"() {init = "normal", name = "h.1.mlp.c_fc.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64x16xf32>
    %35 = "tdag.param"() {init = "zeros", name = "h.1.mlp.c_fc.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64xf32>
    %36 = "tdag.param"() {init = "normal", name = "h.1.mlp.c_proj.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x64xf32>
    %37 = "tdag.param"() {init = "zeros", name = "h.1.mlp.c_proj.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %38:3 = "tdag.layernorm"(%25, %26, %27) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
    %39 = "tdag.linear"(%38#0, %28, %29) {tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<4x8x48xf32>
    %40:2 = "tdag.attention"(%39) {heads = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x48xf32>) -> (tensor<4x8x16xf32>, tensor<4x2x8xf32>)
    %41 = "tdag.linear"(%40#0, %30, %31) {tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    %42 = "tdag.add"(%25, %41) {tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %43:3 = "tdag.layernorm"(%42, %32, %33) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
    %44 = "tdag.linear"(%43#0, %34, %35) {tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<4x8x64xf32>
    %45 = "tdag.gelu"(%44) {tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x64xf32>) -> tensor<4x8x64xf32>
    %46 = "tdag.linear"(%45, %36, %37) {tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<4x8x16xf32>
    %47 = "tdag.add"(%42, %46) {tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %48 = "tdag.param"() {init = "ones", name = "ln_f.weight", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %49 = "tdag.param"() {init = "zeros", name = "ln_f.bias", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %50:3 = "tdag.layernorm"(%47, %48, %49) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
    %51 = "tdag.matmul_nt"(%50#0, %1) {tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<4x8x16xf32>, tensor<256x16xf32>) -> tensor<4x8x256xf32>
    %52 = "tdag.input"() {name = "targets", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<4x8xi32>
    %53:2 = "tdag.cross_entropy"(%51, %52) {tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<4x8x256xf32>, tensor<4x8xi32>) -> (tensor<f32>, tensor<4x8x256xf32>)
    "tdag.output"(%53#0) {name = "loss", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<f32>) -> ()
    %54 = "tdag.cross_entropy_grad"(%53#1, %52) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<4x8x256xf32>, tensor<4x8xi32>) -> tensor<4x8x256xf32>
    %55 = "tdag.linear_grad_input"(%54, %1) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<4x8x256xf32>, tensor<256x16xf32>) -> tensor<4x8x16xf32>
    %56 = "tdag.linear_grad_weight"(%54, %50#0) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<4x8x256xf32>, tensor<4x8x16xf32>) -> tensor<256x16xf32>
    %57:3 = "tdag.layernorm_grad"(%55, %47, %48, %50#1, %50#2) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %58 = "tdag.linear_grad_input"(%57#0, %36) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<16x64xf32>) -> tensor<4x8x64xf32>
    %59 = "tdag.linear_grad_weight"(%57#0, %45) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x64xf32>) -> tensor<16x64xf32>
    %60 = "tdag.bias_grad"(%57#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>) -> tensor<16xf32>
    %61 = "tdag.gelu_grad"(%58, %44) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x64xf32>, tensor<4x8x64xf32>) -> tensor<4x8x64xf32>
    %62 = "tdag.linear_grad_input"(%61, %34) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x64xf32>, tensor<64x16xf32>) -> tensor<4x8x16xf32>
    %63 = "tdag.linear_grad_weight"(%61, %43#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x64xf32>, tensor<4x8x16xf32>) -> tensor<64x16xf32>
    %64 = "tdag.bias_grad"(%61) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x64xf32>) -> tensor<64xf32>
    %65:3 = "tdag.layernorm_grad"(%62, %42, %32, %43#1, %43#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %66 = "tdag.add"(%57#0, %65#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %67 = "tdag.linear_grad_input"(%66, %30) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
    %68 = "tdag.linear_grad_weight"(%66, %40#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<16x16xf32>
    %69 = "tdag.bias_grad"(%66) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>) -> tensor<16xf32>
    %70 = "tdag.attention_grad"(%67, %39, %40#0, %40#1) {heads = 2 : i64, pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x48xf32>, tensor<4x8x16xf32>, tensor<4x2x8xf32>) -> tensor<4x8x48xf32>
    %71 = "tdag.linear_grad_input"(%70, %28) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x48xf32>, tensor<48x16xf32>) -> tensor<4x8x16xf32>
    %72 = "tdag.linear_grad_weight"(%70, %38#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x48xf32>, tensor<4x8x16xf32>) -> tensor<48x16xf32>
    %73 = "tdag.bias_grad"(%70) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x48xf32>) -> tensor<48xf32>
    %74:3 = "tdag.layernorm_grad"(%71, %25, %26, %38#1, %38#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %75 = "tdag.add"(%66, %74#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %76 = "tdag.linear_grad_input"(%75, %14) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<16x64xf32>) -> tensor<4x8x64xf32>
    %77 = "tdag.linear_grad_weight"(%75, %23) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x64xf32>) -> tensor<16x64xf32>
    %78 = "tdag.bias_grad"(%75) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>) -> tensor<16xf32>
    %79 = "tdag.gelu_grad"(%76, %22) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x64xf32>, tensor<4x8x64xf32>) -> tensor<4x8x64xf32>
    %80 = "tdag.linear_grad_input"(%79, %12) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x64xf32>, tensor<64x16xf32>) -> tensor<4x8x16xf32>
    %81 = "tdag.linear_grad_weight"(%79, %21#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x64xf32>, tensor<4x8x16xf32>) -> tensor<64x16xf32>
    %82 = "tdag.bias_grad"(%79) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x64xf32>) -> tensor<64xf32>
    %83:3 = "tdag.layernorm_grad"(%80, %20, %10, %21#1, %21#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %84 = "tdag.add"(%75, %83#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %85 = "tdag.linear_grad_input"(%84, %8) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<16x16xf32>) -> tensor<4x8x16xf32>
    %86 = "tdag.linear_grad_weight"(%84, %18#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<16x16xf32>
    %87 = "tdag.bias_grad"(%84) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>) -> tensor<16xf32>
    %88 = "tdag.attention_grad"(%85, %17, %18#0, %18#1) {heads = 2 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x48xf32>, tensor<4x8x16xf32>, tensor<4x2x8xf32>) -> tensor<4x8x48xf32>
    %89 = "tdag.linear_grad_input"(%88, %6) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x48xf32>, tensor<48x16xf32>) -> tensor<4x8x16xf32>
    %90 = "tdag.linear_grad_weight"(%88, %16#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x48xf32>, tensor<4x8x16xf32>) -> tensor<48x16xf32>
    %91 = "tdag.bias_grad"(%88) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x48xf32>) -> tensor<48xf32>
    %92:3 = "tdag.layernorm_grad"(%89, %3, %4, %16#1, %16#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %93 = "tdag.add"(%84, %92#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
    %94:2 = "tdag.embedding_grad"(%93, %0) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<4x8x16xf32>, tensor<4x8xi32>) -> (tensor<256x16xf32>, tensor<8x16xf32>)
    %95 = "tdag.add"(%56, %94#0) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %96 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x16xf32>
    %97 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x16xf32>
    "tdag.adamw"(%1, %95, %96, %97) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>, tensor<256x16xf32>, tensor<256x16xf32>) -> ()
    %98 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<8x16xf32>
    %99 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<8x16xf32>
    "tdag.adamw"(%2, %94#1, %98, %99) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> ()
    %100 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %101 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%4, %92#1, %100, %101) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %102 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %103 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%5, %92#2, %102, %103) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %104 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48x16xf32>
    %105 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48x16xf32>
    "tdag.adamw"(%6, %90, %104, %105) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>, tensor<48x16xf32>, tensor<48x16xf32>) -> ()
    %106 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48xf32>
    %107 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48xf32>
    "tdag.adamw"(%7, %91, %106, %107) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48xf32>, tensor<48xf32>, tensor<48xf32>, tensor<48xf32>) -> ()
    %108 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x16xf32>
    %109 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x16xf32>
    "tdag.adamw"(%8, %86, %108, %109) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> ()
    %110 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %111 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%9, %87, %110, %111) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %112 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %113 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%10, %83#1, %112, %113) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %114 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %115 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%11, %83#2, %114, %115) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %116 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64x16xf32>
    %117 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64x16xf32>
    "tdag.adamw"(%12, %81, %116, %117) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x16xf32>) -> ()
    %118 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64xf32>
    %119 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64xf32>
    "tdag.adamw"(%13, %82, %118, %119) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> ()
    %120 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x64xf32>
    %121 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x64xf32>
    "tdag.adamw"(%14, %77, %120, %121) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> ()
    %122 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %123 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%15, %78, %122, %123) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %124 = "tdag.adam_state"() {param = "h.1.ln_1.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %125 = "tdag.adam_state"() {param = "h.1.ln_1.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%26, %74#1, %124, %125) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %126 = "tdag.adam_state"() {param = "h.1.ln_1.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %127 = "tdag.adam_state"() {param = "h.1.ln_1.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%27, %74#2, %126, %127) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %128 = "tdag.adam_state"() {param = "h.1.attn.c_attn.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48x16xf32>
    %129 = "tdag.adam_state"() {param = "h.1.attn.c_attn.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48x16xf32>
    "tdag.adamw"(%28, %72, %128, %129) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>, tensor<48x16xf32>, tensor<48x16xf32>) -> ()
    %130 = "tdag.adam_state"() {param = "h.1.attn.c_attn.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48xf32>
    %131 = "tdag.adam_state"() {param = "h.1.attn.c_attn.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48xf32>
    "tdag.adamw"(%29, %73, %130, %131) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48xf32>, tensor<48xf32>, tensor<48xf32>, tensor<48xf32>) -> ()
    %132 = "tdag.adam_state"() {param = "h.1.attn.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x16xf32>
    %133 = "tdag.adam_state"() {param = "h.1.attn.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x16xf32>
    "tdag.adamw"(%30, %68, %132, %133) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> ()
    %134 = "tdag.adam_state"() {param = "h.1.attn.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %135 = "tdag.adam_state"() {param = "h.1.attn.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%31, %69, %134, %135) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %136 = "tdag.adam_state"() {param = "h.1.ln_2.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %137 = "tdag.adam_state"() {param = "h.1.ln_2.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%32, %65#1, %136, %137) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %138 = "tdag.adam_state"() {param = "h.1.ln_2.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %139 = "tdag.adam_state"() {param = "h.1.ln_2.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%33, %65#2, %138, %139) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %140 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64x16xf32>
    %141 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64x16xf32>
    "tdag.adamw"(%34, %63, %140, %141) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x16xf32>) -> ()
    %142 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64xf32>
    %143 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64xf32>
    "tdag.adamw"(%35, %64, %142, %143) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> ()
    %144 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x64xf32>
    %145 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x64xf32>
    "tdag.adamw"(%36, %59, %144, %145) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> ()
    %146 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %147 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%37, %60, %146, %147) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %148 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %149 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%48, %57#1, %148, %149) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %150 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %151 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%49, %57#2, %150, %151) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    return
  }
  "sched.split"() {dim_name = "mb", filter = {PP = "*"}, num_microbatches = 2 : i64} : () -> ()
  "sched.place"() {devices = [0, 2], filter = {PP = 0 : i64}, stream = "compute"} : () -> ()
  "sched.place"() {devices = [1, 3], filter = {PP = 1 : i64}, stream = "compute"} : () -> ()
  "sched.replicate"() {devices = [0, 2], filter = {PP = 0 : i64}, gather_stream = "dp", reduce_stream = "dp", shard_optim} : () -> ()
  "sched.replicate"() {devices = [1, 3], filter = {PP = 1 : i64}, gather_stream = "dp", reduce_stream = "dp", shard_optim} : () -> ()
  "sched.order"() {filters = [[{PASS = "F", PP = 0 : i64, mb = 0 : i64}], [{PASS = "F", PP = 0 : i64, mb = 1 : i64}], [{PASS = "B", PP = 0 : i64, mb = 0 : i64}], [{PASS = "B", PP = 0 : i64, mb = 1 : i64}]]} : () -> ()
  "sched.order"() {filters = [[{PASS = "F", PP = 1 : i64, mb = 0 : i64}], [{PASS = "B", PP = 1 : i64, mb = 0 : i64}], [{PASS = "F", PP = 1 : i64, mb = 1 : i64}], [{PASS = "B", PP = 1 : i64, mb = 1 : i64}]]} : () -> ()
}


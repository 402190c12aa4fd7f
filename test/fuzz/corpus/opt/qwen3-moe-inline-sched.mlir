module {
  func.func @qwen3_moe() {
    %0 = "tdag.input"() {name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<4x2xi32>
    %1 = "tdag.param"() {init = "normal", name = "model.embed_tokens.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %2 = "tdag.embed"(%0, %1) {tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<4x2xi32>, tensor<256x8xf32>) -> tensor<4x2x8xf32>
    %3 = "tdag.param"() {init = "ones", name = "model.layers.0.input_layernorm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %4 = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.q_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %5 = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.k_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %6 = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.v_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %7 = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.o_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %8 = "tdag.param"() {init = "ones", name = "model.layers.0.self_attn.q_norm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %9 = "tdag.param"() {init = "ones", name = "model.layers.0.self_attn.k_norm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %10 = "tdag.param"() {init = "ones", name = "model.layers.0.post_attention_layernorm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %11:2 = "tdag.rmsnorm"(%2, %3) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8xf32>) -> (tensor<4x2x8xf32>, tensor<4x2x1xf32>)
    %12 = "tdag.matmul_nt"(%11#0, %4) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32>
    %13 = "tdag.matmul_nt"(%11#0, %5) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x8xf32>) -> tensor<4x2x4xf32>
    %14 = "tdag.matmul_nt"(%11#0, %6) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x8xf32>) -> tensor<4x2x4xf32>
    %15:2 = "tdag.rmsnorm"(%12, %8) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4xf32>) -> (tensor<4x2x8xf32>, tensor<4x2x2xf32>)
    %16:2 = "tdag.rmsnorm"(%13, %9) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x4xf32>, tensor<4xf32>) -> (tensor<4x2x4xf32>, tensor<4x2x1xf32>)
    %17 = "tdag.rope"(%15#0) {head_dim = 4 : i64, tags = {PP = 0 : i64, layer = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %18 = "tdag.rope"(%16#0) {head_dim = 4 : i64, tags = {PP = 0 : i64, layer = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<4x2x4xf32>) -> tensor<4x2x4xf32>
    %19:2 = "tdag.gqa_attention"(%17, %18, %14) {heads = 2 : i64, kv_heads = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>) -> (tensor<4x2x8xf32>, tensor<4x2x2xf32>)
    %20 = "tdag.matmul_nt"(%19#0, %7) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32>
    %21 = "tdag.add"(%2, %20) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %22:2 = "tdag.rmsnorm"(%21, %10) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8xf32>) -> (tensor<4x2x8xf32>, tensor<4x2x1xf32>)
    %23 = "tdag.param"() {init = "normal", name = "model.layers.0.mlp.gate.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<2x8xf32>
    %24 = "tdag.param"() {init = "normal", name = "model.layers.0.mlp.experts.0.gate_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %25 = "tdag.param"() {init = "normal", name = "model.layers.0.mlp.experts.1.gate_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %26 = "tdag.param"() {init = "normal", name = "model.layers.0.mlp.experts.0.up_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %27 = "tdag.param"() {init = "normal", name = "model.layers.0.mlp.experts.1.up_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %28 = "tdag.param"() {init = "normal", name = "model.layers.0.mlp.experts.0.down_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    %29 = "tdag.param"() {init = "normal", name = "model.layers.0.mlp.experts.1.down_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    %30 = "tdag.matmul_nt"(%22#0, %23) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<2x8xf32>) -> tensor<4x2x2xf32>
    %31:2 = "tdag.moe_topk"(%30) {tags = {PP = 0 : i64, layer = 0 : i64}, top_k = 1 : i64} : (tensor<4x2x2xf32>) -> (tensor<4x2x1xf32>, tensor<4x2x1xi32>)
    %32:2 = "tdag.moe_dispatch"(%22#0, %31#1) {num_experts = 2 : i64, tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x1xi32>) -> (tensor<8x8xf32>, tensor<2xi32>)
    %33:2 = "tdag.moe_experts"(%32#0, %32#1, %24, %25, %26, %27, %28, %29) {operandSegmentSizes = array<i32: 1, 1, 2, 2, 2>, tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<2xi32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>)
    %34 = "tdag.moe_combine"(%33#0, %31#0, %31#1) {num_experts = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<4x2x1xf32>, tensor<4x2x1xi32>) -> tensor<4x2x8xf32>
    %35 = "tdag.add"(%21, %34) {tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %36 = "tdag.param"() {init = "ones", name = "model.norm.weight", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %37:2 = "tdag.rmsnorm"(%35, %36) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8xf32>) -> (tensor<4x2x8xf32>, tensor<4x2x1xf32>)
    %38 = "tdag.param"() {init = "normal", name = "lm_head.weight", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<256x8xf32>
    %39 = "tdag.matmul_nt"(%37#0, %38) {tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<4x2x8xf32>, tensor<256x8xf32>) -> tensor<4x2x256xf32>
    %40 = "tdag.input"() {name = "targets", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<4x2xi32>
    %41:2 = "tdag.cross_entropy"(%39, %40) {tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<4x2x256xf32>, tensor<4x2xi32>) -> (tensor<f32>, tensor<4x2x256xf32>)
    "tdag.output"(%41#0) {name = "loss", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<f32>) -> ()
    %42 = "tdag.cross_entropy_grad"(%41#1, %40) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<4x2x256xf32>, tensor<4x2xi32>) -> tensor<4x2x256xf32>
    %43 = "tdag.linear_grad_input"(%42, %38) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<4x2x256xf32>, tensor<256x8xf32>) -> tensor<4x2x8xf32>
    %44 = "tdag.linear_grad_weight"(%42, %37#0) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<4x2x256xf32>, tensor<4x2x8xf32>) -> tensor<256x8xf32>
    %45:2 = "tdag.rmsnorm_grad"(%43, %35, %36, %37#1) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>, tensor<8xf32>, tensor<4x2x1xf32>) -> (tensor<4x2x8xf32>, tensor<8xf32>)
    %46:2 = "tdag.moe_combine_grad"(%45#0, %33#0, %31#0, %31#1) {num_experts = 2 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8x8xf32>, tensor<4x2x1xf32>, tensor<4x2x1xi32>) -> (tensor<8x8xf32>, tensor<4x2x1xf32>)
    %47 = "tdag.moe_experts_grad_input"(%46#0, %32#1, %33#1, %24, %25, %26, %27, %28, %29) {operandSegmentSizes = array<i32: 1, 1, 1, 2, 2, 2>, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<2xi32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
    %48:3 = "tdag.moe_experts_grad_weight"(%46#0, %32#0, %32#1, %33#1, %28) {expert = 0 : i64, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<2xi32>, tensor<8x8xf32>, tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>)
    %49:3 = "tdag.moe_experts_grad_weight"(%46#0, %32#0, %32#1, %33#1, %29) {expert = 1 : i64, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<2xi32>, tensor<8x8xf32>, tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>)
    %50 = "tdag.moe_dispatch_grad"(%47, %31#1) {num_experts = 2 : i64, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<4x2x1xi32>) -> tensor<4x2x8xf32>
    %51 = "tdag.moe_topk_grad"(%46#1, %31#0, %31#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x1xf32>, tensor<4x2x1xf32>, tensor<4x2x1xi32>) -> tensor<4x2x2xf32>
    %52 = "tdag.linear_grad_input"(%51, %23) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x2xf32>, tensor<2x8xf32>) -> tensor<4x2x8xf32>
    %53 = "tdag.add"(%50, %52) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %54 = "tdag.linear_grad_weight"(%51, %22#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x2xf32>, tensor<4x2x8xf32>) -> tensor<2x8xf32>
    %55:2 = "tdag.rmsnorm_grad"(%53, %21, %10, %22#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>, tensor<8xf32>, tensor<4x2x1xf32>) -> (tensor<4x2x8xf32>, tensor<8xf32>)
    %56 = "tdag.add"(%45#0, %55#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %57 = "tdag.linear_grad_input"(%56, %7) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32>
    %58 = "tdag.linear_grad_weight"(%56, %19#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<8x8xf32>
    %59:3 = "tdag.gqa_attention_grad"(%57, %17, %18, %14, %19#0, %19#1) {heads = 2 : i64, kv_heads = 1 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x2x8xf32>, tensor<4x2x2xf32>) -> (tensor<4x2x8xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>)
    %60 = "tdag.rope_grad"(%59#1) {head_dim = 4 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<4x2x4xf32>) -> tensor<4x2x4xf32>
    %61 = "tdag.rope_grad"(%59#0) {head_dim = 4 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %62:2 = "tdag.rmsnorm_grad"(%60, %13, %9, %16#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4xf32>, tensor<4x2x1xf32>) -> (tensor<4x2x4xf32>, tensor<4xf32>)
    %63:2 = "tdag.rmsnorm_grad"(%61, %12, %8, %15#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>, tensor<4xf32>, tensor<4x2x2xf32>) -> (tensor<4x2x8xf32>, tensor<4xf32>)
    %64 = "tdag.linear_grad_input"(%59#2, %6) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x4xf32>, tensor<4x8xf32>) -> tensor<4x2x8xf32>
    %65 = "tdag.linear_grad_weight"(%59#2, %11#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x4xf32>, tensor<4x2x8xf32>) -> tensor<4x8xf32>
    %66 = "tdag.linear_grad_input"(%62#0, %5) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x4xf32>, tensor<4x8xf32>) -> tensor<4x2x8xf32>
    %67 = "tdag.add"(%64, %66) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %68 = "tdag.linear_grad_weight"(%62#0, %11#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x4xf32>, tensor<4x2x8xf32>) -> tensor<4x8xf32>
    %69 = "tdag.linear_grad_input"(%63#0, %4) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32>
    %70 = "tdag.add"(%67, %69) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %71 = "tdag.linear_grad_weight"(%63#0, %11#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<8x8xf32>
    %72:2 = "tdag.rmsnorm_grad"(%70, %2, %3, %11#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>, tensor<8xf32>, tensor<4x2x1xf32>) -> (tensor<4x2x8xf32>, tensor<8xf32>)
    %73 = "tdag.add"(%56, %72#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %74 = "tdag.embed_grad"(%73, %0) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2xi32>) -> tensor<256x8xf32>
    %75 = "tdag.adam_state"() {param = "model.embed_tokens.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %76 = "tdag.adam_state"() {param = "model.embed_tokens.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    "tdag.adamw"(%1, %74, %75, %76) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>) -> ()
    %77 = "tdag.adam_state"() {param = "model.layers.0.input_layernorm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %78 = "tdag.adam_state"() {param = "model.layers.0.input_layernorm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%3, %72#1, %77, %78) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %79 = "tdag.adam_state"() {param = "model.layers.0.self_attn.q_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %80 = "tdag.adam_state"() {param = "model.layers.0.self_attn.q_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    "tdag.adamw"(%4, %71, %79, %80) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> ()
    %81 = "tdag.adam_state"() {param = "model.layers.0.self_attn.k_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %82 = "tdag.adam_state"() {param = "model.layers.0.self_attn.k_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%5, %68, %81, %82) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %83 = "tdag.adam_state"() {param = "model.layers.0.self_attn.v_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %84 = "tdag.adam_state"() {param = "model.layers.0.self_attn.v_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%6, %65, %83, %84) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %85 = "tdag.adam_state"() {param = "model.layers.0.self_attn.o_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %86 = "tdag.adam_state"() {param = "model.layers.0.self_attn.o_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    "tdag.adamw"(%7, %58, %85, %86) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> ()
    %87 = "tdag.adam_state"() {param = "model.layers.0.self_attn.q_norm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %88 = "tdag.adam_state"() {param = "model.layers.0.self_attn.q_norm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    "tdag.adamw"(%8, %63#1, %87, %88) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
    %89 = "tdag.adam_state"() {param = "model.layers.0.self_attn.k_norm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %90 = "tdag.adam_state"() {param = "model.layers.0.self_attn.k_norm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    "tdag.adamw"(%9, %62#1, %89, %90) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
    %91 = "tdag.adam_state"() {param = "model.layers.0.post_attention_layernorm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %92 = "tdag.adam_state"() {param = "model.layers.0.post_attention_layernorm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%10, %55#1, %91, %92) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %93 = "tdag.adam_state"() {param = "model.layers.0.mlp.gate.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<2x8xf32>
    %94 = "tdag.adam_state"() {param = "model.layers.0.mlp.gate.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<2x8xf32>
    "tdag.adamw"(%23, %54, %93, %94) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> ()
    %95 = "tdag.adam_state"() {param = "model.layers.0.mlp.experts.0.gate_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %96 = "tdag.adam_state"() {param = "model.layers.0.mlp.experts.0.gate_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%24, %48#0, %95, %96) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %97 = "tdag.adam_state"() {param = "model.layers.0.mlp.experts.1.gate_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %98 = "tdag.adam_state"() {param = "model.layers.0.mlp.experts.1.gate_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%25, %49#0, %97, %98) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %99 = "tdag.adam_state"() {param = "model.layers.0.mlp.experts.0.up_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %100 = "tdag.adam_state"() {param = "model.layers.0.mlp.experts.0.up_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%26, %48#1, %99, %100) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %101 = "tdag.adam_state"() {param = "model.layers.0.mlp.experts.1.up_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %102 = "tdag.adam_state"() {param = "model.layers.0.mlp.experts.1.up_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%27, %49#1, %101, %102) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %103 = "tdag.adam_state"() {param = "model.layers.0.mlp.experts.0.down_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    %104 = "tdag.adam_state"() {param = "model.layers.0.mlp.experts.0.down_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    "tdag.adamw"(%28, %48#2, %103, %104) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> ()
    %105 = "tdag.adam_state"() {param = "model.layers.0.mlp.experts.1.down_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    %106 = "tdag.adam_state"() {param = "model.layers.0.mlp.experts.1.down_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    "tdag.adamw"(%29, %49#2, %105, %106) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> ()
    %107 = "tdag.adam_state"() {param = "model.norm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %108 = "tdag.adam_state"() {param = "model.norm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%36, %45#1, %107, %108) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %109 = "tdag.adam_state"() {param = "lm_head.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<256x8xf32>
    %110 = "tdag.adam_state"() {param = "lm_head.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<256x8xf32>
    "tdag.adamw"(%38, %44, %109, %110) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>) -> ()
    return
  }
  "sched.place"() {devices = [0, 1], filter = {PP = 0 : i64}} : () -> ()
  "sched.replicate"() {devices = [0, 1], filter = {PP = 0 : i64}} : () -> ()
  "sched.shard"() {devices = [0, 1], filter = {EP = "*", PP = 0 : i64}, stream = "ep"} : () -> ()
}

module attributes {piper.devices = 2 : i64} {
  func.func @qwen3_moe() {
    %0 = "tdag.input"() {devices = [0, 1], first_sample = 0 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> tensor<4x2xi32>
    %1 = "tdag.param"() {devices = [0, 1], init = "normal", name = "model.embed_tokens.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %2 = "tdag.embed"(%0, %1) {devices = [0, 1], tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<4x2xi32>, tensor<256x8xf32>) -> tensor<4x2x8xf32>
    %3 = "tdag.param"() {devices = [0, 1], init = "ones", name = "model.layers.0.input_layernorm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %4 = "tdag.param"() {devices = [0, 1], init = "normal", name = "model.layers.0.self_attn.q_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %5 = "tdag.param"() {devices = [0, 1], init = "normal", name = "model.layers.0.self_attn.k_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %6 = "tdag.param"() {devices = [0, 1], init = "normal", name = "model.layers.0.self_attn.v_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %7 = "tdag.param"() {devices = [0, 1], init = "normal", name = "model.layers.0.self_attn.o_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %8 = "tdag.param"() {devices = [0, 1], init = "ones", name = "model.layers.0.self_attn.q_norm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %9 = "tdag.param"() {devices = [0, 1], init = "ones", name = "model.layers.0.self_attn.k_norm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %10 = "tdag.param"() {devices = [0, 1], init = "ones", name = "model.layers.0.post_attention_layernorm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %11:2 = "tdag.rmsnorm"(%2, %3) {devices = [0, 1], eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8xf32>) -> (tensor<4x2x8xf32>, tensor<4x2x1xf32>)
    %12 = "tdag.matmul_nt"(%11#0, %4) {devices = [0, 1], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32>
    %13 = "tdag.matmul_nt"(%11#0, %5) {devices = [0, 1], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x8xf32>) -> tensor<4x2x4xf32>
    %14 = "tdag.matmul_nt"(%11#0, %6) {devices = [0, 1], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x8xf32>) -> tensor<4x2x4xf32>
    %15:2 = "tdag.rmsnorm"(%12, %8) {devices = [0, 1], eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4xf32>) -> (tensor<4x2x8xf32>, tensor<4x2x2xf32>)
    %16:2 = "tdag.rmsnorm"(%13, %9) {devices = [0, 1], eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x4xf32>, tensor<4xf32>) -> (tensor<4x2x4xf32>, tensor<4x2x1xf32>)
    %17 = "tdag.rope"(%15#0) {devices = [0, 1], head_dim = 4 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %18 = "tdag.rope"(%16#0) {devices = [0, 1], head_dim = 4 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<4x2x4xf32>) -> tensor<4x2x4xf32>
    %19:2 = "tdag.gqa_attention"(%17, %18, %14) {devices = [0, 1], heads = 2 : i64, kv_heads = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>) -> (tensor<4x2x8xf32>, tensor<4x2x2xf32>)
    %20 = "tdag.matmul_nt"(%19#0, %7) {devices = [0, 1], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32>
    %21 = "tdag.add"(%2, %20) {devices = [0, 1], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %22:2 = "tdag.rmsnorm"(%21, %10) {devices = [0, 1], eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8xf32>) -> (tensor<4x2x8xf32>, tensor<4x2x1xf32>)
    %23 = "tdag.param"() {devices = [0, 1], init = "normal", name = "model.layers.0.mlp.gate.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<2x8xf32>
    %24 = "tdag.param"() {devices = [0], ep_local, init = "normal", name = "model.layers.0.mlp.experts.0.gate_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %25 = "tdag.param"() {devices = [1], ep_local, init = "normal", name = "model.layers.0.mlp.experts.1.gate_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %26 = "tdag.param"() {devices = [0], ep_local, init = "normal", name = "model.layers.0.mlp.experts.0.up_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %27 = "tdag.param"() {devices = [1], ep_local, init = "normal", name = "model.layers.0.mlp.experts.1.up_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %28 = "tdag.param"() {devices = [0], ep_local, init = "normal", name = "model.layers.0.mlp.experts.0.down_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    %29 = "tdag.param"() {devices = [1], ep_local, init = "normal", name = "model.layers.0.mlp.experts.1.down_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    %30 = "tdag.matmul_nt"(%22#0, %23) {devices = [0, 1], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<2x8xf32>) -> tensor<4x2x2xf32>
    %31:2 = "tdag.moe_topk"(%30) {devices = [0, 1], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, top_k = 1 : i64} : (tensor<4x2x2xf32>) -> (tensor<4x2x1xf32>, tensor<4x2x1xi32>)
    %32:2 = "tdag.moe_dispatch"(%22#0, %31#1) {devices = [0, 1], groups = 2 : i64, num_experts = 2 : i64, tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x1xi32>) -> (tensor<16x8xf32>, tensor<2xi32>)
    %33:2 = "comm.all_to_all"(%32#1) {devices = [0, 1], group = [0, 1], stream = "ep", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2xi32>) -> (tensor<2xi32>, !comm.token)
    %34:2 = "comm.all_to_all"(%32#0) {devices = [0, 1], group = [0, 1], stream = "ep", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x8xf32>) -> (tensor<16x8xf32>, !comm.token)
    %35:2 = "tdag.moe_experts"(%34#0, %33#0, %24, %25, %26, %27, %28, %29) {devices = [0, 1], groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 2, 2, 2>, tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x8xf32>, tensor<2xi32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>)
    %36:2 = "comm.all_to_all"(%35#0) {devices = [0, 1], group = [0, 1], stream = "ep", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x8xf32>) -> (tensor<16x8xf32>, !comm.token)
    %37 = "tdag.moe_combine"(%36#0, %31#0, %31#1) {devices = [0, 1], groups = 2 : i64, num_experts = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x8xf32>, tensor<4x2x1xf32>, tensor<4x2x1xi32>) -> tensor<4x2x8xf32>
    %38 = "tdag.add"(%21, %37) {devices = [0, 1], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %39 = "tdag.param"() {devices = [0, 1], init = "ones", name = "model.norm.weight", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %40:2 = "tdag.rmsnorm"(%38, %39) {devices = [0, 1], eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8xf32>) -> (tensor<4x2x8xf32>, tensor<4x2x1xf32>)
    %41 = "tdag.param"() {devices = [0, 1], init = "normal", name = "lm_head.weight", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<256x8xf32>
    %42 = "tdag.matmul_nt"(%40#0, %41) {devices = [0, 1], tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<256x8xf32>) -> tensor<4x2x256xf32>
    %43 = "tdag.input"() {devices = [0, 1], first_sample = 0 : i64, name = "targets", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : () -> tensor<4x2xi32>
    %44:2 = "tdag.cross_entropy"(%42, %43) {devices = [0, 1], tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<4x2x256xf32>, tensor<4x2xi32>) -> (tensor<f32>, tensor<4x2x256xf32>)
    "tdag.output"(%44#0) {devices = [0, 1], name = "loss", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<f32>) -> ()
    %45 = "tdag.cross_entropy_grad"(%44#1, %43) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}, total_rows = 8 : i64} : (tensor<4x2x256xf32>, tensor<4x2xi32>) -> tensor<4x2x256xf32>
    %46 = "tdag.linear_grad_input"(%45, %41) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<4x2x256xf32>, tensor<256x8xf32>) -> tensor<4x2x8xf32>
    %47 = "tdag.bucket"() {devices = [0, 1], pass = "B"} : () -> tensor<4336xf32>
    %48 = "tdag.linear_grad_weight"(%45, %40#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<4x2x256xf32>, tensor<4x2x8xf32>) -> tensor<256x8xf32>
    %49 = "tdag.pack_into"(%47, %48) {devices = [0, 1], offset = 0 : i64, pass = "B"} : (tensor<4336xf32>, tensor<256x8xf32>) -> tensor<4336xf32>
    %50:2 = "tdag.rmsnorm_grad"(%46, %38, %39, %40#1) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>, tensor<8xf32>, tensor<4x2x1xf32>) -> (tensor<4x2x8xf32>, tensor<8xf32>)
    %51 = "tdag.pack_into"(%49, %50#1) {devices = [0, 1], offset = 2048 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8xf32>) -> tensor<4336xf32>
    %52:2 = "tdag.moe_combine_grad"(%50#0, %36#0, %31#0, %31#1) {devices = [0, 1], groups = 2 : i64, num_experts = 2 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<16x8xf32>, tensor<4x2x1xf32>, tensor<4x2x1xi32>) -> (tensor<16x8xf32>, tensor<4x2x1xf32>)
    %53:2 = "comm.all_to_all"(%52#0) {devices = [0, 1], group = [0, 1], pass = "B", stream = "ep", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x8xf32>) -> (tensor<16x8xf32>, !comm.token)
    %54 = "tdag.moe_experts_grad_input"(%53#0, %33#0, %35#1, %24, %25, %26, %27, %28, %29) {devices = [0, 1], groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 2, 2, 2>, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x8xf32>, tensor<2xi32>, tensor<16x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<16x8xf32>
    %55:2 = "comm.all_to_all"(%54) {devices = [0, 1], group = [0, 1], pass = "B", stream = "ep", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x8xf32>) -> (tensor<16x8xf32>, !comm.token)
    %56:3 = "tdag.moe_experts_grad_weight"(%53#0, %34#0, %33#0, %35#1, %28) {devices = [0], ep_local, expert = 0 : i64, groups = 2 : i64, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<2xi32>, tensor<16x8xf32>, tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>)
    %57:3 = "tdag.moe_experts_grad_weight"(%53#0, %34#0, %33#0, %35#1, %29) {devices = [1], ep_local, expert = 0 : i64, groups = 2 : i64, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x8xf32>, tensor<16x8xf32>, tensor<2xi32>, tensor<16x8xf32>, tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>)
    %58 = "tdag.moe_dispatch_grad"(%55#0, %31#1) {devices = [0, 1], groups = 2 : i64, num_experts = 2 : i64, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x8xf32>, tensor<4x2x1xi32>) -> tensor<4x2x8xf32>
    %59 = "tdag.moe_topk_grad"(%52#1, %31#0, %31#1) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x1xf32>, tensor<4x2x1xf32>, tensor<4x2x1xi32>) -> tensor<4x2x2xf32>
    %60 = "tdag.linear_grad_input"(%59, %23) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x2xf32>, tensor<2x8xf32>) -> tensor<4x2x8xf32>
    %61 = "tdag.add"(%58, %60) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %62 = "tdag.linear_grad_weight"(%59, %22#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x2xf32>, tensor<4x2x8xf32>) -> tensor<2x8xf32>
    %63 = "tdag.pack_into"(%51, %62) {devices = [0, 1], offset = 2056 : i64, pass = "B"} : (tensor<4336xf32>, tensor<2x8xf32>) -> tensor<4336xf32>
    %64:2 = "tdag.rmsnorm_grad"(%61, %21, %10, %22#1) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>, tensor<8xf32>, tensor<4x2x1xf32>) -> (tensor<4x2x8xf32>, tensor<8xf32>)
    %65 = "tdag.pack_into"(%63, %64#1) {devices = [0, 1], offset = 2072 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8xf32>) -> tensor<4336xf32>
    %66 = "tdag.add"(%50#0, %64#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %67 = "tdag.linear_grad_input"(%66, %7) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32>
    %68 = "tdag.linear_grad_weight"(%66, %19#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<8x8xf32>
    %69 = "tdag.pack_into"(%65, %68) {devices = [0, 1], offset = 2080 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8x8xf32>) -> tensor<4336xf32>
    %70:3 = "tdag.gqa_attention_grad"(%67, %17, %18, %14, %19#0, %19#1) {devices = [0, 1], heads = 2 : i64, kv_heads = 1 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x2x8xf32>, tensor<4x2x2xf32>) -> (tensor<4x2x8xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>)
    %71 = "tdag.rope_grad"(%70#1) {devices = [0, 1], head_dim = 4 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<4x2x4xf32>) -> tensor<4x2x4xf32>
    %72 = "tdag.rope_grad"(%70#0) {devices = [0, 1], head_dim = 4 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %73:2 = "tdag.rmsnorm_grad"(%71, %13, %9, %16#1) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4xf32>, tensor<4x2x1xf32>) -> (tensor<4x2x4xf32>, tensor<4xf32>)
    %74 = "tdag.pack_into"(%69, %73#1) {devices = [0, 1], offset = 2144 : i64, pass = "B"} : (tensor<4336xf32>, tensor<4xf32>) -> tensor<4336xf32>
    %75:2 = "tdag.rmsnorm_grad"(%72, %12, %8, %15#1) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>, tensor<4xf32>, tensor<4x2x2xf32>) -> (tensor<4x2x8xf32>, tensor<4xf32>)
    %76 = "tdag.pack_into"(%74, %75#1) {devices = [0, 1], offset = 2148 : i64, pass = "B"} : (tensor<4336xf32>, tensor<4xf32>) -> tensor<4336xf32>
    %77 = "tdag.linear_grad_input"(%70#2, %6) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x4xf32>, tensor<4x8xf32>) -> tensor<4x2x8xf32>
    %78 = "tdag.linear_grad_weight"(%70#2, %11#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x4xf32>, tensor<4x2x8xf32>) -> tensor<4x8xf32>
    %79 = "tdag.pack_into"(%76, %78) {devices = [0, 1], offset = 2152 : i64, pass = "B"} : (tensor<4336xf32>, tensor<4x8xf32>) -> tensor<4336xf32>
    %80 = "tdag.linear_grad_input"(%73#0, %5) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x4xf32>, tensor<4x8xf32>) -> tensor<4x2x8xf32>
    %81 = "tdag.add"(%77, %80) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %82 = "tdag.linear_grad_weight"(%73#0, %11#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x4xf32>, tensor<4x2x8xf32>) -> tensor<4x8xf32>
    %83 = "tdag.pack_into"(%79, %82) {devices = [0, 1], offset = 2184 : i64, pass = "B"} : (tensor<4336xf32>, tensor<4x8xf32>) -> tensor<4336xf32>
    %84 = "tdag.linear_grad_input"(%75#0, %4) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<8x8xf32>) -> tensor<4x2x8xf32>
    %85 = "tdag.add"(%81, %84) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %86 = "tdag.linear_grad_weight"(%75#0, %11#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<8x8xf32>
    %87 = "tdag.pack_into"(%83, %86) {devices = [0, 1], offset = 2216 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8x8xf32>) -> tensor<4336xf32>
    %88:2 = "tdag.rmsnorm_grad"(%85, %2, %3, %11#1) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>, tensor<8xf32>, tensor<4x2x1xf32>) -> (tensor<4x2x8xf32>, tensor<8xf32>)
    %89 = "tdag.pack_into"(%87, %88#1) {devices = [0, 1], offset = 2280 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8xf32>) -> tensor<4336xf32>
    %90 = "tdag.add"(%66, %88#0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> tensor<4x2x8xf32>
    %91 = "tdag.embed_grad"(%90, %0) {devices = [0, 1], pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<4x2x8xf32>, tensor<4x2xi32>) -> tensor<256x8xf32>
    %92 = "tdag.pack_into"(%89, %91) {devices = [0, 1], offset = 2288 : i64, pass = "B"} : (tensor<4336xf32>, tensor<256x8xf32>) -> tensor<4336xf32>
    %93:2 = "comm.all_reduce"(%92) {devices = [0, 1], group = [0, 1], pass = "B", stream = "dp"} : (tensor<4336xf32>) -> (tensor<4336xf32>, !comm.token)
    %94 = "tdag.adam_state"() {devices = [0, 1], param = "model.embed_tokens.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %95 = "tdag.adam_state"() {devices = [0, 1], param = "model.embed_tokens.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %96 = "tdag.view"(%93#0) {devices = [0, 1], offset = 2288 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<256x8xf32>
    "tdag.adamw"(%1, %96, %94, %95) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>) -> ()
    %97 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.input_layernorm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %98 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.input_layernorm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %99 = "tdag.view"(%93#0) {devices = [0, 1], offset = 2280 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8xf32>
    "tdag.adamw"(%3, %99, %97, %98) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %100 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.self_attn.q_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %101 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.self_attn.q_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %102 = "tdag.view"(%93#0) {devices = [0, 1], offset = 2216 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8x8xf32>
    "tdag.adamw"(%4, %102, %100, %101) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> ()
    %103 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.self_attn.k_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %104 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.self_attn.k_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %105 = "tdag.view"(%93#0) {devices = [0, 1], offset = 2184 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<4x8xf32>
    "tdag.adamw"(%5, %105, %103, %104) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %106 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.self_attn.v_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %107 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.self_attn.v_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %108 = "tdag.view"(%93#0) {devices = [0, 1], offset = 2152 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<4x8xf32>
    "tdag.adamw"(%6, %108, %106, %107) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %109 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.self_attn.o_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %110 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.self_attn.o_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %111 = "tdag.view"(%93#0) {devices = [0, 1], offset = 2080 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8x8xf32>
    "tdag.adamw"(%7, %111, %109, %110) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> ()
    %112 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.self_attn.q_norm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %113 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.self_attn.q_norm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %114 = "tdag.view"(%93#0) {devices = [0, 1], offset = 2148 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<4xf32>
    "tdag.adamw"(%8, %114, %112, %113) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
    %115 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.self_attn.k_norm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %116 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.self_attn.k_norm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %117 = "tdag.view"(%93#0) {devices = [0, 1], offset = 2144 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<4xf32>
    "tdag.adamw"(%9, %117, %115, %116) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
    %118 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.post_attention_layernorm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %119 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.post_attention_layernorm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %120 = "tdag.view"(%93#0) {devices = [0, 1], offset = 2072 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8xf32>
    "tdag.adamw"(%10, %120, %118, %119) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %121 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.mlp.gate.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<2x8xf32>
    %122 = "tdag.adam_state"() {devices = [0, 1], param = "model.layers.0.mlp.gate.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<2x8xf32>
    %123 = "tdag.view"(%93#0) {devices = [0, 1], offset = 2056 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<2x8xf32>
    "tdag.adamw"(%23, %123, %121, %122) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> ()
    %124 = "tdag.adam_state"() {devices = [0], ep_local, param = "model.layers.0.mlp.experts.0.gate_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %125 = "tdag.adam_state"() {devices = [0], ep_local, param = "model.layers.0.mlp.experts.0.gate_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%24, %56#0, %124, %125) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0], ep_local, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %126 = "tdag.adam_state"() {devices = [1], ep_local, param = "model.layers.0.mlp.experts.1.gate_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %127 = "tdag.adam_state"() {devices = [1], ep_local, param = "model.layers.0.mlp.experts.1.gate_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%25, %57#0, %126, %127) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [1], ep_local, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %128 = "tdag.adam_state"() {devices = [0], ep_local, param = "model.layers.0.mlp.experts.0.up_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %129 = "tdag.adam_state"() {devices = [0], ep_local, param = "model.layers.0.mlp.experts.0.up_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%26, %56#1, %128, %129) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0], ep_local, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %130 = "tdag.adam_state"() {devices = [1], ep_local, param = "model.layers.0.mlp.experts.1.up_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %131 = "tdag.adam_state"() {devices = [1], ep_local, param = "model.layers.0.mlp.experts.1.up_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%27, %57#1, %130, %131) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [1], ep_local, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %132 = "tdag.adam_state"() {devices = [0], ep_local, param = "model.layers.0.mlp.experts.0.down_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    %133 = "tdag.adam_state"() {devices = [0], ep_local, param = "model.layers.0.mlp.experts.0.down_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    "tdag.adamw"(%28, %56#2, %132, %133) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0], ep_local, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> ()
    %134 = "tdag.adam_state"() {devices = [1], ep_local, param = "model.layers.0.mlp.experts.1.down_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    %135 = "tdag.adam_state"() {devices = [1], ep_local, param = "model.layers.0.mlp.experts.1.down_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    "tdag.adamw"(%29, %57#2, %134, %135) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [1], ep_local, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> ()
    %136 = "tdag.adam_state"() {devices = [0, 1], param = "model.norm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %137 = "tdag.adam_state"() {devices = [0, 1], param = "model.norm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %138 = "tdag.view"(%93#0) {devices = [0, 1], offset = 2048 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8xf32>
    "tdag.adamw"(%39, %138, %136, %137) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %139 = "tdag.adam_state"() {devices = [0, 1], param = "lm_head.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<256x8xf32>
    %140 = "tdag.adam_state"() {devices = [0, 1], param = "lm_head.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<256x8xf32>
    %141 = "tdag.view"(%93#0) {devices = [0, 1], offset = 0 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<256x8xf32>
    "tdag.adamw"(%41, %141, %139, %140) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 1], eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>) -> ()
    return
  }
  "sched.split"() {dim_name = "mb", filter = {PP = "*"}, num_microbatches = 1 : i64} : () -> ()
  "sched.place"() {devices = [0, 1], filter = {PP = 0 : i64}, stream = "compute"} : () -> ()
  "sched.replicate"() {devices = [0, 1], filter = {PP = 0 : i64}, gather_stream = "dp", reduce_stream = "dp"} : () -> ()
  "sched.shard"() {devices = [0, 1], filter = {EP = "*", PP = 0 : i64}, stream = "ep"} : () -> ()
  "sched.order"() {filters = [[{PASS = "F", PP = 0 : i64, mb = 0 : i64}], [{PASS = "B", PP = 0 : i64, mb = 0 : i64}]]} : () -> ()
}


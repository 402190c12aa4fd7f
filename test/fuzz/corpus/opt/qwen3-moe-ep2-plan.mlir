module attributes {piper.devices = 2 : i64, piper.global_batch = 4 : i64} {
  func.func @device_0() attributes {piper.order = "/tmp/ep.json:6:3"} {
    %0 = "tdag.param"() {init = "normal", name = "model.embed_tokens.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %1 = "tdag.param"() {init = "ones", name = "model.layers.0.input_layernorm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %2 = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.q_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %3 = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.k_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %4 = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.v_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %5 = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.o_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %6 = "tdag.param"() {init = "ones", name = "model.layers.0.self_attn.q_norm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %7 = "tdag.param"() {init = "ones", name = "model.layers.0.self_attn.k_norm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %8 = "tdag.param"() {init = "ones", name = "model.layers.0.post_attention_layernorm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %9 = "tdag.param"() {init = "normal", name = "model.layers.0.mlp.gate.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<2x8xf32>
    %10 = "tdag.param"() {ep_local, init = "normal", name = "model.layers.0.mlp.experts.0.gate_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %11 = "tdag.param"() {ep_local, init = "normal", name = "model.layers.0.mlp.experts.0.up_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %12 = "tdag.param"() {ep_local, init = "normal", name = "model.layers.0.mlp.experts.0.down_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    %13 = "tdag.param"() {init = "ones", name = "model.norm.weight", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %14 = "tdag.param"() {init = "normal", name = "lm_head.weight", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<256x8xf32>
    %15 = "tdag.bucket"() {pass = "B"} : () -> tensor<4336xf32>
    %16 = "tdag.input"() {first_sample = 0 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> tensor<2x2xi32>
    %17 = "tdag.embed"(%16, %0) {tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x2xi32>, tensor<256x8xf32>) -> tensor<2x2x8xf32>
    %18:2 = "tdag.rmsnorm"(%17, %1) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x1xf32>)
    %19 = "tdag.matmul_nt"(%18#0, %2) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x8xf32>) -> tensor<2x2x8xf32>
    %20 = "tdag.matmul_nt"(%18#0, %3) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %21 = "tdag.matmul_nt"(%18#0, %4) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %22:2 = "tdag.rmsnorm"(%19, %6) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<4xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x2xf32>)
    %23:2 = "tdag.rmsnorm"(%20, %7) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<4xf32>) -> (tensor<2x2x4xf32>, tensor<2x2x1xf32>)
    %24 = "tdag.rope"(%22#0) {head_dim = 4 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %25 = "tdag.rope"(%23#0) {head_dim = 4 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %26:2 = "tdag.gqa_attention"(%24, %25, %21) {heads = 2 : i64, kv_heads = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x2xf32>)
    %27 = "tdag.matmul_nt"(%26#0, %5) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x8xf32>) -> tensor<2x2x8xf32>
    %28 = "tdag.add"(%17, %27) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %29:2 = "tdag.rmsnorm"(%28, %8) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x1xf32>)
    %30 = "tdag.matmul_nt"(%29#0, %9) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x8xf32>) -> tensor<2x2x2xf32>
    %31:2 = "tdag.moe_topk"(%30) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, top_k = 1 : i64} : (tensor<2x2x2xf32>) -> (tensor<2x2x1xf32>, tensor<2x2x1xi32>)
    %32:2 = "tdag.moe_dispatch"(%29#0, %31#1) {groups = 2 : i64, num_experts = 2 : i64, tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x1xi32>) -> (tensor<8x8xf32>, tensor<2xi32>)
    %33:2 = "comm.all_to_all"(%32#1) {group = [0, 1], stream = "ep", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2xi32>) -> (tensor<2xi32>, !comm.token)
    %34:2 = "comm.all_to_all"(%32#0) {group = [0, 1], stream = "ep", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>) -> (tensor<8x8xf32>, !comm.token)
    "comm.wait"(%33#1) : (!comm.token) -> ()
    "comm.wait"(%34#1) : (!comm.token) -> ()
    %35:2 = "tdag.moe_experts"(%34#0, %33#0, %10, %11, %12) {groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>, tensor<2xi32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>)
    %36:2 = "comm.all_to_all"(%35#0) {group = [0, 1], stream = "ep", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>) -> (tensor<8x8xf32>, !comm.token)
    "comm.wait"(%36#1) : (!comm.token) -> ()
    %37 = "tdag.moe_combine"(%36#0, %31#0, %31#1) {groups = 2 : i64, num_experts = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>, tensor<2x2x1xf32>, tensor<2x2x1xi32>) -> tensor<2x2x8xf32>
    %38 = "tdag.add"(%28, %37) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %39:2 = "tdag.rmsnorm"(%38, %13) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x1xf32>)
    %40 = "tdag.matmul_nt"(%39#0, %14) {tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<256x8xf32>) -> tensor<2x2x256xf32>
    %41 = "tdag.input"() {first_sample = 0 : i64, name = "targets", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : () -> tensor<2x2xi32>
    %42:2 = "tdag.cross_entropy"(%40, %41) {tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> (tensor<f32>, tensor<2x2x256xf32>)
    "tdag.output"(%42#0) {name = "loss", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<f32>) -> ()
    %43 = "tdag.cross_entropy_grad"(%42#1, %41) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}, total_rows = 8 : i64} : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> tensor<2x2x256xf32>
    %44 = "tdag.linear_grad_input"(%43, %14) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<256x8xf32>) -> tensor<2x2x8xf32>
    %45 = "tdag.linear_grad_weight"(%43, %39#0) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<2x2x8xf32>) -> tensor<256x8xf32>
    %46 = "tdag.pack_into"(%15, %45) {offset = 0 : i64, pass = "B"} : (tensor<4336xf32>, tensor<256x8xf32>) -> tensor<4336xf32>
    %47:2 = "tdag.rmsnorm_grad"(%44, %38, %13, %39#1) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2x1xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>)
    %48 = "tdag.pack_into"(%46, %47#1) {offset = 2048 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8xf32>) -> tensor<4336xf32>
    %49:2 = "tdag.moe_combine_grad"(%47#0, %36#0, %31#0, %31#1) {groups = 2 : i64, num_experts = 2 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x8xf32>, tensor<2x2x1xf32>, tensor<2x2x1xi32>) -> (tensor<8x8xf32>, tensor<2x2x1xf32>)
    %50:2 = "comm.all_to_all"(%49#0) {group = [0, 1], pass = "B", stream = "ep", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>) -> (tensor<8x8xf32>, !comm.token)
    "comm.wait"(%50#1) : (!comm.token) -> ()
    %51 = "tdag.moe_experts_grad_input"(%50#0, %33#0, %35#1, %10, %11, %12) {groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>, tensor<2xi32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
    %52:2 = "comm.all_to_all"(%51) {group = [0, 1], pass = "B", stream = "ep", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>) -> (tensor<8x8xf32>, !comm.token)
    %53:3 = "tdag.moe_experts_grad_weight"(%50#0, %34#0, %33#0, %35#1, %12) {ep_local, expert = 0 : i64, groups = 2 : i64, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<2xi32>, tensor<8x8xf32>, tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>)
    "comm.wait"(%52#1) : (!comm.token) -> ()
    %54 = "tdag.moe_dispatch_grad"(%52#0, %31#1) {groups = 2 : i64, num_experts = 2 : i64, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>, tensor<2x2x1xi32>) -> tensor<2x2x8xf32>
    %55 = "tdag.moe_topk_grad"(%49#1, %31#0, %31#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x1xf32>, tensor<2x2x1xf32>, tensor<2x2x1xi32>) -> tensor<2x2x2xf32>
    %56 = "tdag.linear_grad_input"(%55, %9) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x2xf32>, tensor<2x8xf32>) -> tensor<2x2x8xf32>
    %57 = "tdag.add"(%54, %56) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %58 = "tdag.linear_grad_weight"(%55, %29#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x2xf32>, tensor<2x2x8xf32>) -> tensor<2x8xf32>
    %59 = "tdag.pack_into"(%48, %58) {offset = 2056 : i64, pass = "B"} : (tensor<4336xf32>, tensor<2x8xf32>) -> tensor<4336xf32>
    %60:2 = "tdag.rmsnorm_grad"(%57, %28, %8, %29#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2x1xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>)
    %61 = "tdag.pack_into"(%59, %60#1) {offset = 2072 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8xf32>) -> tensor<4336xf32>
    %62 = "tdag.add"(%47#0, %60#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %63 = "tdag.linear_grad_input"(%62, %5) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x8xf32>) -> tensor<2x2x8xf32>
    %64 = "tdag.linear_grad_weight"(%62, %26#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<8x8xf32>
    %65 = "tdag.pack_into"(%61, %64) {offset = 2080 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8x8xf32>) -> tensor<4336xf32>
    %66:3 = "tdag.gqa_attention_grad"(%63, %24, %25, %21, %26#0, %26#1) {heads = 2 : i64, kv_heads = 1 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x8xf32>, tensor<2x2x2xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
    %67 = "tdag.rope_grad"(%66#1) {head_dim = 4 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %68 = "tdag.rope_grad"(%66#0) {head_dim = 4 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %69:2 = "tdag.rmsnorm_grad"(%67, %20, %7, %23#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<4xf32>, tensor<2x2x1xf32>) -> (tensor<2x2x4xf32>, tensor<4xf32>)
    %70 = "tdag.pack_into"(%65, %69#1) {offset = 2144 : i64, pass = "B"} : (tensor<4336xf32>, tensor<4xf32>) -> tensor<4336xf32>
    %71:2 = "tdag.rmsnorm_grad"(%68, %19, %6, %22#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<4xf32>, tensor<2x2x2xf32>) -> (tensor<2x2x8xf32>, tensor<4xf32>)
    %72 = "tdag.pack_into"(%70, %71#1) {offset = 2148 : i64, pass = "B"} : (tensor<4336xf32>, tensor<4xf32>) -> tensor<4336xf32>
    %73 = "tdag.linear_grad_input"(%66#2, %4) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<4x8xf32>) -> tensor<2x2x8xf32>
    %74 = "tdag.linear_grad_weight"(%66#2, %18#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<2x2x8xf32>) -> tensor<4x8xf32>
    %75 = "tdag.pack_into"(%72, %74) {offset = 2152 : i64, pass = "B"} : (tensor<4336xf32>, tensor<4x8xf32>) -> tensor<4336xf32>
    %76 = "tdag.linear_grad_input"(%69#0, %3) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<4x8xf32>) -> tensor<2x2x8xf32>
    %77 = "tdag.add"(%73, %76) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %78 = "tdag.linear_grad_weight"(%69#0, %18#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<2x2x8xf32>) -> tensor<4x8xf32>
    %79 = "tdag.pack_into"(%75, %78) {offset = 2184 : i64, pass = "B"} : (tensor<4336xf32>, tensor<4x8xf32>) -> tensor<4336xf32>
    %80 = "tdag.linear_grad_input"(%71#0, %2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x8xf32>) -> tensor<2x2x8xf32>
    %81 = "tdag.add"(%77, %80) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %82 = "tdag.linear_grad_weight"(%71#0, %18#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<8x8xf32>
    %83 = "tdag.pack_into"(%79, %82) {offset = 2216 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8x8xf32>) -> tensor<4336xf32>
    %84:2 = "tdag.rmsnorm_grad"(%81, %17, %1, %18#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2x1xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>)
    %85 = "tdag.pack_into"(%83, %84#1) {offset = 2280 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8xf32>) -> tensor<4336xf32>
    %86 = "tdag.add"(%62, %84#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %87 = "tdag.embed_grad"(%86, %16) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> tensor<256x8xf32>
    %88 = "tdag.pack_into"(%85, %87) {offset = 2288 : i64, pass = "B"} : (tensor<4336xf32>, tensor<256x8xf32>) -> tensor<4336xf32>
    %89:2 = "comm.all_reduce"(%88) {group = [0, 1], pass = "B", stream = "dp"} : (tensor<4336xf32>) -> (tensor<4336xf32>, !comm.token)
    %90 = "tdag.adam_state"() {param = "model.embed_tokens.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %91 = "tdag.adam_state"() {param = "model.embed_tokens.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    "comm.wait"(%89#1) : (!comm.token) -> ()
    %92 = "tdag.view"(%89#0) {offset = 2288 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<256x8xf32>
    "tdag.adamw"(%0, %92, %90, %91) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>) -> ()
    %93 = "tdag.adam_state"() {param = "model.layers.0.input_layernorm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %94 = "tdag.adam_state"() {param = "model.layers.0.input_layernorm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %95 = "tdag.view"(%89#0) {offset = 2280 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8xf32>
    "tdag.adamw"(%1, %95, %93, %94) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %96 = "tdag.adam_state"() {param = "model.layers.0.self_attn.q_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %97 = "tdag.adam_state"() {param = "model.layers.0.self_attn.q_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %98 = "tdag.view"(%89#0) {offset = 2216 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8x8xf32>
    "tdag.adamw"(%2, %98, %96, %97) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> ()
    %99 = "tdag.adam_state"() {param = "model.layers.0.self_attn.k_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %100 = "tdag.adam_state"() {param = "model.layers.0.self_attn.k_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %101 = "tdag.view"(%89#0) {offset = 2184 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<4x8xf32>
    "tdag.adamw"(%3, %101, %99, %100) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %102 = "tdag.adam_state"() {param = "model.layers.0.self_attn.v_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %103 = "tdag.adam_state"() {param = "model.layers.0.self_attn.v_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %104 = "tdag.view"(%89#0) {offset = 2152 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<4x8xf32>
    "tdag.adamw"(%4, %104, %102, %103) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %105 = "tdag.adam_state"() {param = "model.layers.0.self_attn.o_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %106 = "tdag.adam_state"() {param = "model.layers.0.self_attn.o_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %107 = "tdag.view"(%89#0) {offset = 2080 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8x8xf32>
    "tdag.adamw"(%5, %107, %105, %106) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> ()
    %108 = "tdag.adam_state"() {param = "model.layers.0.self_attn.q_norm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %109 = "tdag.adam_state"() {param = "model.layers.0.self_attn.q_norm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %110 = "tdag.view"(%89#0) {offset = 2148 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<4xf32>
    "tdag.adamw"(%6, %110, %108, %109) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
    %111 = "tdag.adam_state"() {param = "model.layers.0.self_attn.k_norm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %112 = "tdag.adam_state"() {param = "model.layers.0.self_attn.k_norm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %113 = "tdag.view"(%89#0) {offset = 2144 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<4xf32>
    "tdag.adamw"(%7, %113, %111, %112) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
    %114 = "tdag.adam_state"() {param = "model.layers.0.post_attention_layernorm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %115 = "tdag.adam_state"() {param = "model.layers.0.post_attention_layernorm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %116 = "tdag.view"(%89#0) {offset = 2072 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8xf32>
    "tdag.adamw"(%8, %116, %114, %115) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %117 = "tdag.adam_state"() {param = "model.layers.0.mlp.gate.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<2x8xf32>
    %118 = "tdag.adam_state"() {param = "model.layers.0.mlp.gate.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<2x8xf32>
    %119 = "tdag.view"(%89#0) {offset = 2056 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<2x8xf32>
    "tdag.adamw"(%9, %119, %117, %118) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> ()
    %120 = "tdag.adam_state"() {ep_local, param = "model.layers.0.mlp.experts.0.gate_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %121 = "tdag.adam_state"() {ep_local, param = "model.layers.0.mlp.experts.0.gate_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%10, %53#0, %120, %121) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, ep_local, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %122 = "tdag.adam_state"() {ep_local, param = "model.layers.0.mlp.experts.0.up_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %123 = "tdag.adam_state"() {ep_local, param = "model.layers.0.mlp.experts.0.up_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%11, %53#1, %122, %123) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, ep_local, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %124 = "tdag.adam_state"() {ep_local, param = "model.layers.0.mlp.experts.0.down_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    %125 = "tdag.adam_state"() {ep_local, param = "model.layers.0.mlp.experts.0.down_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    "tdag.adamw"(%12, %53#2, %124, %125) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, ep_local, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> ()
    %126 = "tdag.adam_state"() {param = "model.norm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %127 = "tdag.adam_state"() {param = "model.norm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %128 = "tdag.view"(%89#0) {offset = 2048 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8xf32>
    "tdag.adamw"(%13, %128, %126, %127) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %129 = "tdag.adam_state"() {param = "lm_head.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<256x8xf32>
    %130 = "tdag.adam_state"() {param = "lm_head.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<256x8xf32>
    %131 = "tdag.view"(%89#0) {offset = 0 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<256x8xf32>
    "tdag.adamw"(%14, %131, %129, %130) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 0 : i64, tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>) -> ()
    return
  }
  func.func @device_1() attributes {piper.order = "/tmp/ep.json:6:3"} {
    %0 = "tdag.param"() {init = "normal", name = "model.embed_tokens.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %1 = "tdag.param"() {init = "ones", name = "model.layers.0.input_layernorm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %2 = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.q_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %3 = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.k_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %4 = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.v_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %5 = "tdag.param"() {init = "normal", name = "model.layers.0.self_attn.o_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %6 = "tdag.param"() {init = "ones", name = "model.layers.0.self_attn.q_norm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %7 = "tdag.param"() {init = "ones", name = "model.layers.0.self_attn.k_norm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %8 = "tdag.param"() {init = "ones", name = "model.layers.0.post_attention_layernorm.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %9 = "tdag.param"() {init = "normal", name = "model.layers.0.mlp.gate.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<2x8xf32>
    %10 = "tdag.param"() {ep_local, init = "normal", name = "model.layers.0.mlp.experts.1.gate_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %11 = "tdag.param"() {ep_local, init = "normal", name = "model.layers.0.mlp.experts.1.up_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %12 = "tdag.param"() {ep_local, init = "normal", name = "model.layers.0.mlp.experts.1.down_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    %13 = "tdag.param"() {init = "ones", name = "model.norm.weight", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %14 = "tdag.param"() {init = "normal", name = "lm_head.weight", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<256x8xf32>
    %15 = "tdag.bucket"() {pass = "B"} : () -> tensor<4336xf32>
    %16 = "tdag.input"() {first_sample = 2 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> tensor<2x2xi32>
    %17 = "tdag.embed"(%16, %0) {tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x2xi32>, tensor<256x8xf32>) -> tensor<2x2x8xf32>
    %18:2 = "tdag.rmsnorm"(%17, %1) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x1xf32>)
    %19 = "tdag.matmul_nt"(%18#0, %2) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x8xf32>) -> tensor<2x2x8xf32>
    %20 = "tdag.matmul_nt"(%18#0, %3) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %21 = "tdag.matmul_nt"(%18#0, %4) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<4x8xf32>) -> tensor<2x2x4xf32>
    %22:2 = "tdag.rmsnorm"(%19, %6) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<4xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x2xf32>)
    %23:2 = "tdag.rmsnorm"(%20, %7) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<4xf32>) -> (tensor<2x2x4xf32>, tensor<2x2x1xf32>)
    %24 = "tdag.rope"(%22#0) {head_dim = 4 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %25 = "tdag.rope"(%23#0) {head_dim = 4 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %26:2 = "tdag.gqa_attention"(%24, %25, %21) {heads = 2 : i64, kv_heads = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x2xf32>)
    %27 = "tdag.matmul_nt"(%26#0, %5) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x8xf32>) -> tensor<2x2x8xf32>
    %28 = "tdag.add"(%17, %27) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %29:2 = "tdag.rmsnorm"(%28, %8) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x1xf32>)
    %30 = "tdag.matmul_nt"(%29#0, %9) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x8xf32>) -> tensor<2x2x2xf32>
    %31:2 = "tdag.moe_topk"(%30) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, top_k = 1 : i64} : (tensor<2x2x2xf32>) -> (tensor<2x2x1xf32>, tensor<2x2x1xi32>)
    %32:2 = "tdag.moe_dispatch"(%29#0, %31#1) {groups = 2 : i64, num_experts = 2 : i64, tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x1xi32>) -> (tensor<8x8xf32>, tensor<2xi32>)
    %33:2 = "comm.all_to_all"(%32#1) {group = [0, 1], stream = "ep", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2xi32>) -> (tensor<2xi32>, !comm.token)
    %34:2 = "comm.all_to_all"(%32#0) {group = [0, 1], stream = "ep", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>) -> (tensor<8x8xf32>, !comm.token)
    "comm.wait"(%33#1) : (!comm.token) -> ()
    "comm.wait"(%34#1) : (!comm.token) -> ()
    %35:2 = "tdag.moe_experts"(%34#0, %33#0, %10, %11, %12) {groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>, tensor<2xi32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>)
    %36:2 = "comm.all_to_all"(%35#0) {group = [0, 1], stream = "ep", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>) -> (tensor<8x8xf32>, !comm.token)
    "comm.wait"(%36#1) : (!comm.token) -> ()
    %37 = "tdag.moe_combine"(%36#0, %31#0, %31#1) {groups = 2 : i64, num_experts = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>, tensor<2x2x1xf32>, tensor<2x2x1xi32>) -> tensor<2x2x8xf32>
    %38 = "tdag.add"(%28, %37) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %39:2 = "tdag.rmsnorm"(%38, %13) {eps = 9.9999999999999995E-7 : f64, tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x1xf32>)
    %40 = "tdag.matmul_nt"(%39#0, %14) {tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<256x8xf32>) -> tensor<2x2x256xf32>
    %41 = "tdag.input"() {first_sample = 2 : i64, name = "targets", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : () -> tensor<2x2xi32>
    %42:2 = "tdag.cross_entropy"(%40, %41) {tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> (tensor<f32>, tensor<2x2x256xf32>)
    "tdag.output"(%42#0) {name = "loss", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<f32>) -> ()
    %43 = "tdag.cross_entropy_grad"(%42#1, %41) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}, total_rows = 8 : i64} : (tensor<2x2x256xf32>, tensor<2x2xi32>) -> tensor<2x2x256xf32>
    %44 = "tdag.linear_grad_input"(%43, %14) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<256x8xf32>) -> tensor<2x2x8xf32>
    %45 = "tdag.linear_grad_weight"(%43, %39#0) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x256xf32>, tensor<2x2x8xf32>) -> tensor<256x8xf32>
    %46 = "tdag.pack_into"(%15, %45) {offset = 0 : i64, pass = "B"} : (tensor<4336xf32>, tensor<256x8xf32>) -> tensor<4336xf32>
    %47:2 = "tdag.rmsnorm_grad"(%44, %38, %13, %39#1) {pass = "B", tags = {PP = 0 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2x1xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>)
    %48 = "tdag.pack_into"(%46, %47#1) {offset = 2048 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8xf32>) -> tensor<4336xf32>
    %49:2 = "tdag.moe_combine_grad"(%47#0, %36#0, %31#0, %31#1) {groups = 2 : i64, num_experts = 2 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x8xf32>, tensor<2x2x1xf32>, tensor<2x2x1xi32>) -> (tensor<8x8xf32>, tensor<2x2x1xf32>)
    %50:2 = "comm.all_to_all"(%49#0) {group = [0, 1], pass = "B", stream = "ep", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>) -> (tensor<8x8xf32>, !comm.token)
    "comm.wait"(%50#1) : (!comm.token) -> ()
    %51 = "tdag.moe_experts_grad_input"(%50#0, %33#0, %35#1, %10, %11, %12) {groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>, tensor<2xi32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
    %52:2 = "comm.all_to_all"(%51) {group = [0, 1], pass = "B", stream = "ep", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>) -> (tensor<8x8xf32>, !comm.token)
    %53:3 = "tdag.moe_experts_grad_weight"(%50#0, %34#0, %33#0, %35#1, %12) {ep_local, expert = 0 : i64, groups = 2 : i64, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<2xi32>, tensor<8x8xf32>, tensor<8x4xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x4xf32>)
    "comm.wait"(%52#1) : (!comm.token) -> ()
    %54 = "tdag.moe_dispatch_grad"(%52#0, %31#1) {groups = 2 : i64, num_experts = 2 : i64, pass = "B", tags = {EP = 0 : i64, PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<8x8xf32>, tensor<2x2x1xi32>) -> tensor<2x2x8xf32>
    %55 = "tdag.moe_topk_grad"(%49#1, %31#0, %31#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x1xf32>, tensor<2x2x1xf32>, tensor<2x2x1xi32>) -> tensor<2x2x2xf32>
    %56 = "tdag.linear_grad_input"(%55, %9) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x2xf32>, tensor<2x8xf32>) -> tensor<2x2x8xf32>
    %57 = "tdag.add"(%54, %56) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %58 = "tdag.linear_grad_weight"(%55, %29#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x2xf32>, tensor<2x2x8xf32>) -> tensor<2x8xf32>
    %59 = "tdag.pack_into"(%48, %58) {offset = 2056 : i64, pass = "B"} : (tensor<4336xf32>, tensor<2x8xf32>) -> tensor<4336xf32>
    %60:2 = "tdag.rmsnorm_grad"(%57, %28, %8, %29#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2x1xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>)
    %61 = "tdag.pack_into"(%59, %60#1) {offset = 2072 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8xf32>) -> tensor<4336xf32>
    %62 = "tdag.add"(%47#0, %60#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %63 = "tdag.linear_grad_input"(%62, %5) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x8xf32>) -> tensor<2x2x8xf32>
    %64 = "tdag.linear_grad_weight"(%62, %26#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<8x8xf32>
    %65 = "tdag.pack_into"(%61, %64) {offset = 2080 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8x8xf32>) -> tensor<4336xf32>
    %66:3 = "tdag.gqa_attention_grad"(%63, %24, %25, %21, %26#0, %26#1) {heads = 2 : i64, kv_heads = 1 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x8xf32>, tensor<2x2x2xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
    %67 = "tdag.rope_grad"(%66#1) {head_dim = 4 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
    %68 = "tdag.rope_grad"(%66#0) {head_dim = 4 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}, theta = 1.000000e+06 : f64} : (tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %69:2 = "tdag.rmsnorm_grad"(%67, %20, %7, %23#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<4xf32>, tensor<2x2x1xf32>) -> (tensor<2x2x4xf32>, tensor<4xf32>)
    %70 = "tdag.pack_into"(%65, %69#1) {offset = 2144 : i64, pass = "B"} : (tensor<4336xf32>, tensor<4xf32>) -> tensor<4336xf32>
    %71:2 = "tdag.rmsnorm_grad"(%68, %19, %6, %22#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<4xf32>, tensor<2x2x2xf32>) -> (tensor<2x2x8xf32>, tensor<4xf32>)
    %72 = "tdag.pack_into"(%70, %71#1) {offset = 2148 : i64, pass = "B"} : (tensor<4336xf32>, tensor<4xf32>) -> tensor<4336xf32>
    %73 = "tdag.linear_grad_input"(%66#2, %4) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<4x8xf32>) -> tensor<2x2x8xf32>
    %74 = "tdag.linear_grad_weight"(%66#2, %18#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<2x2x8xf32>) -> tensor<4x8xf32>
    %75 = "tdag.pack_into"(%72, %74) {offset = 2152 : i64, pass = "B"} : (tensor<4336xf32>, tensor<4x8xf32>) -> tensor<4336xf32>
    %76 = "tdag.linear_grad_input"(%69#0, %3) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<4x8xf32>) -> tensor<2x2x8xf32>
    %77 = "tdag.add"(%73, %76) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %78 = "tdag.linear_grad_weight"(%69#0, %18#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x4xf32>, tensor<2x2x8xf32>) -> tensor<4x8xf32>
    %79 = "tdag.pack_into"(%75, %78) {offset = 2184 : i64, pass = "B"} : (tensor<4336xf32>, tensor<4x8xf32>) -> tensor<4336xf32>
    %80 = "tdag.linear_grad_input"(%71#0, %2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<8x8xf32>) -> tensor<2x2x8xf32>
    %81 = "tdag.add"(%77, %80) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %82 = "tdag.linear_grad_weight"(%71#0, %18#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<8x8xf32>
    %83 = "tdag.pack_into"(%79, %82) {offset = 2216 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8x8xf32>) -> tensor<4336xf32>
    %84:2 = "tdag.rmsnorm_grad"(%81, %17, %1, %18#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<8xf32>, tensor<2x2x1xf32>) -> (tensor<2x2x8xf32>, tensor<8xf32>)
    %85 = "tdag.pack_into"(%83, %84#1) {offset = 2280 : i64, pass = "B"} : (tensor<4336xf32>, tensor<8xf32>) -> tensor<4336xf32>
    %86 = "tdag.add"(%62, %84#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
    %87 = "tdag.embed_grad"(%86, %16) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x2x8xf32>, tensor<2x2xi32>) -> tensor<256x8xf32>
    %88 = "tdag.pack_into"(%85, %87) {offset = 2288 : i64, pass = "B"} : (tensor<4336xf32>, tensor<256x8xf32>) -> tensor<4336xf32>
    %89:2 = "comm.all_reduce"(%88) {group = [0, 1], pass = "B", stream = "dp"} : (tensor<4336xf32>) -> (tensor<4336xf32>, !comm.token)
    %90 = "tdag.adam_state"() {param = "model.embed_tokens.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    %91 = "tdag.adam_state"() {param = "model.embed_tokens.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x8xf32>
    "comm.wait"(%89#1) : (!comm.token) -> ()
    %92 = "tdag.view"(%89#0) {offset = 2288 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<256x8xf32>
    "tdag.adamw"(%0, %92, %90, %91) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>) -> ()
    %93 = "tdag.adam_state"() {param = "model.layers.0.input_layernorm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %94 = "tdag.adam_state"() {param = "model.layers.0.input_layernorm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %95 = "tdag.view"(%89#0) {offset = 2280 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8xf32>
    "tdag.adamw"(%1, %95, %93, %94) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %96 = "tdag.adam_state"() {param = "model.layers.0.self_attn.q_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %97 = "tdag.adam_state"() {param = "model.layers.0.self_attn.q_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %98 = "tdag.view"(%89#0) {offset = 2216 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8x8xf32>
    "tdag.adamw"(%2, %98, %96, %97) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> ()
    %99 = "tdag.adam_state"() {param = "model.layers.0.self_attn.k_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %100 = "tdag.adam_state"() {param = "model.layers.0.self_attn.k_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %101 = "tdag.view"(%89#0) {offset = 2184 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<4x8xf32>
    "tdag.adamw"(%3, %101, %99, %100) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %102 = "tdag.adam_state"() {param = "model.layers.0.self_attn.v_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %103 = "tdag.adam_state"() {param = "model.layers.0.self_attn.v_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %104 = "tdag.view"(%89#0) {offset = 2152 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<4x8xf32>
    "tdag.adamw"(%4, %104, %102, %103) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %105 = "tdag.adam_state"() {param = "model.layers.0.self_attn.o_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %106 = "tdag.adam_state"() {param = "model.layers.0.self_attn.o_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x8xf32>
    %107 = "tdag.view"(%89#0) {offset = 2080 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8x8xf32>
    "tdag.adamw"(%5, %107, %105, %106) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> ()
    %108 = "tdag.adam_state"() {param = "model.layers.0.self_attn.q_norm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %109 = "tdag.adam_state"() {param = "model.layers.0.self_attn.q_norm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %110 = "tdag.view"(%89#0) {offset = 2148 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<4xf32>
    "tdag.adamw"(%6, %110, %108, %109) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
    %111 = "tdag.adam_state"() {param = "model.layers.0.self_attn.k_norm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %112 = "tdag.adam_state"() {param = "model.layers.0.self_attn.k_norm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4xf32>
    %113 = "tdag.view"(%89#0) {offset = 2144 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<4xf32>
    "tdag.adamw"(%7, %113, %111, %112) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
    %114 = "tdag.adam_state"() {param = "model.layers.0.post_attention_layernorm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %115 = "tdag.adam_state"() {param = "model.layers.0.post_attention_layernorm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %116 = "tdag.view"(%89#0) {offset = 2072 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8xf32>
    "tdag.adamw"(%8, %116, %114, %115) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %117 = "tdag.adam_state"() {param = "model.layers.0.mlp.gate.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<2x8xf32>
    %118 = "tdag.adam_state"() {param = "model.layers.0.mlp.gate.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<2x8xf32>
    %119 = "tdag.view"(%89#0) {offset = 2056 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<2x8xf32>
    "tdag.adamw"(%9, %119, %117, %118) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> ()
    %120 = "tdag.adam_state"() {ep_local, param = "model.layers.0.mlp.experts.1.gate_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %121 = "tdag.adam_state"() {ep_local, param = "model.layers.0.mlp.experts.1.gate_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%10, %53#0, %120, %121) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, ep_local, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %122 = "tdag.adam_state"() {ep_local, param = "model.layers.0.mlp.experts.1.up_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    %123 = "tdag.adam_state"() {ep_local, param = "model.layers.0.mlp.experts.1.up_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<4x8xf32>
    "tdag.adamw"(%11, %53#1, %122, %123) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, ep_local, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
    %124 = "tdag.adam_state"() {ep_local, param = "model.layers.0.mlp.experts.1.down_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    %125 = "tdag.adam_state"() {ep_local, param = "model.layers.0.mlp.experts.1.down_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8x4xf32>
    "tdag.adamw"(%12, %53#2, %124, %125) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, ep_local, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) -> ()
    %126 = "tdag.adam_state"() {param = "model.norm.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %127 = "tdag.adam_state"() {param = "model.norm.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %128 = "tdag.view"(%89#0) {offset = 2048 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<8xf32>
    "tdag.adamw"(%13, %128, %126, %127) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %129 = "tdag.adam_state"() {param = "lm_head.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<256x8xf32>
    %130 = "tdag.adam_state"() {param = "lm_head.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, head = 0 : i64}} : () -> tensor<256x8xf32>
    %131 = "tdag.view"(%89#0) {offset = 0 : i64, pass = "UPD"} : (tensor<4336xf32>) -> tensor<256x8xf32>
    "tdag.adamw"(%14, %131, %129, %130) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", replica = 1 : i64, tags = {PP = 0 : i64, head = 0 : i64}} : (tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>, tensor<256x8xf32>) -> ()
    return
  }
}


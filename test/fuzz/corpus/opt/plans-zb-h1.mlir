module attributes {piper.devices = 2 : i64, piper.global_batch = 4 : i64} {
  func.func @device_0() {
    %0 = "tdag.param"() {init = "normal", name = "wte.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x16xf32>
    %1 = "tdag.param"() {init = "normal", name = "wpe.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<8x16xf32>
    %2 = "tdag.param"() {init = "ones", name = "h.0.ln_1.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %3 = "tdag.param"() {init = "zeros", name = "h.0.ln_1.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %4 = "tdag.param"() {init = "normal", name = "h.0.attn.c_attn.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48x16xf32>
    %5 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_attn.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48xf32>
    %6 = "tdag.param"() {init = "normal", name = "h.0.attn.c_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x16xf32>
    %7 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_proj.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %8 = "tdag.param"() {init = "ones", name = "h.0.ln_2.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %9 = "tdag.param"() {init = "zeros", name = "h.0.ln_2.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %10 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_fc.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64x16xf32>
    %11 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_fc.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64xf32>
    %12 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x64xf32>
    %13 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_proj.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %14 = "tdag.input"() {first_sample = 0 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> tensor<2x8xi32>
    %15 = "tdag.embedding"(%14, %0, %1) {tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x8xi32>, tensor<256x16xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
    %16:3 = "tdag.layernorm"(%15, %2, %3) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %17 = "tdag.linear"(%16#0, %4, %5) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
    %18:2 = "tdag.attention"(%17) {heads = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>) -> (tensor<2x8x16xf32>, tensor<2x2x8xf32>)
    %19 = "tdag.linear"(%18#0, %6, %7) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %20 = "tdag.add"(%15, %19) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %21:3 = "tdag.layernorm"(%20, %8, %9) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %22 = "tdag.linear"(%21#0, %10, %11) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
    %23 = "tdag.gelu"(%22) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %24 = "tdag.linear"(%23, %12, %13) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %25 = "tdag.add"(%20, %24) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %26 = "comm.send"(%25) {peer = 1 : i64, peers = [1], stream = "pp", tag = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>) -> !comm.token
    %27 = "tdag.input"() {first_sample = 2 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : () -> tensor<2x8xi32>
    %28 = "tdag.embedding"(%27, %0, %1) {tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<2x8xi32>, tensor<256x16xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
    %29:3 = "tdag.layernorm"(%28, %2, %3) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %30 = "tdag.linear"(%29#0, %4, %5) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
    %31:2 = "tdag.attention"(%30) {heads = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>) -> (tensor<2x8x16xf32>, tensor<2x2x8xf32>)
    %32 = "tdag.linear"(%31#0, %6, %7) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %33 = "tdag.add"(%28, %32) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %34:3 = "tdag.layernorm"(%33, %8, %9) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %35 = "tdag.linear"(%34#0, %10, %11) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
    %36 = "tdag.gelu"(%35) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %37 = "tdag.linear"(%36, %12, %13) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %38 = "tdag.add"(%33, %37) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %39 = "comm.send"(%38) {peer = 1 : i64, peers = [1], stream = "pp", tag = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>) -> !comm.token
    %40:2 = "comm.recv"() {batched, pass = "BI", peer = 1 : i64, peers = [1], stream = "pp", tag = 3 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : () -> (tensor<2x8x16xf32>, !comm.token)
    "comm.wait"(%40#1) : (!comm.token) -> ()
    %41 = "tdag.linear_grad_input"(%40#0, %12) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
    %42 = "tdag.gelu_grad"(%41, %22) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %43 = "tdag.linear_grad_input"(%42, %10) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
    %44:3 = "tdag.layernorm_grad"(%43, %20, %8, %21#1, %21#2) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %45 = "tdag.add"(%40#0, %44#0) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %46 = "tdag.linear_grad_input"(%45, %6) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %47 = "tdag.attention_grad"(%46, %17, %18#0, %18#1) {heads = 2 : i64, pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x48xf32>, tensor<2x8x16xf32>, tensor<2x2x8xf32>) -> tensor<2x8x48xf32>
    %48 = "tdag.linear_grad_input"(%47, %4) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>, tensor<48x16xf32>) -> tensor<2x8x16xf32>
    %49:3 = "tdag.layernorm_grad"(%48, %15, %2, %16#1, %16#2) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %50 = "tdag.add"(%45, %49#0) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %51 = "tdag.linear_grad_weight"(%40#0, %23) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x64xf32>) -> tensor<16x64xf32>
    %52 = "tdag.bias_grad"(%40#0) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %53 = "tdag.linear_grad_weight"(%42, %21#0) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x16xf32>) -> tensor<64x16xf32>
    %54 = "tdag.bias_grad"(%42) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>) -> tensor<64xf32>
    %55 = "tdag.linear_grad_weight"(%45, %18#0) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %56 = "tdag.bias_grad"(%45) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %57 = "tdag.linear_grad_weight"(%47, %16#0) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>, tensor<2x8x16xf32>) -> tensor<48x16xf32>
    %58 = "tdag.bias_grad"(%47) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>) -> tensor<48xf32>
    %59:2 = "tdag.embedding_grad"(%50, %14) {pass = "BW", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> (tensor<256x16xf32>, tensor<8x16xf32>)
    %60:2 = "comm.recv"() {pass = "BW", peer = 1 : i64, peers = [1], stream = "pp", tag = 5 : i64, tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> (tensor<256x16xf32>, !comm.token)
    "comm.wait"(%60#1) : (!comm.token) -> ()
    %61 = "tdag.add"(%60#0, %59#0) {pass = "BW", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %62:2 = "comm.recv"() {batched, pass = "BI", peer = 1 : i64, peers = [1], stream = "pp", tag = 4 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : () -> (tensor<2x8x16xf32>, !comm.token)
    "comm.wait"(%62#1) : (!comm.token) -> ()
    %63 = "tdag.linear_grad_input"(%62#0, %12) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
    %64 = "tdag.gelu_grad"(%63, %35) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %65 = "tdag.linear_grad_input"(%64, %10) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
    %66:3 = "tdag.layernorm_grad"(%65, %33, %8, %34#1, %34#2) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %67 = "tdag.add"(%44#1, %66#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %68 = "tdag.add"(%44#2, %66#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %69 = "tdag.add"(%62#0, %66#0) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %70 = "tdag.linear_grad_input"(%69, %6) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %71 = "tdag.attention_grad"(%70, %30, %31#0, %31#1) {heads = 2 : i64, pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x48xf32>, tensor<2x8x16xf32>, tensor<2x2x8xf32>) -> tensor<2x8x48xf32>
    %72 = "tdag.linear_grad_input"(%71, %4) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>, tensor<48x16xf32>) -> tensor<2x8x16xf32>
    %73:3 = "tdag.layernorm_grad"(%72, %28, %2, %29#1, %29#2) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %74 = "tdag.add"(%49#1, %73#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %75 = "tdag.add"(%49#2, %73#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %76 = "tdag.add"(%69, %73#0) {pass = "BI", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %77 = "tdag.linear_grad_weight"(%62#0, %36) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x64xf32>) -> tensor<16x64xf32>
    %78 = "tdag.add"(%51, %77) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %79 = "tdag.bias_grad"(%62#0) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %80 = "tdag.add"(%52, %79) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %81 = "tdag.linear_grad_weight"(%64, %34#0) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x16xf32>) -> tensor<64x16xf32>
    %82 = "tdag.add"(%53, %81) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %83 = "tdag.bias_grad"(%64) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>) -> tensor<64xf32>
    %84 = "tdag.add"(%54, %83) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %85 = "tdag.linear_grad_weight"(%69, %31#0) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %86 = "tdag.add"(%55, %85) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
    %87 = "tdag.bias_grad"(%69) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %88 = "tdag.add"(%56, %87) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %89 = "tdag.linear_grad_weight"(%71, %29#0) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>, tensor<2x8x16xf32>) -> tensor<48x16xf32>
    %90 = "tdag.add"(%57, %89) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>) -> tensor<48x16xf32>
    %91 = "tdag.bias_grad"(%71) {pass = "BW", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>) -> tensor<48xf32>
    %92 = "tdag.add"(%58, %91) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48xf32>, tensor<48xf32>) -> tensor<48xf32>
    %93:2 = "tdag.embedding_grad"(%76, %27) {pass = "BW", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> (tensor<256x16xf32>, tensor<8x16xf32>)
    %94 = "tdag.add"(%59#1, %93#1) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %95:2 = "comm.recv"() {pass = "BW", peer = 1 : i64, peers = [1], stream = "pp", tag = 6 : i64, tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : () -> (tensor<256x16xf32>, !comm.token)
    "comm.wait"(%95#1) : (!comm.token) -> ()
    %96 = "tdag.add"(%95#0, %93#0) {pass = "BW", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %97 = "tdag.add"(%61, %96) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %98 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x16xf32>
    %99 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x16xf32>
    "tdag.adamw"(%0, %97, %98, %99) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>, tensor<256x16xf32>, tensor<256x16xf32>) -> ()
    %100 = "comm.send"(%0) {pass = "UPD", peer = 1 : i64, peers = [1], stream = "pp", tag = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> !comm.token
    %101 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<8x16xf32>
    %102 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<8x16xf32>
    "tdag.adamw"(%1, %94, %101, %102) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> ()
    %103 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %104 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%2, %74, %103, %104) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %105 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %106 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%3, %75, %105, %106) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %107 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48x16xf32>
    %108 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48x16xf32>
    "tdag.adamw"(%4, %90, %107, %108) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>, tensor<48x16xf32>, tensor<48x16xf32>) -> ()
    %109 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48xf32>
    %110 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48xf32>
    "tdag.adamw"(%5, %92, %109, %110) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48xf32>, tensor<48xf32>, tensor<48xf32>, tensor<48xf32>) -> ()
    %111 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x16xf32>
    %112 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x16xf32>
    "tdag.adamw"(%6, %86, %111, %112) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> ()
    %113 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %114 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%7, %88, %113, %114) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %115 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %116 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%8, %67, %115, %116) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %117 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %118 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%9, %68, %117, %118) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %119 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64x16xf32>
    %120 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64x16xf32>
    "tdag.adamw"(%10, %82, %119, %120) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x16xf32>) -> ()
    %121 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64xf32>
    %122 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64xf32>
    "tdag.adamw"(%11, %84, %121, %122) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> ()
    %123 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x64xf32>
    %124 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x64xf32>
    "tdag.adamw"(%12, %78, %123, %124) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> ()
    %125 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %126 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%13, %80, %125, %126) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    "comm.wait"(%26) : (!comm.token) -> ()
    "comm.wait"(%39) : (!comm.token) -> ()
    "comm.wait"(%100) : (!comm.token) -> ()
    return
  }
  func.func @device_1() {
    %0 = "tdag.param"() {init = "normal", name = "wte.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x16xf32>
    %1 = "tdag.param"() {init = "ones", name = "h.1.ln_1.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %2 = "tdag.param"() {init = "zeros", name = "h.1.ln_1.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %3 = "tdag.param"() {init = "normal", name = "h.1.attn.c_attn.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48x16xf32>
    %4 = "tdag.param"() {init = "zeros", name = "h.1.attn.c_attn.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48xf32>
    %5 = "tdag.param"() {init = "normal", name = "h.1.attn.c_proj.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x16xf32>
    %6 = "tdag.param"() {init = "zeros", name = "h.1.attn.c_proj.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %7 = "tdag.param"() {init = "ones", name = "h.1.ln_2.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %8 = "tdag.param"() {init = "zeros", name = "h.1.ln_2.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %9 = "tdag.param"() {init = "normal", name = "h.1.mlp.c_fc.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64x16xf32>
    %10 = "tdag.param"() {init = "zeros", name = "h.1.mlp.c_fc.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64xf32>
    %11 = "tdag.param"() {init = "normal", name = "h.1.mlp.c_proj.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x64xf32>
    %12 = "tdag.param"() {init = "zeros", name = "h.1.mlp.c_proj.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %13 = "tdag.param"() {init = "ones", name = "ln_f.weight", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %14 = "tdag.param"() {init = "zeros", name = "ln_f.bias", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %15:2 = "comm.recv"() {batched, peer = 0 : i64, peers = [0], stream = "pp", tag = 0 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : () -> (tensor<2x8x16xf32>, !comm.token)
    "comm.wait"(%15#1) : (!comm.token) -> ()
    %16:3 = "tdag.layernorm"(%15#0, %1, %2) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %17 = "tdag.linear"(%16#0, %3, %4) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
    %18:2 = "tdag.attention"(%17) {heads = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>) -> (tensor<2x8x16xf32>, tensor<2x2x8xf32>)
    %19 = "tdag.linear"(%18#0, %5, %6) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %20 = "tdag.add"(%15#0, %19) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %21:3 = "tdag.layernorm"(%20, %7, %8) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %22 = "tdag.linear"(%21#0, %9, %10) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
    %23 = "tdag.gelu"(%22) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %24 = "tdag.linear"(%23, %11, %12) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %25 = "tdag.add"(%20, %24) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %26:3 = "tdag.layernorm"(%25, %13, %14) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %27 = "tdag.matmul_nt"(%26#0, %0) {tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<256x16xf32>) -> tensor<2x8x256xf32>
    %28 = "tdag.input"() {first_sample = 0 : i64, name = "targets", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : () -> tensor<2x8xi32>
    %29:2 = "tdag.cross_entropy"(%27, %28) {tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8x256xf32>)
    "tdag.output"(%29#0) {name = "loss", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<f32>) -> ()
    %30 = "tdag.cross_entropy_grad"(%29#1, %28) {pass = "BI", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}, total_rows = 32 : i64} : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> tensor<2x8x256xf32>
    %31 = "tdag.linear_grad_input"(%30, %0) {pass = "BI", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x8x256xf32>, tensor<256x16xf32>) -> tensor<2x8x16xf32>
    %32:3 = "tdag.layernorm_grad"(%31, %25, %13, %26#1, %26#2) {pass = "BI", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %33 = "tdag.linear_grad_input"(%32#0, %11) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
    %34 = "tdag.gelu_grad"(%33, %22) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %35 = "tdag.linear_grad_input"(%34, %9) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
    %36:3 = "tdag.layernorm_grad"(%35, %20, %7, %21#1, %21#2) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %37 = "tdag.add"(%32#0, %36#0) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %38 = "tdag.linear_grad_input"(%37, %5) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %39 = "tdag.attention_grad"(%38, %17, %18#0, %18#1) {heads = 2 : i64, pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x48xf32>, tensor<2x8x16xf32>, tensor<2x2x8xf32>) -> tensor<2x8x48xf32>
    %40 = "tdag.linear_grad_input"(%39, %3) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>, tensor<48x16xf32>) -> tensor<2x8x16xf32>
    %41:3 = "tdag.layernorm_grad"(%40, %15#0, %1, %16#1, %16#2) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %42 = "tdag.add"(%37, %41#0) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %43 = "comm.send"(%42) {pass = "BI", peer = 0 : i64, peers = [0], stream = "pp", tag = 3 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>) -> !comm.token
    %44:2 = "comm.recv"() {batched, peer = 0 : i64, peers = [0], stream = "pp", tag = 1 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : () -> (tensor<2x8x16xf32>, !comm.token)
    "comm.wait"(%44#1) : (!comm.token) -> ()
    %45:3 = "tdag.layernorm"(%44#0, %1, %2) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %46 = "tdag.linear"(%45#0, %3, %4) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
    %47:2 = "tdag.attention"(%46) {heads = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>) -> (tensor<2x8x16xf32>, tensor<2x2x8xf32>)
    %48 = "tdag.linear"(%47#0, %5, %6) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %49 = "tdag.add"(%44#0, %48) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %50:3 = "tdag.layernorm"(%49, %7, %8) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %51 = "tdag.linear"(%50#0, %9, %10) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
    %52 = "tdag.gelu"(%51) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %53 = "tdag.linear"(%52, %11, %12) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %54 = "tdag.add"(%49, %53) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %55:3 = "tdag.layernorm"(%54, %13, %14) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %56 = "tdag.matmul_nt"(%55#0, %0) {tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<256x16xf32>) -> tensor<2x8x256xf32>
    %57 = "tdag.input"() {first_sample = 2 : i64, name = "targets", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : () -> tensor<2x8xi32>
    %58:2 = "tdag.cross_entropy"(%56, %57) {tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8x256xf32>)
    "tdag.output"(%58#0) {name = "loss", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<f32>) -> ()
    %59 = "tdag.cross_entropy_grad"(%58#1, %57) {pass = "BI", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}, total_rows = 32 : i64} : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> tensor<2x8x256xf32>
    %60 = "tdag.linear_grad_input"(%59, %0) {pass = "BI", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<2x8x256xf32>, tensor<256x16xf32>) -> tensor<2x8x16xf32>
    %61:3 = "tdag.layernorm_grad"(%60, %54, %13, %55#1, %55#2) {pass = "BI", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %62 = "tdag.add"(%32#1, %61#1) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %63 = "tdag.add"(%32#2, %61#2) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %64 = "tdag.linear_grad_input"(%61#0, %11) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
    %65 = "tdag.gelu_grad"(%64, %51) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %66 = "tdag.linear_grad_input"(%65, %9) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
    %67:3 = "tdag.layernorm_grad"(%66, %49, %7, %50#1, %50#2) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %68 = "tdag.add"(%36#1, %67#1) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %69 = "tdag.add"(%36#2, %67#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %70 = "tdag.add"(%61#0, %67#0) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %71 = "tdag.linear_grad_input"(%70, %5) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %72 = "tdag.attention_grad"(%71, %46, %47#0, %47#1) {heads = 2 : i64, pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x48xf32>, tensor<2x8x16xf32>, tensor<2x2x8xf32>) -> tensor<2x8x48xf32>
    %73 = "tdag.linear_grad_input"(%72, %3) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>, tensor<48x16xf32>) -> tensor<2x8x16xf32>
    %74:3 = "tdag.layernorm_grad"(%73, %44#0, %1, %45#1, %45#2) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %75 = "tdag.add"(%41#1, %74#1) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %76 = "tdag.add"(%41#2, %74#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %77 = "tdag.add"(%70, %74#0) {pass = "BI", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %78 = "comm.send"(%77) {pass = "BI", peer = 0 : i64, peers = [0], stream = "pp", tag = 4 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>) -> !comm.token
    %79 = "tdag.linear_grad_weight"(%30, %26#0) {pass = "BW", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x8x256xf32>, tensor<2x8x16xf32>) -> tensor<256x16xf32>
    %80 = "comm.send"(%79) {pass = "BW", peer = 0 : i64, peers = [0], stream = "pp", tag = 5 : i64, tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<256x16xf32>) -> !comm.token
    %81 = "tdag.linear_grad_weight"(%32#0, %23) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x64xf32>) -> tensor<16x64xf32>
    %82 = "tdag.bias_grad"(%32#0) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %83 = "tdag.linear_grad_weight"(%34, %21#0) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x16xf32>) -> tensor<64x16xf32>
    %84 = "tdag.bias_grad"(%34) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>) -> tensor<64xf32>
    %85 = "tdag.linear_grad_weight"(%37, %18#0) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %86 = "tdag.bias_grad"(%37) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %87 = "tdag.linear_grad_weight"(%39, %16#0) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>, tensor<2x8x16xf32>) -> tensor<48x16xf32>
    %88 = "tdag.bias_grad"(%39) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>) -> tensor<48xf32>
    %89 = "tdag.linear_grad_weight"(%59, %55#0) {pass = "BW", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<2x8x256xf32>, tensor<2x8x16xf32>) -> tensor<256x16xf32>
    %90 = "comm.send"(%89) {pass = "BW", peer = 0 : i64, peers = [0], stream = "pp", tag = 6 : i64, tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<256x16xf32>) -> !comm.token
    %91 = "tdag.linear_grad_weight"(%61#0, %52) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x64xf32>) -> tensor<16x64xf32>
    %92 = "tdag.add"(%81, %91) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %93 = "tdag.bias_grad"(%61#0) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %94 = "tdag.add"(%82, %93) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %95 = "tdag.linear_grad_weight"(%65, %50#0) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x16xf32>) -> tensor<64x16xf32>
    %96 = "tdag.add"(%83, %95) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %97 = "tdag.bias_grad"(%65) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>) -> tensor<64xf32>
    %98 = "tdag.add"(%84, %97) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %99 = "tdag.linear_grad_weight"(%70, %47#0) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %100 = "tdag.add"(%85, %99) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
    %101 = "tdag.bias_grad"(%70) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %102 = "tdag.add"(%86, %101) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %103 = "tdag.linear_grad_weight"(%72, %45#0) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>, tensor<2x8x16xf32>) -> tensor<48x16xf32>
    %104 = "tdag.add"(%87, %103) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>) -> tensor<48x16xf32>
    %105 = "tdag.bias_grad"(%72) {pass = "BW", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>) -> tensor<48xf32>
    %106 = "tdag.add"(%88, %105) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48xf32>, tensor<48xf32>) -> tensor<48xf32>
    %107 = "tdag.adam_state"() {param = "h.1.ln_1.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %108 = "tdag.adam_state"() {param = "h.1.ln_1.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%1, %75, %107, %108) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %109 = "tdag.adam_state"() {param = "h.1.ln_1.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %110 = "tdag.adam_state"() {param = "h.1.ln_1.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%2, %76, %109, %110) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %111 = "tdag.adam_state"() {param = "h.1.attn.c_attn.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48x16xf32>
    %112 = "tdag.adam_state"() {param = "h.1.attn.c_attn.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48x16xf32>
    "tdag.adamw"(%3, %104, %111, %112) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>, tensor<48x16xf32>, tensor<48x16xf32>) -> ()
    %113 = "tdag.adam_state"() {param = "h.1.attn.c_attn.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48xf32>
    %114 = "tdag.adam_state"() {param = "h.1.attn.c_attn.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48xf32>
    "tdag.adamw"(%4, %106, %113, %114) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48xf32>, tensor<48xf32>, tensor<48xf32>, tensor<48xf32>) -> ()
    %115 = "tdag.adam_state"() {param = "h.1.attn.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x16xf32>
    %116 = "tdag.adam_state"() {param = "h.1.attn.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x16xf32>
    "tdag.adamw"(%5, %100, %115, %116) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> ()
    %117 = "tdag.adam_state"() {param = "h.1.attn.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %118 = "tdag.adam_state"() {param = "h.1.attn.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%6, %102, %117, %118) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %119 = "tdag.adam_state"() {param = "h.1.ln_2.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %120 = "tdag.adam_state"() {param = "h.1.ln_2.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%7, %68, %119, %120) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %121 = "tdag.adam_state"() {param = "h.1.ln_2.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %122 = "tdag.adam_state"() {param = "h.1.ln_2.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%8, %69, %121, %122) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %123 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64x16xf32>
    %124 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64x16xf32>
    "tdag.adamw"(%9, %96, %123, %124) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<64x16xf32>) -> ()
    %125 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64xf32>
    %126 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64xf32>
    "tdag.adamw"(%10, %98, %125, %126) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> ()
    %127 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x64xf32>
    %128 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x64xf32>
    "tdag.adamw"(%11, %92, %127, %128) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> ()
    %129 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %130 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%12, %94, %129, %130) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %131 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %132 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%13, %62, %131, %132) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %133 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", slot = "exp_avg", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %134 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", slot = "exp_avg_sq", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    "tdag.adamw"(%14, %63, %133, %134) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> ()
    %135 = "comm.recv_into"(%0) {pass = "UPD", peer = 0 : i64, peers = [0], stream = "pp", tag = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> !comm.token
    "comm.wait"(%43) : (!comm.token) -> ()
    "comm.wait"(%78) : (!comm.token) -> ()
    "comm.wait"(%80) : (!comm.token) -> ()
    "comm.wait"(%90) : (!comm.token) -> ()
    "comm.wait"(%135) : (!comm.token) -> ()
    return
  }
}


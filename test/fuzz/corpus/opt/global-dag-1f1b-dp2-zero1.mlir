module attributes {piper.devices = 4 : i64} {
  func.func @gpt() {
    %0 = "tdag.input"() {devices = [0, 2], first_sample = 0 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> tensor<2x8xi32>
    %1 = "tdag.input"() {devices = [0, 2], first_sample = 2 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : () -> tensor<2x8xi32>
    %2 = "tdag.param"() {devices = [0, 2], init = "normal", name = "wte.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x16xf32>
    %3 = "tdag.param"() {devices = [1, 3], init = "normal", name = "wte.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x16xf32>
    %4 = "tdag.param"() {devices = [0, 2], init = "normal", name = "wpe.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<8x16xf32>
    %5 = "tdag.embedding"(%0, %2, %4) {devices = [0, 2], tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x8xi32>, tensor<256x16xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
    %6 = "tdag.embedding"(%1, %2, %4) {devices = [0, 2], tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<2x8xi32>, tensor<256x16xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
    %7 = "tdag.param"() {devices = [0, 2], init = "ones", name = "h.0.ln_1.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %8 = "tdag.param"() {devices = [0, 2], init = "zeros", name = "h.0.ln_1.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %9 = "tdag.param"() {devices = [0, 2], init = "normal", name = "h.0.attn.c_attn.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48x16xf32>
    %10 = "tdag.param"() {devices = [0, 2], init = "zeros", name = "h.0.attn.c_attn.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48xf32>
    %11 = "tdag.param"() {devices = [0, 2], init = "normal", name = "h.0.attn.c_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x16xf32>
    %12 = "tdag.param"() {devices = [0, 2], init = "zeros", name = "h.0.attn.c_proj.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %13 = "tdag.param"() {devices = [0, 2], init = "ones", name = "h.0.ln_2.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %14 = "tdag.param"() {devices = [0, 2], init = "zeros", name = "h.0.ln_2.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %15 = "tdag.param"() {devices = [0, 2], init = "normal", name = "h.0.mlp.c_fc.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64x16xf32>
    %16 = "tdag.param"() {devices = [0, 2], init = "zeros", name = "h.0.mlp.c_fc.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64xf32>
    %17 = "tdag.param"() {devices = [0, 2], init = "normal", name = "h.0.mlp.c_proj.weight", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x64xf32>
    %18 = "tdag.param"() {devices = [0, 2], init = "zeros", name = "h.0.mlp.c_proj.bias", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %19:3 = "tdag.layernorm"(%5, %7, %8) {devices = [0, 2], eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %20:3 = "tdag.layernorm"(%6, %7, %8) {devices = [0, 2], eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %21 = "tdag.linear"(%19#0, %9, %10) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
    %22 = "tdag.linear"(%20#0, %9, %10) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
    %23:2 = "tdag.attention"(%21) {devices = [0, 2], heads = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>) -> (tensor<2x8x16xf32>, tensor<2x2x8xf32>)
    %24:2 = "tdag.attention"(%22) {devices = [0, 2], heads = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>) -> (tensor<2x8x16xf32>, tensor<2x2x8xf32>)
    %25 = "tdag.linear"(%23#0, %11, %12) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %26 = "tdag.linear"(%24#0, %11, %12) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %27 = "tdag.add"(%5, %25) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %28 = "tdag.add"(%6, %26) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %29:3 = "tdag.layernorm"(%27, %13, %14) {devices = [0, 2], eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %30:3 = "tdag.layernorm"(%28, %13, %14) {devices = [0, 2], eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %31 = "tdag.linear"(%29#0, %15, %16) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
    %32 = "tdag.linear"(%30#0, %15, %16) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
    %33 = "tdag.gelu"(%31) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %34 = "tdag.gelu"(%32) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %35 = "tdag.linear"(%33, %17, %18) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %36 = "tdag.linear"(%34, %17, %18) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %37 = "tdag.add"(%27, %35) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %38 = "comm.send"(%37) {devices = [0, 2], peers = [1, 3], stream = "pp", tag = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>) -> !comm.token
    %39 = "tdag.add"(%28, %36) {devices = [0, 2], tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %40 = "comm.send"(%39) {devices = [0, 2], peers = [1, 3], stream = "pp", tag = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>) -> !comm.token
    %41 = "tdag.param"() {devices = [1, 3], init = "ones", name = "h.1.ln_1.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %42 = "tdag.param"() {devices = [1, 3], init = "zeros", name = "h.1.ln_1.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %43 = "tdag.param"() {devices = [1, 3], init = "normal", name = "h.1.attn.c_attn.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48x16xf32>
    %44 = "tdag.param"() {devices = [1, 3], init = "zeros", name = "h.1.attn.c_attn.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48xf32>
    %45 = "tdag.param"() {devices = [1, 3], init = "normal", name = "h.1.attn.c_proj.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x16xf32>
    %46 = "tdag.param"() {devices = [1, 3], init = "zeros", name = "h.1.attn.c_proj.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %47 = "tdag.param"() {devices = [1, 3], init = "ones", name = "h.1.ln_2.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %48 = "tdag.param"() {devices = [1, 3], init = "zeros", name = "h.1.ln_2.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %49 = "tdag.param"() {devices = [1, 3], init = "normal", name = "h.1.mlp.c_fc.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64x16xf32>
    %50 = "tdag.param"() {devices = [1, 3], init = "zeros", name = "h.1.mlp.c_fc.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64xf32>
    %51 = "tdag.param"() {devices = [1, 3], init = "normal", name = "h.1.mlp.c_proj.weight", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x64xf32>
    %52 = "tdag.param"() {devices = [1, 3], init = "zeros", name = "h.1.mlp.c_proj.bias", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %53:2 = "comm.recv"() {batched, devices = [1, 3], peers = [0, 2], stream = "pp", tag = 0 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : () -> (tensor<2x8x16xf32>, !comm.token)
    %54:3 = "tdag.layernorm"(%53#0, %41, %42) {devices = [1, 3], eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %55:2 = "comm.recv"() {batched, devices = [1, 3], peers = [0, 2], stream = "pp", tag = 1 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : () -> (tensor<2x8x16xf32>, !comm.token)
    %56:3 = "tdag.layernorm"(%55#0, %41, %42) {devices = [1, 3], eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %57 = "tdag.linear"(%54#0, %43, %44) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
    %58 = "tdag.linear"(%56#0, %43, %44) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<2x8x48xf32>
    %59:2 = "tdag.attention"(%57) {devices = [1, 3], heads = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>) -> (tensor<2x8x16xf32>, tensor<2x2x8xf32>)
    %60:2 = "tdag.attention"(%58) {devices = [1, 3], heads = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>) -> (tensor<2x8x16xf32>, tensor<2x2x8xf32>)
    %61 = "tdag.linear"(%59#0, %45, %46) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %62 = "tdag.linear"(%60#0, %45, %46) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %63 = "tdag.add"(%53#0, %61) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %64 = "tdag.add"(%55#0, %62) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %65:3 = "tdag.layernorm"(%63, %47, %48) {devices = [1, 3], eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %66:3 = "tdag.layernorm"(%64, %47, %48) {devices = [1, 3], eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %67 = "tdag.linear"(%65#0, %49, %50) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
    %68 = "tdag.linear"(%66#0, %49, %50) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<2x8x64xf32>
    %69 = "tdag.gelu"(%67) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %70 = "tdag.gelu"(%68) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %71 = "tdag.linear"(%69, %51, %52) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %72 = "tdag.linear"(%70, %51, %52) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
    %73 = "tdag.add"(%63, %71) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %74 = "tdag.add"(%64, %72) {devices = [1, 3], tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %75 = "tdag.param"() {devices = [1, 3], init = "ones", name = "ln_f.weight", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %76 = "tdag.param"() {devices = [1, 3], init = "zeros", name = "ln_f.bias", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %77:3 = "tdag.layernorm"(%73, %75, %76) {devices = [1, 3], eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %78:3 = "tdag.layernorm"(%74, %75, %76) {devices = [1, 3], eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8xf32>)
    %79 = "tdag.matmul_nt"(%77#0, %3) {devices = [1, 3], tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<256x16xf32>) -> tensor<2x8x256xf32>
    %80 = "tdag.matmul_nt"(%78#0, %3) {devices = [1, 3], tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<256x16xf32>) -> tensor<2x8x256xf32>
    %81 = "tdag.input"() {devices = [1, 3], first_sample = 0 : i64, name = "targets", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : () -> tensor<2x8xi32>
    %82 = "tdag.input"() {devices = [1, 3], first_sample = 2 : i64, name = "targets", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : () -> tensor<2x8xi32>
    %83:2 = "tdag.cross_entropy"(%79, %81) {devices = [1, 3], tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8x256xf32>)
    %84:2 = "tdag.cross_entropy"(%80, %82) {devices = [1, 3], tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> (tensor<f32>, tensor<2x8x256xf32>)
    "tdag.output"(%83#0) {devices = [1, 3], name = "loss", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<f32>) -> ()
    "tdag.output"(%84#0) {devices = [1, 3], name = "loss", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<f32>) -> ()
    %85 = "tdag.cross_entropy_grad"(%83#1, %81) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}, total_rows = 32 : i64} : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> tensor<2x8x256xf32>
    %86 = "tdag.cross_entropy_grad"(%84#1, %82) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}, total_rows = 32 : i64} : (tensor<2x8x256xf32>, tensor<2x8xi32>) -> tensor<2x8x256xf32>
    %87 = "tdag.linear_grad_input"(%85, %3) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x8x256xf32>, tensor<256x16xf32>) -> tensor<2x8x16xf32>
    %88 = "tdag.linear_grad_input"(%86, %3) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<2x8x256xf32>, tensor<256x16xf32>) -> tensor<2x8x16xf32>
    %89 = "tdag.linear_grad_weight"(%85, %77#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x8x256xf32>, tensor<2x8x16xf32>) -> tensor<256x16xf32>
    %90 = "comm.send"(%89) {devices = [1, 3], pass = "B", peers = [0, 2], stream = "pp", tag = 5 : i64, tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<256x16xf32>) -> !comm.token
    %91 = "tdag.linear_grad_weight"(%86, %78#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<2x8x256xf32>, tensor<2x8x16xf32>) -> tensor<256x16xf32>
    %92 = "comm.send"(%91) {devices = [1, 3], pass = "B", peers = [0, 2], stream = "pp", tag = 6 : i64, tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<256x16xf32>) -> !comm.token
    %93:3 = "tdag.layernorm_grad"(%87, %73, %75, %77#1, %77#2) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %94:3 = "tdag.layernorm_grad"(%88, %74, %75, %78#1, %78#2) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %95 = "tdag.add"(%93#1, %94#1) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %96:2 = "comm.all_reduce"(%95) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %97 = "tdag.add"(%93#2, %94#2) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %98:2 = "comm.all_reduce"(%97) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %99 = "tdag.linear_grad_input"(%93#0, %51) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
    %100 = "tdag.linear_grad_input"(%94#0, %51) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
    %101 = "tdag.linear_grad_weight"(%93#0, %69) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x64xf32>) -> tensor<16x64xf32>
    %102 = "tdag.linear_grad_weight"(%94#0, %70) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x64xf32>) -> tensor<16x64xf32>
    %103 = "tdag.add"(%101, %102) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %104:2 = "comm.all_reduce"(%103) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    %105 = "tdag.bias_grad"(%93#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %106 = "tdag.bias_grad"(%94#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %107 = "tdag.add"(%105, %106) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %108:2 = "comm.all_reduce"(%107) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %109 = "tdag.gelu_grad"(%99, %67) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %110 = "tdag.gelu_grad"(%100, %68) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %111 = "tdag.linear_grad_input"(%109, %49) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
    %112 = "tdag.linear_grad_input"(%110, %49) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
    %113 = "tdag.linear_grad_weight"(%109, %65#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x16xf32>) -> tensor<64x16xf32>
    %114 = "tdag.linear_grad_weight"(%110, %66#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x16xf32>) -> tensor<64x16xf32>
    %115 = "tdag.add"(%113, %114) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %116:2 = "comm.all_reduce"(%115) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    %117 = "tdag.bias_grad"(%109) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>) -> tensor<64xf32>
    %118 = "tdag.bias_grad"(%110) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>) -> tensor<64xf32>
    %119 = "tdag.add"(%117, %118) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %120:2 = "comm.all_reduce"(%119) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64xf32>) -> (tensor<64xf32>, !comm.token)
    %121:3 = "tdag.layernorm_grad"(%111, %63, %47, %65#1, %65#2) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %122:3 = "tdag.layernorm_grad"(%112, %64, %47, %66#1, %66#2) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %123 = "tdag.add"(%121#1, %122#1) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %124:2 = "comm.all_reduce"(%123) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %125 = "tdag.add"(%121#2, %122#2) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %126:2 = "comm.all_reduce"(%125) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %127 = "tdag.add"(%93#0, %121#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %128 = "tdag.add"(%94#0, %122#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %129 = "tdag.linear_grad_input"(%127, %45) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %130 = "tdag.linear_grad_input"(%128, %45) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %131 = "tdag.linear_grad_weight"(%127, %59#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %132 = "tdag.linear_grad_weight"(%128, %60#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %133 = "tdag.add"(%131, %132) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
    %134:2 = "comm.all_reduce"(%133) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    %135 = "tdag.bias_grad"(%127) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %136 = "tdag.bias_grad"(%128) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %137 = "tdag.add"(%135, %136) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %138:2 = "comm.all_reduce"(%137) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %139 = "tdag.attention_grad"(%129, %57, %59#0, %59#1) {devices = [1, 3], heads = 2 : i64, pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x48xf32>, tensor<2x8x16xf32>, tensor<2x2x8xf32>) -> tensor<2x8x48xf32>
    %140 = "tdag.attention_grad"(%130, %58, %60#0, %60#1) {devices = [1, 3], heads = 2 : i64, pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x48xf32>, tensor<2x8x16xf32>, tensor<2x2x8xf32>) -> tensor<2x8x48xf32>
    %141 = "tdag.linear_grad_input"(%139, %43) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>, tensor<48x16xf32>) -> tensor<2x8x16xf32>
    %142 = "tdag.linear_grad_input"(%140, %43) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>, tensor<48x16xf32>) -> tensor<2x8x16xf32>
    %143 = "tdag.linear_grad_weight"(%139, %54#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>, tensor<2x8x16xf32>) -> tensor<48x16xf32>
    %144 = "tdag.linear_grad_weight"(%140, %56#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>, tensor<2x8x16xf32>) -> tensor<48x16xf32>
    %145 = "tdag.add"(%143, %144) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>) -> tensor<48x16xf32>
    %146:2 = "comm.all_reduce"(%145) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    %147 = "tdag.bias_grad"(%139) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>) -> tensor<48xf32>
    %148 = "tdag.bias_grad"(%140) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>) -> tensor<48xf32>
    %149 = "tdag.add"(%147, %148) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48xf32>, tensor<48xf32>) -> tensor<48xf32>
    %150:2 = "comm.all_reduce"(%149) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48xf32>) -> (tensor<48xf32>, !comm.token)
    %151:3 = "tdag.layernorm_grad"(%141, %53#0, %41, %54#1, %54#2) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %152:3 = "tdag.layernorm_grad"(%142, %55#0, %41, %56#1, %56#2) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %153 = "tdag.add"(%151#1, %152#1) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %154:2 = "comm.all_reduce"(%153) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %155 = "tdag.add"(%151#2, %152#2) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %156:2 = "comm.all_reduce"(%155) {devices = [1, 3], group = [1, 3], pass = "B", stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %157 = "tdag.add"(%127, %151#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %158 = "comm.send"(%157) {devices = [1, 3], pass = "B", peers = [0, 2], stream = "pp", tag = 3 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>) -> !comm.token
    %159 = "tdag.add"(%128, %152#0) {devices = [1, 3], pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %160 = "comm.send"(%159) {devices = [1, 3], pass = "B", peers = [0, 2], stream = "pp", tag = 4 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>) -> !comm.token
    %161:2 = "comm.recv"() {batched, devices = [0, 2], pass = "B", peers = [1, 3], stream = "pp", tag = 3 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : () -> (tensor<2x8x16xf32>, !comm.token)
    %162 = "tdag.linear_grad_input"(%161#0, %17) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
    %163:2 = "comm.recv"() {batched, devices = [0, 2], pass = "B", peers = [1, 3], stream = "pp", tag = 4 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : () -> (tensor<2x8x16xf32>, !comm.token)
    %164 = "tdag.linear_grad_input"(%163#0, %17) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
    %165 = "tdag.linear_grad_weight"(%161#0, %33) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x64xf32>) -> tensor<16x64xf32>
    %166 = "tdag.linear_grad_weight"(%163#0, %34) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x64xf32>) -> tensor<16x64xf32>
    %167 = "tdag.add"(%165, %166) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %168:2 = "comm.all_reduce"(%167) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    %169 = "tdag.bias_grad"(%161#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %170 = "tdag.bias_grad"(%163#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %171 = "tdag.add"(%169, %170) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %172:2 = "comm.all_reduce"(%171) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %173 = "tdag.gelu_grad"(%162, %31) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %174 = "tdag.gelu_grad"(%164, %32) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %175 = "tdag.linear_grad_input"(%173, %15) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
    %176 = "tdag.linear_grad_input"(%174, %15) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
    %177 = "tdag.linear_grad_weight"(%173, %29#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x16xf32>) -> tensor<64x16xf32>
    %178 = "tdag.linear_grad_weight"(%174, %30#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>, tensor<2x8x16xf32>) -> tensor<64x16xf32>
    %179 = "tdag.add"(%177, %178) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    %180:2 = "comm.all_reduce"(%179) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    %181 = "tdag.bias_grad"(%173) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x64xf32>) -> tensor<64xf32>
    %182 = "tdag.bias_grad"(%174) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x64xf32>) -> tensor<64xf32>
    %183 = "tdag.add"(%181, %182) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %184:2 = "comm.all_reduce"(%183) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64xf32>) -> (tensor<64xf32>, !comm.token)
    %185:3 = "tdag.layernorm_grad"(%175, %27, %13, %29#1, %29#2) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %186:3 = "tdag.layernorm_grad"(%176, %28, %13, %30#1, %30#2) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %187 = "tdag.add"(%185#1, %186#1) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %188:2 = "comm.all_reduce"(%187) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %189 = "tdag.add"(%185#2, %186#2) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %190:2 = "comm.all_reduce"(%189) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %191 = "tdag.add"(%161#0, %185#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %192 = "tdag.add"(%163#0, %186#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %193 = "tdag.linear_grad_input"(%191, %11) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %194 = "tdag.linear_grad_input"(%192, %11) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<16x16xf32>) -> tensor<2x8x16xf32>
    %195 = "tdag.linear_grad_weight"(%191, %23#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %196 = "tdag.linear_grad_weight"(%192, %24#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<16x16xf32>
    %197 = "tdag.add"(%195, %196) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
    %198:2 = "comm.all_reduce"(%197) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    %199 = "tdag.bias_grad"(%191) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %200 = "tdag.bias_grad"(%192) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>) -> tensor<16xf32>
    %201 = "tdag.add"(%199, %200) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %202:2 = "comm.all_reduce"(%201) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %203 = "tdag.attention_grad"(%193, %21, %23#0, %23#1) {devices = [0, 2], heads = 2 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x48xf32>, tensor<2x8x16xf32>, tensor<2x2x8xf32>) -> tensor<2x8x48xf32>
    %204 = "tdag.attention_grad"(%194, %22, %24#0, %24#1) {devices = [0, 2], heads = 2 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x48xf32>, tensor<2x8x16xf32>, tensor<2x2x8xf32>) -> tensor<2x8x48xf32>
    %205 = "tdag.linear_grad_input"(%203, %9) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>, tensor<48x16xf32>) -> tensor<2x8x16xf32>
    %206 = "tdag.linear_grad_input"(%204, %9) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>, tensor<48x16xf32>) -> tensor<2x8x16xf32>
    %207 = "tdag.linear_grad_weight"(%203, %19#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>, tensor<2x8x16xf32>) -> tensor<48x16xf32>
    %208 = "tdag.linear_grad_weight"(%204, %20#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>, tensor<2x8x16xf32>) -> tensor<48x16xf32>
    %209 = "tdag.add"(%207, %208) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>) -> tensor<48x16xf32>
    %210:2 = "comm.all_reduce"(%209) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    %211 = "tdag.bias_grad"(%203) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x48xf32>) -> tensor<48xf32>
    %212 = "tdag.bias_grad"(%204) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x48xf32>) -> tensor<48xf32>
    %213 = "tdag.add"(%211, %212) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48xf32>, tensor<48xf32>) -> tensor<48xf32>
    %214:2 = "comm.all_reduce"(%213) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48xf32>) -> (tensor<48xf32>, !comm.token)
    %215:3 = "tdag.layernorm_grad"(%205, %5, %7, %19#1, %19#2) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %216:3 = "tdag.layernorm_grad"(%206, %6, %7, %20#1, %20#2) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %217 = "tdag.add"(%215#1, %216#1) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %218:2 = "comm.all_reduce"(%217) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %219 = "tdag.add"(%215#2, %216#2) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %220:2 = "comm.all_reduce"(%219) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %221 = "tdag.add"(%191, %215#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %222 = "tdag.add"(%192, %216#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
    %223:2 = "tdag.embedding_grad"(%221, %0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> (tensor<256x16xf32>, tensor<8x16xf32>)
    %224:2 = "tdag.embedding_grad"(%222, %1) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> (tensor<256x16xf32>, tensor<8x16xf32>)
    %225 = "tdag.add"(%223#1, %224#1) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %226:2 = "comm.all_reduce"(%225) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<8x16xf32>) -> (tensor<8x16xf32>, !comm.token)
    %227:2 = "comm.recv"() {devices = [0, 2], pass = "B", peers = [1, 3], stream = "pp", tag = 5 : i64, tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> (tensor<256x16xf32>, !comm.token)
    %228 = "tdag.add"(%227#0, %223#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %229:2 = "comm.recv"() {devices = [0, 2], pass = "B", peers = [1, 3], stream = "pp", tag = 6 : i64, tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : () -> (tensor<256x16xf32>, !comm.token)
    %230 = "tdag.add"(%229#0, %224#0) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %231 = "tdag.add"(%228, %230) {devices = [0, 2], pass = "B", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %232:2 = "comm.all_reduce"(%231) {devices = [0, 2], group = [0, 2], pass = "B", stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> (tensor<256x16xf32>, !comm.token)
    %233 = "tdag.adam_state"() {devices = [0, 2], param = "wte.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2048xf32>
    %234 = "tdag.adam_state"() {devices = [0, 2], param = "wte.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2048xf32>
    "tdag.adamw"(%2, %232#0, %233, %234) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>, tensor<2048xf32>, tensor<2048xf32>) -> ()
    %235:2 = "comm.all_gather"(%2) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> (tensor<256x16xf32>, !comm.token)
    %236 = "comm.send"(%2) {devices = [0, 2], pass = "UPD", peers = [1, 3], stream = "pp", tag = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> !comm.token
    %237 = "tdag.adam_state"() {devices = [0, 2], param = "wpe.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<64xf32>
    %238 = "tdag.adam_state"() {devices = [0, 2], param = "wpe.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<64xf32>
    "tdag.adamw"(%4, %226#0, %237, %238) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<64xf32>, tensor<64xf32>) -> ()
    %239:2 = "comm.all_gather"(%4) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<8x16xf32>) -> (tensor<8x16xf32>, !comm.token)
    %240 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.ln_1.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %241 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.ln_1.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%7, %218#0, %240, %241) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %242:2 = "comm.all_gather"(%7) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %243 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.ln_1.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %244 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.ln_1.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%8, %220#0, %243, %244) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %245:2 = "comm.all_gather"(%8) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %246 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.attn.c_attn.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<384xf32>
    %247 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.attn.c_attn.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<384xf32>
    "tdag.adamw"(%9, %210#0, %246, %247) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>, tensor<384xf32>, tensor<384xf32>) -> ()
    %248:2 = "comm.all_gather"(%9) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    %249 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.attn.c_attn.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<24xf32>
    %250 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.attn.c_attn.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<24xf32>
    "tdag.adamw"(%10, %214#0, %249, %250) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48xf32>, tensor<48xf32>, tensor<24xf32>, tensor<24xf32>) -> ()
    %251:2 = "comm.all_gather"(%10) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48xf32>) -> (tensor<48xf32>, !comm.token)
    %252 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.attn.c_proj.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<128xf32>
    %253 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.attn.c_proj.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<128xf32>
    "tdag.adamw"(%11, %198#0, %252, %253) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<128xf32>, tensor<128xf32>) -> ()
    %254:2 = "comm.all_gather"(%11) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    %255 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.attn.c_proj.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %256 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.attn.c_proj.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%12, %202#0, %255, %256) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %257:2 = "comm.all_gather"(%12) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %258 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.ln_2.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %259 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.ln_2.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%13, %188#0, %258, %259) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %260:2 = "comm.all_gather"(%13) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %261 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.ln_2.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %262 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.ln_2.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%14, %190#0, %261, %262) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %263:2 = "comm.all_gather"(%14) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %264 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.mlp.c_fc.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<512xf32>
    %265 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.mlp.c_fc.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<512xf32>
    "tdag.adamw"(%15, %180#0, %264, %265) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>, tensor<512xf32>, tensor<512xf32>) -> ()
    %266:2 = "comm.all_gather"(%15) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    %267 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.mlp.c_fc.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<32xf32>
    %268 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.mlp.c_fc.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<32xf32>
    "tdag.adamw"(%16, %184#0, %267, %268) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64xf32>, tensor<64xf32>, tensor<32xf32>, tensor<32xf32>) -> ()
    %269:2 = "comm.all_gather"(%16) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64xf32>) -> (tensor<64xf32>, !comm.token)
    %270 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.mlp.c_proj.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<512xf32>
    %271 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.mlp.c_proj.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<512xf32>
    "tdag.adamw"(%17, %168#0, %270, %271) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>, tensor<512xf32>, tensor<512xf32>) -> ()
    %272:2 = "comm.all_gather"(%17) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    %273 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.mlp.c_proj.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %274 = "tdag.adam_state"() {devices = [0, 2], param = "h.0.mlp.c_proj.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%18, %172#0, %273, %274) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [0, 2], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %275:2 = "comm.all_gather"(%18) {devices = [0, 2], group = [0, 2], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %276 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.ln_1.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %277 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.ln_1.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%41, %154#0, %276, %277) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %278:2 = "comm.all_gather"(%41) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %279 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.ln_1.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %280 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.ln_1.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%42, %156#0, %279, %280) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %281:2 = "comm.all_gather"(%42) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %282 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.attn.c_attn.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<384xf32>
    %283 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.attn.c_attn.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<384xf32>
    "tdag.adamw"(%43, %146#0, %282, %283) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>, tensor<384xf32>, tensor<384xf32>) -> ()
    %284:2 = "comm.all_gather"(%43) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    %285 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.attn.c_attn.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<24xf32>
    %286 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.attn.c_attn.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<24xf32>
    "tdag.adamw"(%44, %150#0, %285, %286) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48xf32>, tensor<48xf32>, tensor<24xf32>, tensor<24xf32>) -> ()
    %287:2 = "comm.all_gather"(%44) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48xf32>) -> (tensor<48xf32>, !comm.token)
    %288 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.attn.c_proj.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<128xf32>
    %289 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.attn.c_proj.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<128xf32>
    "tdag.adamw"(%45, %134#0, %288, %289) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>, tensor<128xf32>, tensor<128xf32>) -> ()
    %290:2 = "comm.all_gather"(%45) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    %291 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.attn.c_proj.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %292 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.attn.c_proj.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%46, %138#0, %291, %292) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %293:2 = "comm.all_gather"(%46) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %294 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.ln_2.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %295 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.ln_2.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%47, %124#0, %294, %295) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %296:2 = "comm.all_gather"(%47) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %297 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.ln_2.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %298 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.ln_2.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%48, %126#0, %297, %298) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %299:2 = "comm.all_gather"(%48) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %300 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.mlp.c_fc.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<512xf32>
    %301 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.mlp.c_fc.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<512xf32>
    "tdag.adamw"(%49, %116#0, %300, %301) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>, tensor<512xf32>, tensor<512xf32>) -> ()
    %302:2 = "comm.all_gather"(%49) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    %303 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.mlp.c_fc.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<32xf32>
    %304 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.mlp.c_fc.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<32xf32>
    "tdag.adamw"(%50, %120#0, %303, %304) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64xf32>, tensor<64xf32>, tensor<32xf32>, tensor<32xf32>) -> ()
    %305:2 = "comm.all_gather"(%50) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64xf32>) -> (tensor<64xf32>, !comm.token)
    %306 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.mlp.c_proj.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<512xf32>
    %307 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.mlp.c_proj.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<512xf32>
    "tdag.adamw"(%51, %104#0, %306, %307) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>, tensor<512xf32>, tensor<512xf32>) -> ()
    %308:2 = "comm.all_gather"(%51) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    %309 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.mlp.c_proj.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %310 = "tdag.adam_state"() {devices = [1, 3], param = "h.1.mlp.c_proj.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%52, %108#0, %309, %310) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %311:2 = "comm.all_gather"(%52) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %312 = "tdag.adam_state"() {devices = [1, 3], param = "ln_f.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %313 = "tdag.adam_state"() {devices = [1, 3], param = "ln_f.weight", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%75, %96#0, %312, %313) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %314:2 = "comm.all_gather"(%75) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %315 = "tdag.adam_state"() {devices = [1, 3], param = "ln_f.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %316 = "tdag.adam_state"() {devices = [1, 3], param = "ln_f.bias", pass = "UPD", shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%76, %98#0, %315, %316) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, devices = [1, 3], eps = 1.000000e-08 : f64, pass = "UPD", shards = 2 : i64, tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %317:2 = "comm.all_gather"(%76) {devices = [1, 3], group = [1, 3], pass = "UPD", shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %318 = "comm.recv_into"(%3) {devices = [1, 3], pass = "UPD", peers = [0, 2], stream = "pp", tag = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> !comm.token
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


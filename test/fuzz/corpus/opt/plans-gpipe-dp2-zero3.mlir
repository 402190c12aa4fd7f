module attributes {piper.devices = 4 : i64, piper.global_batch = 4 : i64} {
  func.func @device_0() {
    %0 = "tdag.param"() {init = "normal", name = "wte.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x16xf32>
    %1 = "tdag.param"() {init = "normal", name = "wpe.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<8x16xf32>
    %2 = "tdag.param"() {init = "ones", name = "h.0.ln_1.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %3 = "tdag.param"() {init = "zeros", name = "h.0.ln_1.bias", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %4 = "tdag.param"() {init = "normal", name = "h.0.attn.c_attn.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48x16xf32>
    %5 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_attn.bias", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48xf32>
    %6 = "tdag.param"() {init = "normal", name = "h.0.attn.c_proj.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x16xf32>
    %7 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_proj.bias", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %8 = "tdag.param"() {init = "ones", name = "h.0.ln_2.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %9 = "tdag.param"() {init = "zeros", name = "h.0.ln_2.bias", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %10 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_fc.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64x16xf32>
    %11 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_fc.bias", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64xf32>
    %12 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_proj.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x64xf32>
    %13 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_proj.bias", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %14 = "tdag.input"() {first_sample = 0 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> tensor<1x8xi32>
    %15:2 = "comm.all_gather"(%0) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<256x16xf32>) -> (tensor<256x16xf32>, !comm.token)
    %16:2 = "comm.all_gather"(%1) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<8x16xf32>) -> (tensor<8x16xf32>, !comm.token)
    "comm.wait"(%15#1) : (!comm.token) -> ()
    "comm.wait"(%16#1) : (!comm.token) -> ()
    %17 = "tdag.embedding"(%14, %15#0, %16#0) {tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<1x8xi32>, tensor<256x16xf32>, tensor<8x16xf32>) -> tensor<1x8x16xf32>
    %18:2 = "comm.all_gather"(%2) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %19:2 = "comm.all_gather"(%3) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%18#1) : (!comm.token) -> ()
    "comm.wait"(%19#1) : (!comm.token) -> ()
    %20:3 = "tdag.layernorm"(%17, %18#0, %19#0) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %21:2 = "comm.all_gather"(%4) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    %22:2 = "comm.all_gather"(%5) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<48xf32>) -> (tensor<48xf32>, !comm.token)
    "comm.wait"(%21#1) : (!comm.token) -> ()
    "comm.wait"(%22#1) : (!comm.token) -> ()
    %23 = "tdag.linear"(%20#0, %21#0, %22#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<1x8x48xf32>
    %24:2 = "tdag.attention"(%23) {heads = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>) -> (tensor<1x8x16xf32>, tensor<1x2x8xf32>)
    %25:2 = "comm.all_gather"(%6) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    %26:2 = "comm.all_gather"(%7) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%25#1) : (!comm.token) -> ()
    "comm.wait"(%26#1) : (!comm.token) -> ()
    %27 = "tdag.linear"(%24#0, %25#0, %26#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %28 = "tdag.add"(%17, %27) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %29:2 = "comm.all_gather"(%8) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %30:2 = "comm.all_gather"(%9) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%29#1) : (!comm.token) -> ()
    "comm.wait"(%30#1) : (!comm.token) -> ()
    %31:3 = "tdag.layernorm"(%28, %29#0, %30#0) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %32:2 = "comm.all_gather"(%10) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    %33:2 = "comm.all_gather"(%11) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<64xf32>) -> (tensor<64xf32>, !comm.token)
    "comm.wait"(%32#1) : (!comm.token) -> ()
    "comm.wait"(%33#1) : (!comm.token) -> ()
    %34 = "tdag.linear"(%31#0, %32#0, %33#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %35 = "tdag.gelu"(%34) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %36:2 = "comm.all_gather"(%12) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    %37:2 = "comm.all_gather"(%13) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%36#1) : (!comm.token) -> ()
    "comm.wait"(%37#1) : (!comm.token) -> ()
    %38 = "tdag.linear"(%35, %36#0, %37#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %39 = "tdag.add"(%28, %38) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %40 = "comm.send"(%39) {peer = 1 : i64, peers = [1, 3], stream = "pp", tag = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>) -> !comm.token
    %41 = "tdag.input"() {first_sample = 2 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : () -> tensor<1x8xi32>
    %42:2 = "comm.all_gather"(%0) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<256x16xf32>) -> (tensor<256x16xf32>, !comm.token)
    %43:2 = "comm.all_gather"(%1) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<8x16xf32>) -> (tensor<8x16xf32>, !comm.token)
    "comm.wait"(%42#1) : (!comm.token) -> ()
    "comm.wait"(%43#1) : (!comm.token) -> ()
    %44 = "tdag.embedding"(%41, %42#0, %43#0) {tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<1x8xi32>, tensor<256x16xf32>, tensor<8x16xf32>) -> tensor<1x8x16xf32>
    %45:2 = "comm.all_gather"(%2) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %46:2 = "comm.all_gather"(%3) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%45#1) : (!comm.token) -> ()
    "comm.wait"(%46#1) : (!comm.token) -> ()
    %47:3 = "tdag.layernorm"(%44, %45#0, %46#0) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %48:2 = "comm.all_gather"(%4) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    %49:2 = "comm.all_gather"(%5) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<48xf32>) -> (tensor<48xf32>, !comm.token)
    "comm.wait"(%48#1) : (!comm.token) -> ()
    "comm.wait"(%49#1) : (!comm.token) -> ()
    %50 = "tdag.linear"(%47#0, %48#0, %49#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<1x8x48xf32>
    %51:2 = "tdag.attention"(%50) {heads = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>) -> (tensor<1x8x16xf32>, tensor<1x2x8xf32>)
    %52:2 = "comm.all_gather"(%6) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    %53:2 = "comm.all_gather"(%7) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%52#1) : (!comm.token) -> ()
    "comm.wait"(%53#1) : (!comm.token) -> ()
    %54 = "tdag.linear"(%51#0, %52#0, %53#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %55 = "tdag.add"(%44, %54) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %56:2 = "comm.all_gather"(%8) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %57:2 = "comm.all_gather"(%9) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%56#1) : (!comm.token) -> ()
    "comm.wait"(%57#1) : (!comm.token) -> ()
    %58:3 = "tdag.layernorm"(%55, %56#0, %57#0) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %59:2 = "comm.all_gather"(%10) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    %60:2 = "comm.all_gather"(%11) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<64xf32>) -> (tensor<64xf32>, !comm.token)
    "comm.wait"(%59#1) : (!comm.token) -> ()
    "comm.wait"(%60#1) : (!comm.token) -> ()
    %61 = "tdag.linear"(%58#0, %59#0, %60#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %62 = "tdag.gelu"(%61) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %63:2 = "comm.all_gather"(%12) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    %64:2 = "comm.all_gather"(%13) {group = [0, 2], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%63#1) : (!comm.token) -> ()
    "comm.wait"(%64#1) : (!comm.token) -> ()
    %65 = "tdag.linear"(%62, %63#0, %64#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %66 = "tdag.add"(%55, %65) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %67 = "comm.send"(%66) {peer = 1 : i64, peers = [1, 3], stream = "pp", tag = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>) -> !comm.token
    %68:2 = "comm.recv"() {batched, pass = "B", peer = 1 : i64, peers = [1, 3], stream = "pp", tag = 3 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : () -> (tensor<1x8x16xf32>, !comm.token)
    %69:2 = "comm.all_gather"(%12) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    "comm.wait"(%68#1) : (!comm.token) -> ()
    "comm.wait"(%69#1) : (!comm.token) -> ()
    %70 = "tdag.linear_grad_input"(%68#0, %69#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16x64xf32>) -> tensor<1x8x64xf32>
    %71 = "tdag.linear_grad_weight"(%68#0, %35) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x64xf32>) -> tensor<16x64xf32>
    %72 = "tdag.bias_grad"(%68#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %73 = "tdag.gelu_grad"(%70, %34) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %74:2 = "comm.all_gather"(%10) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    "comm.wait"(%74#1) : (!comm.token) -> ()
    %75 = "tdag.linear_grad_input"(%73, %74#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<64x16xf32>) -> tensor<1x8x16xf32>
    %76 = "tdag.linear_grad_weight"(%73, %31#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x16xf32>) -> tensor<64x16xf32>
    %77 = "tdag.bias_grad"(%73) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>) -> tensor<64xf32>
    %78:2 = "comm.all_gather"(%8) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%78#1) : (!comm.token) -> ()
    %79:3 = "tdag.layernorm_grad"(%75, %28, %78#0, %31#1, %31#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %80 = "tdag.add"(%68#0, %79#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %81:2 = "comm.all_gather"(%6) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    "comm.wait"(%81#1) : (!comm.token) -> ()
    %82 = "tdag.linear_grad_input"(%80, %81#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
    %83 = "tdag.linear_grad_weight"(%80, %24#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<16x16xf32>
    %84 = "tdag.bias_grad"(%80) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %85 = "tdag.attention_grad"(%82, %23, %24#0, %24#1) {heads = 2 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x48xf32>, tensor<1x8x16xf32>, tensor<1x2x8xf32>) -> tensor<1x8x48xf32>
    %86:2 = "comm.all_gather"(%4) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    "comm.wait"(%86#1) : (!comm.token) -> ()
    %87 = "tdag.linear_grad_input"(%85, %86#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>, tensor<48x16xf32>) -> tensor<1x8x16xf32>
    %88 = "tdag.linear_grad_weight"(%85, %20#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>, tensor<1x8x16xf32>) -> tensor<48x16xf32>
    %89 = "tdag.bias_grad"(%85) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>) -> tensor<48xf32>
    %90:2 = "comm.all_gather"(%2) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%90#1) : (!comm.token) -> ()
    %91:3 = "tdag.layernorm_grad"(%87, %17, %90#0, %20#1, %20#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %92 = "tdag.add"(%80, %91#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %93:2 = "tdag.embedding_grad"(%92, %14) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8xi32>) -> (tensor<256x16xf32>, tensor<8x16xf32>)
    %94:2 = "comm.recv"() {pass = "B", peer = 1 : i64, peers = [1, 3], stream = "pp", tag = 5 : i64, tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> (tensor<256x16xf32>, !comm.token)
    "comm.wait"(%94#1) : (!comm.token) -> ()
    %95 = "tdag.add"(%94#0, %93#0) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %96:2 = "comm.recv"() {batched, pass = "B", peer = 1 : i64, peers = [1, 3], stream = "pp", tag = 4 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : () -> (tensor<1x8x16xf32>, !comm.token)
    %97:2 = "comm.all_gather"(%12) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    "comm.wait"(%96#1) : (!comm.token) -> ()
    "comm.wait"(%97#1) : (!comm.token) -> ()
    %98 = "tdag.linear_grad_input"(%96#0, %97#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16x64xf32>) -> tensor<1x8x64xf32>
    %99 = "tdag.linear_grad_weight"(%96#0, %62) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x64xf32>) -> tensor<16x64xf32>
    %100 = "tdag.add"(%71, %99) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %101:2 = "comm.reduce_scatter"(%100) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x64xf32>) -> (tensor<512xf32>, !comm.token)
    %102 = "tdag.bias_grad"(%96#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %103 = "tdag.add"(%72, %102) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%101#1) : (!comm.token) -> ()
    %104:2 = "comm.reduce_scatter"(%103) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %105 = "tdag.gelu_grad"(%98, %61) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %106:2 = "comm.all_gather"(%10) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    "comm.wait"(%106#1) : (!comm.token) -> ()
    %107 = "tdag.linear_grad_input"(%105, %106#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<64x16xf32>) -> tensor<1x8x16xf32>
    %108 = "tdag.linear_grad_weight"(%105, %58#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x16xf32>) -> tensor<64x16xf32>
    %109 = "tdag.add"(%76, %108) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    "comm.wait"(%104#1) : (!comm.token) -> ()
    %110:2 = "comm.reduce_scatter"(%109) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64x16xf32>) -> (tensor<512xf32>, !comm.token)
    %111 = "tdag.bias_grad"(%105) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>) -> tensor<64xf32>
    %112 = "tdag.add"(%77, %111) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    "comm.wait"(%110#1) : (!comm.token) -> ()
    %113:2 = "comm.reduce_scatter"(%112) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64xf32>) -> (tensor<32xf32>, !comm.token)
    %114:2 = "comm.all_gather"(%8) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%114#1) : (!comm.token) -> ()
    %115:3 = "tdag.layernorm_grad"(%107, %55, %114#0, %58#1, %58#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %116 = "tdag.add"(%79#1, %115#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%113#1) : (!comm.token) -> ()
    %117:2 = "comm.reduce_scatter"(%116) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %118 = "tdag.add"(%79#2, %115#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%117#1) : (!comm.token) -> ()
    %119:2 = "comm.reduce_scatter"(%118) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %120 = "tdag.add"(%96#0, %115#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %121:2 = "comm.all_gather"(%6) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    "comm.wait"(%121#1) : (!comm.token) -> ()
    %122 = "tdag.linear_grad_input"(%120, %121#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
    %123 = "tdag.linear_grad_weight"(%120, %51#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<16x16xf32>
    %124 = "tdag.add"(%83, %123) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
    "comm.wait"(%119#1) : (!comm.token) -> ()
    %125:2 = "comm.reduce_scatter"(%124) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x16xf32>) -> (tensor<128xf32>, !comm.token)
    %126 = "tdag.bias_grad"(%120) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %127 = "tdag.add"(%84, %126) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%125#1) : (!comm.token) -> ()
    %128:2 = "comm.reduce_scatter"(%127) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %129 = "tdag.attention_grad"(%122, %50, %51#0, %51#1) {heads = 2 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x48xf32>, tensor<1x8x16xf32>, tensor<1x2x8xf32>) -> tensor<1x8x48xf32>
    %130:2 = "comm.all_gather"(%4) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    "comm.wait"(%130#1) : (!comm.token) -> ()
    %131 = "tdag.linear_grad_input"(%129, %130#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>, tensor<48x16xf32>) -> tensor<1x8x16xf32>
    %132 = "tdag.linear_grad_weight"(%129, %47#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>, tensor<1x8x16xf32>) -> tensor<48x16xf32>
    %133 = "tdag.add"(%88, %132) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>) -> tensor<48x16xf32>
    "comm.wait"(%128#1) : (!comm.token) -> ()
    %134:2 = "comm.reduce_scatter"(%133) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48x16xf32>) -> (tensor<384xf32>, !comm.token)
    %135 = "tdag.bias_grad"(%129) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>) -> tensor<48xf32>
    %136 = "tdag.add"(%89, %135) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48xf32>, tensor<48xf32>) -> tensor<48xf32>
    "comm.wait"(%134#1) : (!comm.token) -> ()
    %137:2 = "comm.reduce_scatter"(%136) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48xf32>) -> (tensor<24xf32>, !comm.token)
    %138:2 = "comm.all_gather"(%2) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%138#1) : (!comm.token) -> ()
    %139:3 = "tdag.layernorm_grad"(%131, %44, %138#0, %47#1, %47#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %140 = "tdag.add"(%91#1, %139#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%137#1) : (!comm.token) -> ()
    %141:2 = "comm.reduce_scatter"(%140) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %142 = "tdag.add"(%91#2, %139#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%141#1) : (!comm.token) -> ()
    %143:2 = "comm.reduce_scatter"(%142) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %144 = "tdag.add"(%120, %139#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %145:2 = "tdag.embedding_grad"(%144, %41) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8xi32>) -> (tensor<256x16xf32>, tensor<8x16xf32>)
    %146 = "tdag.add"(%93#1, %145#1) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    "comm.wait"(%143#1) : (!comm.token) -> ()
    %147:2 = "comm.reduce_scatter"(%146) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<8x16xf32>) -> (tensor<64xf32>, !comm.token)
    %148:2 = "comm.recv"() {pass = "B", peer = 1 : i64, peers = [1, 3], stream = "pp", tag = 6 : i64, tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : () -> (tensor<256x16xf32>, !comm.token)
    "comm.wait"(%148#1) : (!comm.token) -> ()
    %149 = "tdag.add"(%148#0, %145#0) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %150 = "tdag.add"(%95, %149) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    "comm.wait"(%147#1) : (!comm.token) -> ()
    %151:2 = "comm.reduce_scatter"(%150) {group = [0, 2], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> (tensor<2048xf32>, !comm.token)
    %152 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2048xf32>
    %153 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2048xf32>
    "comm.wait"(%151#1) : (!comm.token) -> ()
    "tdag.adamw"(%0, %151#0, %152, %153) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>, tensor<2048xf32>, tensor<2048xf32>, tensor<2048xf32>) -> ()
    %154:2 = "comm.all_gather"(%0) {group = [0, 2], pass = "UPD", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> (tensor<256x16xf32>, !comm.token)
    "comm.wait"(%154#1) : (!comm.token) -> ()
    %155 = "comm.send"(%154#0) {pass = "UPD", peer = 1 : i64, peers = [1, 3], stream = "pp", tag = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> !comm.token
    %156 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<64xf32>
    %157 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<64xf32>
    "tdag.adamw"(%1, %147#0, %156, %157) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<8x16xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> ()
    %158 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %159 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%2, %141#0, %158, %159) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %160 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %161 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%3, %143#0, %160, %161) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %162 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<384xf32>
    %163 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<384xf32>
    "tdag.adamw"(%4, %134#0, %162, %163) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48x16xf32>, tensor<384xf32>, tensor<384xf32>, tensor<384xf32>) -> ()
    %164 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<24xf32>
    %165 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<24xf32>
    "tdag.adamw"(%5, %137#0, %164, %165) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>) -> ()
    %166 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<128xf32>
    %167 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<128xf32>
    "tdag.adamw"(%6, %125#0, %166, %167) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x16xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> ()
    %168 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %169 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%7, %128#0, %168, %169) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %170 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %171 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%8, %117#0, %170, %171) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %172 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %173 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%9, %119#0, %172, %173) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %174 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<512xf32>
    %175 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<512xf32>
    "tdag.adamw"(%10, %110#0, %174, %175) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64x16xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) -> ()
    %176 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<32xf32>
    %177 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<32xf32>
    "tdag.adamw"(%11, %113#0, %176, %177) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> ()
    %178 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<512xf32>
    %179 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<512xf32>
    "tdag.adamw"(%12, %101#0, %178, %179) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x64xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) -> ()
    %180 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %181 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%13, %104#0, %180, %181) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    "comm.wait"(%40) : (!comm.token) -> ()
    "comm.wait"(%67) : (!comm.token) -> ()
    "comm.wait"(%155) : (!comm.token) -> ()
    return
  }
  func.func @device_1() {
    %0 = "tdag.param"() {init = "normal", name = "wte.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x16xf32>
    %1 = "tdag.param"() {init = "ones", name = "h.1.ln_1.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %2 = "tdag.param"() {init = "zeros", name = "h.1.ln_1.bias", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %3 = "tdag.param"() {init = "normal", name = "h.1.attn.c_attn.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48x16xf32>
    %4 = "tdag.param"() {init = "zeros", name = "h.1.attn.c_attn.bias", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48xf32>
    %5 = "tdag.param"() {init = "normal", name = "h.1.attn.c_proj.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x16xf32>
    %6 = "tdag.param"() {init = "zeros", name = "h.1.attn.c_proj.bias", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %7 = "tdag.param"() {init = "ones", name = "h.1.ln_2.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %8 = "tdag.param"() {init = "zeros", name = "h.1.ln_2.bias", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %9 = "tdag.param"() {init = "normal", name = "h.1.mlp.c_fc.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64x16xf32>
    %10 = "tdag.param"() {init = "zeros", name = "h.1.mlp.c_fc.bias", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64xf32>
    %11 = "tdag.param"() {init = "normal", name = "h.1.mlp.c_proj.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x64xf32>
    %12 = "tdag.param"() {init = "zeros", name = "h.1.mlp.c_proj.bias", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %13 = "tdag.param"() {init = "ones", name = "ln_f.weight", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %14 = "tdag.param"() {init = "zeros", name = "ln_f.bias", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %15:2 = "comm.recv"() {batched, peer = 0 : i64, peers = [0, 2], stream = "pp", tag = 0 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : () -> (tensor<1x8x16xf32>, !comm.token)
    %16:2 = "comm.all_gather"(%1) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %17:2 = "comm.all_gather"(%2) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%15#1) : (!comm.token) -> ()
    "comm.wait"(%16#1) : (!comm.token) -> ()
    "comm.wait"(%17#1) : (!comm.token) -> ()
    %18:3 = "tdag.layernorm"(%15#0, %16#0, %17#0) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %19:2 = "comm.all_gather"(%3) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    %20:2 = "comm.all_gather"(%4) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<48xf32>) -> (tensor<48xf32>, !comm.token)
    "comm.wait"(%19#1) : (!comm.token) -> ()
    "comm.wait"(%20#1) : (!comm.token) -> ()
    %21 = "tdag.linear"(%18#0, %19#0, %20#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<1x8x48xf32>
    %22:2 = "tdag.attention"(%21) {heads = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>) -> (tensor<1x8x16xf32>, tensor<1x2x8xf32>)
    %23:2 = "comm.all_gather"(%5) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    %24:2 = "comm.all_gather"(%6) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%23#1) : (!comm.token) -> ()
    "comm.wait"(%24#1) : (!comm.token) -> ()
    %25 = "tdag.linear"(%22#0, %23#0, %24#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %26 = "tdag.add"(%15#0, %25) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %27:2 = "comm.all_gather"(%7) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %28:2 = "comm.all_gather"(%8) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%27#1) : (!comm.token) -> ()
    "comm.wait"(%28#1) : (!comm.token) -> ()
    %29:3 = "tdag.layernorm"(%26, %27#0, %28#0) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %30:2 = "comm.all_gather"(%9) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    %31:2 = "comm.all_gather"(%10) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<64xf32>) -> (tensor<64xf32>, !comm.token)
    "comm.wait"(%30#1) : (!comm.token) -> ()
    "comm.wait"(%31#1) : (!comm.token) -> ()
    %32 = "tdag.linear"(%29#0, %30#0, %31#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %33 = "tdag.gelu"(%32) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %34:2 = "comm.all_gather"(%11) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    %35:2 = "comm.all_gather"(%12) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%34#1) : (!comm.token) -> ()
    "comm.wait"(%35#1) : (!comm.token) -> ()
    %36 = "tdag.linear"(%33, %34#0, %35#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %37 = "tdag.add"(%26, %36) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %38:2 = "comm.all_gather"(%13) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %39:2 = "comm.all_gather"(%14) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%38#1) : (!comm.token) -> ()
    "comm.wait"(%39#1) : (!comm.token) -> ()
    %40:3 = "tdag.layernorm"(%37, %38#0, %39#0) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %41 = "tdag.matmul_nt"(%40#0, %0) {tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<256x16xf32>) -> tensor<1x8x256xf32>
    %42 = "tdag.input"() {first_sample = 0 : i64, name = "targets", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : () -> tensor<1x8xi32>
    %43:2 = "tdag.cross_entropy"(%41, %42) {tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<1x8x256xf32>, tensor<1x8xi32>) -> (tensor<f32>, tensor<1x8x256xf32>)
    "tdag.output"(%43#0) {name = "loss", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<f32>) -> ()
    %44:2 = "comm.recv"() {batched, peer = 0 : i64, peers = [0, 2], stream = "pp", tag = 1 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : () -> (tensor<1x8x16xf32>, !comm.token)
    %45:2 = "comm.all_gather"(%1) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %46:2 = "comm.all_gather"(%2) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%44#1) : (!comm.token) -> ()
    "comm.wait"(%45#1) : (!comm.token) -> ()
    "comm.wait"(%46#1) : (!comm.token) -> ()
    %47:3 = "tdag.layernorm"(%44#0, %45#0, %46#0) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %48:2 = "comm.all_gather"(%3) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    %49:2 = "comm.all_gather"(%4) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<48xf32>) -> (tensor<48xf32>, !comm.token)
    "comm.wait"(%48#1) : (!comm.token) -> ()
    "comm.wait"(%49#1) : (!comm.token) -> ()
    %50 = "tdag.linear"(%47#0, %48#0, %49#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<1x8x48xf32>
    %51:2 = "tdag.attention"(%50) {heads = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>) -> (tensor<1x8x16xf32>, tensor<1x2x8xf32>)
    %52:2 = "comm.all_gather"(%5) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    %53:2 = "comm.all_gather"(%6) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%52#1) : (!comm.token) -> ()
    "comm.wait"(%53#1) : (!comm.token) -> ()
    %54 = "tdag.linear"(%51#0, %52#0, %53#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %55 = "tdag.add"(%44#0, %54) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %56:2 = "comm.all_gather"(%7) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %57:2 = "comm.all_gather"(%8) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%56#1) : (!comm.token) -> ()
    "comm.wait"(%57#1) : (!comm.token) -> ()
    %58:3 = "tdag.layernorm"(%55, %56#0, %57#0) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %59:2 = "comm.all_gather"(%9) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    %60:2 = "comm.all_gather"(%10) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<64xf32>) -> (tensor<64xf32>, !comm.token)
    "comm.wait"(%59#1) : (!comm.token) -> ()
    "comm.wait"(%60#1) : (!comm.token) -> ()
    %61 = "tdag.linear"(%58#0, %59#0, %60#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %62 = "tdag.gelu"(%61) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %63:2 = "comm.all_gather"(%11) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    %64:2 = "comm.all_gather"(%12) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%63#1) : (!comm.token) -> ()
    "comm.wait"(%64#1) : (!comm.token) -> ()
    %65 = "tdag.linear"(%62, %63#0, %64#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %66 = "tdag.add"(%55, %65) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %67:2 = "comm.all_gather"(%13) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %68:2 = "comm.all_gather"(%14) {group = [1, 3], shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%67#1) : (!comm.token) -> ()
    "comm.wait"(%68#1) : (!comm.token) -> ()
    %69:3 = "tdag.layernorm"(%66, %67#0, %68#0) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %70 = "tdag.matmul_nt"(%69#0, %0) {tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<256x16xf32>) -> tensor<1x8x256xf32>
    %71 = "tdag.input"() {first_sample = 2 : i64, name = "targets", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : () -> tensor<1x8xi32>
    %72:2 = "tdag.cross_entropy"(%70, %71) {tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<1x8x256xf32>, tensor<1x8xi32>) -> (tensor<f32>, tensor<1x8x256xf32>)
    "tdag.output"(%72#0) {name = "loss", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<f32>) -> ()
    %73 = "tdag.cross_entropy_grad"(%43#1, %42) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}, total_rows = 32 : i64} : (tensor<1x8x256xf32>, tensor<1x8xi32>) -> tensor<1x8x256xf32>
    %74 = "tdag.linear_grad_input"(%73, %0) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<1x8x256xf32>, tensor<256x16xf32>) -> tensor<1x8x16xf32>
    %75 = "tdag.linear_grad_weight"(%73, %40#0) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<1x8x256xf32>, tensor<1x8x16xf32>) -> tensor<256x16xf32>
    %76 = "comm.send"(%75) {pass = "B", peer = 0 : i64, peers = [0, 2], stream = "pp", tag = 5 : i64, tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<256x16xf32>) -> !comm.token
    %77:2 = "comm.all_gather"(%13) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%77#1) : (!comm.token) -> ()
    %78:3 = "tdag.layernorm_grad"(%74, %37, %77#0, %40#1, %40#2) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %79:2 = "comm.all_gather"(%11) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    "comm.wait"(%79#1) : (!comm.token) -> ()
    %80 = "tdag.linear_grad_input"(%78#0, %79#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16x64xf32>) -> tensor<1x8x64xf32>
    %81 = "tdag.linear_grad_weight"(%78#0, %33) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x64xf32>) -> tensor<16x64xf32>
    %82 = "tdag.bias_grad"(%78#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %83 = "tdag.gelu_grad"(%80, %32) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %84:2 = "comm.all_gather"(%9) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    "comm.wait"(%84#1) : (!comm.token) -> ()
    %85 = "tdag.linear_grad_input"(%83, %84#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<64x16xf32>) -> tensor<1x8x16xf32>
    %86 = "tdag.linear_grad_weight"(%83, %29#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x16xf32>) -> tensor<64x16xf32>
    %87 = "tdag.bias_grad"(%83) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>) -> tensor<64xf32>
    %88:2 = "comm.all_gather"(%7) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%88#1) : (!comm.token) -> ()
    %89:3 = "tdag.layernorm_grad"(%85, %26, %88#0, %29#1, %29#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %90 = "tdag.add"(%78#0, %89#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %91:2 = "comm.all_gather"(%5) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    "comm.wait"(%91#1) : (!comm.token) -> ()
    %92 = "tdag.linear_grad_input"(%90, %91#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
    %93 = "tdag.linear_grad_weight"(%90, %22#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<16x16xf32>
    %94 = "tdag.bias_grad"(%90) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %95 = "tdag.attention_grad"(%92, %21, %22#0, %22#1) {heads = 2 : i64, pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x48xf32>, tensor<1x8x16xf32>, tensor<1x2x8xf32>) -> tensor<1x8x48xf32>
    %96:2 = "comm.all_gather"(%3) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    "comm.wait"(%96#1) : (!comm.token) -> ()
    %97 = "tdag.linear_grad_input"(%95, %96#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>, tensor<48x16xf32>) -> tensor<1x8x16xf32>
    %98 = "tdag.linear_grad_weight"(%95, %18#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>, tensor<1x8x16xf32>) -> tensor<48x16xf32>
    %99 = "tdag.bias_grad"(%95) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>) -> tensor<48xf32>
    %100:2 = "comm.all_gather"(%1) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%100#1) : (!comm.token) -> ()
    %101:3 = "tdag.layernorm_grad"(%97, %15#0, %100#0, %18#1, %18#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %102 = "tdag.add"(%90, %101#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %103 = "comm.send"(%102) {pass = "B", peer = 0 : i64, peers = [0, 2], stream = "pp", tag = 3 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>) -> !comm.token
    %104 = "tdag.cross_entropy_grad"(%72#1, %71) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}, total_rows = 32 : i64} : (tensor<1x8x256xf32>, tensor<1x8xi32>) -> tensor<1x8x256xf32>
    %105 = "tdag.linear_grad_input"(%104, %0) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<1x8x256xf32>, tensor<256x16xf32>) -> tensor<1x8x16xf32>
    %106 = "tdag.linear_grad_weight"(%104, %69#0) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<1x8x256xf32>, tensor<1x8x16xf32>) -> tensor<256x16xf32>
    %107 = "comm.send"(%106) {pass = "B", peer = 0 : i64, peers = [0, 2], stream = "pp", tag = 6 : i64, tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<256x16xf32>) -> !comm.token
    %108:2 = "comm.all_gather"(%13) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%108#1) : (!comm.token) -> ()
    %109:3 = "tdag.layernorm_grad"(%105, %66, %108#0, %69#1, %69#2) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %110 = "tdag.add"(%78#1, %109#1) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %111:2 = "comm.reduce_scatter"(%110) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %112 = "tdag.add"(%78#2, %109#2) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%111#1) : (!comm.token) -> ()
    %113:2 = "comm.reduce_scatter"(%112) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %114:2 = "comm.all_gather"(%11) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    "comm.wait"(%114#1) : (!comm.token) -> ()
    %115 = "tdag.linear_grad_input"(%109#0, %114#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16x64xf32>) -> tensor<1x8x64xf32>
    %116 = "tdag.linear_grad_weight"(%109#0, %62) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x64xf32>) -> tensor<16x64xf32>
    %117 = "tdag.add"(%81, %116) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    "comm.wait"(%113#1) : (!comm.token) -> ()
    %118:2 = "comm.reduce_scatter"(%117) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x64xf32>) -> (tensor<512xf32>, !comm.token)
    %119 = "tdag.bias_grad"(%109#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %120 = "tdag.add"(%82, %119) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%118#1) : (!comm.token) -> ()
    %121:2 = "comm.reduce_scatter"(%120) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %122 = "tdag.gelu_grad"(%115, %61) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %123:2 = "comm.all_gather"(%9) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    "comm.wait"(%123#1) : (!comm.token) -> ()
    %124 = "tdag.linear_grad_input"(%122, %123#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<64x16xf32>) -> tensor<1x8x16xf32>
    %125 = "tdag.linear_grad_weight"(%122, %58#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x16xf32>) -> tensor<64x16xf32>
    %126 = "tdag.add"(%86, %125) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    "comm.wait"(%121#1) : (!comm.token) -> ()
    %127:2 = "comm.reduce_scatter"(%126) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64x16xf32>) -> (tensor<512xf32>, !comm.token)
    %128 = "tdag.bias_grad"(%122) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>) -> tensor<64xf32>
    %129 = "tdag.add"(%87, %128) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    "comm.wait"(%127#1) : (!comm.token) -> ()
    %130:2 = "comm.reduce_scatter"(%129) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64xf32>) -> (tensor<32xf32>, !comm.token)
    %131:2 = "comm.all_gather"(%7) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%131#1) : (!comm.token) -> ()
    %132:3 = "tdag.layernorm_grad"(%124, %55, %131#0, %58#1, %58#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %133 = "tdag.add"(%89#1, %132#1) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%130#1) : (!comm.token) -> ()
    %134:2 = "comm.reduce_scatter"(%133) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %135 = "tdag.add"(%89#2, %132#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%134#1) : (!comm.token) -> ()
    %136:2 = "comm.reduce_scatter"(%135) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %137 = "tdag.add"(%109#0, %132#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %138:2 = "comm.all_gather"(%5) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    "comm.wait"(%138#1) : (!comm.token) -> ()
    %139 = "tdag.linear_grad_input"(%137, %138#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
    %140 = "tdag.linear_grad_weight"(%137, %51#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<16x16xf32>
    %141 = "tdag.add"(%93, %140) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
    "comm.wait"(%136#1) : (!comm.token) -> ()
    %142:2 = "comm.reduce_scatter"(%141) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x16xf32>) -> (tensor<128xf32>, !comm.token)
    %143 = "tdag.bias_grad"(%137) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %144 = "tdag.add"(%94, %143) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%142#1) : (!comm.token) -> ()
    %145:2 = "comm.reduce_scatter"(%144) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %146 = "tdag.attention_grad"(%139, %50, %51#0, %51#1) {heads = 2 : i64, pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x48xf32>, tensor<1x8x16xf32>, tensor<1x2x8xf32>) -> tensor<1x8x48xf32>
    %147:2 = "comm.all_gather"(%3) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    "comm.wait"(%147#1) : (!comm.token) -> ()
    %148 = "tdag.linear_grad_input"(%146, %147#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>, tensor<48x16xf32>) -> tensor<1x8x16xf32>
    %149 = "tdag.linear_grad_weight"(%146, %47#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>, tensor<1x8x16xf32>) -> tensor<48x16xf32>
    %150 = "tdag.add"(%98, %149) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>) -> tensor<48x16xf32>
    "comm.wait"(%145#1) : (!comm.token) -> ()
    %151:2 = "comm.reduce_scatter"(%150) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48x16xf32>) -> (tensor<384xf32>, !comm.token)
    %152 = "tdag.bias_grad"(%146) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>) -> tensor<48xf32>
    %153 = "tdag.add"(%99, %152) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48xf32>, tensor<48xf32>) -> tensor<48xf32>
    "comm.wait"(%151#1) : (!comm.token) -> ()
    %154:2 = "comm.reduce_scatter"(%153) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48xf32>) -> (tensor<24xf32>, !comm.token)
    %155:2 = "comm.all_gather"(%1) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%155#1) : (!comm.token) -> ()
    %156:3 = "tdag.layernorm_grad"(%148, %44#0, %155#0, %47#1, %47#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %157 = "tdag.add"(%101#1, %156#1) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%154#1) : (!comm.token) -> ()
    %158:2 = "comm.reduce_scatter"(%157) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %159 = "tdag.add"(%101#2, %156#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%158#1) : (!comm.token) -> ()
    %160:2 = "comm.reduce_scatter"(%159) {group = [1, 3], pass = "B", shard = 0 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %161 = "tdag.add"(%137, %156#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %162 = "comm.send"(%161) {pass = "B", peer = 0 : i64, peers = [0, 2], stream = "pp", tag = 4 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>) -> !comm.token
    %163 = "tdag.adam_state"() {param = "h.1.ln_1.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %164 = "tdag.adam_state"() {param = "h.1.ln_1.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%1, %158#0, %163, %164) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %165 = "tdag.adam_state"() {param = "h.1.ln_1.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %166 = "tdag.adam_state"() {param = "h.1.ln_1.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "comm.wait"(%160#1) : (!comm.token) -> ()
    "tdag.adamw"(%2, %160#0, %165, %166) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %167 = "tdag.adam_state"() {param = "h.1.attn.c_attn.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<384xf32>
    %168 = "tdag.adam_state"() {param = "h.1.attn.c_attn.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<384xf32>
    "tdag.adamw"(%3, %151#0, %167, %168) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48x16xf32>, tensor<384xf32>, tensor<384xf32>, tensor<384xf32>) -> ()
    %169 = "tdag.adam_state"() {param = "h.1.attn.c_attn.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<24xf32>
    %170 = "tdag.adam_state"() {param = "h.1.attn.c_attn.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<24xf32>
    "tdag.adamw"(%4, %154#0, %169, %170) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>) -> ()
    %171 = "tdag.adam_state"() {param = "h.1.attn.c_proj.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<128xf32>
    %172 = "tdag.adam_state"() {param = "h.1.attn.c_proj.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<128xf32>
    "tdag.adamw"(%5, %142#0, %171, %172) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x16xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> ()
    %173 = "tdag.adam_state"() {param = "h.1.attn.c_proj.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %174 = "tdag.adam_state"() {param = "h.1.attn.c_proj.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%6, %145#0, %173, %174) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %175 = "tdag.adam_state"() {param = "h.1.ln_2.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %176 = "tdag.adam_state"() {param = "h.1.ln_2.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%7, %134#0, %175, %176) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %177 = "tdag.adam_state"() {param = "h.1.ln_2.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %178 = "tdag.adam_state"() {param = "h.1.ln_2.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%8, %136#0, %177, %178) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %179 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<512xf32>
    %180 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<512xf32>
    "tdag.adamw"(%9, %127#0, %179, %180) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64x16xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) -> ()
    %181 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<32xf32>
    %182 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<32xf32>
    "tdag.adamw"(%10, %130#0, %181, %182) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> ()
    %183 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<512xf32>
    %184 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<512xf32>
    "tdag.adamw"(%11, %118#0, %183, %184) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x64xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) -> ()
    %185 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %186 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%12, %121#0, %185, %186) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %187 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %188 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%13, %111#0, %187, %188) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %189 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %190 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", shard = 0 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%14, %113#0, %189, %190) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 0 : i64, shards = 2 : i64, tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %191 = "comm.recv_into"(%0) {pass = "UPD", peer = 0 : i64, peers = [0, 2], stream = "pp", tag = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> !comm.token
    "comm.wait"(%76) : (!comm.token) -> ()
    "comm.wait"(%103) : (!comm.token) -> ()
    "comm.wait"(%107) : (!comm.token) -> ()
    "comm.wait"(%162) : (!comm.token) -> ()
    "comm.wait"(%191) : (!comm.token) -> ()
    return
  }
  func.func @device_2() {
    %0 = "tdag.param"() {init = "normal", name = "wte.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x16xf32>
    %1 = "tdag.param"() {init = "normal", name = "wpe.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<8x16xf32>
    %2 = "tdag.param"() {init = "ones", name = "h.0.ln_1.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %3 = "tdag.param"() {init = "zeros", name = "h.0.ln_1.bias", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %4 = "tdag.param"() {init = "normal", name = "h.0.attn.c_attn.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48x16xf32>
    %5 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_attn.bias", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<48xf32>
    %6 = "tdag.param"() {init = "normal", name = "h.0.attn.c_proj.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x16xf32>
    %7 = "tdag.param"() {init = "zeros", name = "h.0.attn.c_proj.bias", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %8 = "tdag.param"() {init = "ones", name = "h.0.ln_2.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %9 = "tdag.param"() {init = "zeros", name = "h.0.ln_2.bias", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %10 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_fc.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64x16xf32>
    %11 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_fc.bias", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<64xf32>
    %12 = "tdag.param"() {init = "normal", name = "h.0.mlp.c_proj.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16x64xf32>
    %13 = "tdag.param"() {init = "zeros", name = "h.0.mlp.c_proj.bias", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<16xf32>
    %14 = "tdag.input"() {first_sample = 1 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> tensor<1x8xi32>
    %15:2 = "comm.all_gather"(%0) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<256x16xf32>) -> (tensor<256x16xf32>, !comm.token)
    %16:2 = "comm.all_gather"(%1) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<8x16xf32>) -> (tensor<8x16xf32>, !comm.token)
    "comm.wait"(%15#1) : (!comm.token) -> ()
    "comm.wait"(%16#1) : (!comm.token) -> ()
    %17 = "tdag.embedding"(%14, %15#0, %16#0) {tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<1x8xi32>, tensor<256x16xf32>, tensor<8x16xf32>) -> tensor<1x8x16xf32>
    %18:2 = "comm.all_gather"(%2) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %19:2 = "comm.all_gather"(%3) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%18#1) : (!comm.token) -> ()
    "comm.wait"(%19#1) : (!comm.token) -> ()
    %20:3 = "tdag.layernorm"(%17, %18#0, %19#0) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %21:2 = "comm.all_gather"(%4) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    %22:2 = "comm.all_gather"(%5) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<48xf32>) -> (tensor<48xf32>, !comm.token)
    "comm.wait"(%21#1) : (!comm.token) -> ()
    "comm.wait"(%22#1) : (!comm.token) -> ()
    %23 = "tdag.linear"(%20#0, %21#0, %22#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<1x8x48xf32>
    %24:2 = "tdag.attention"(%23) {heads = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>) -> (tensor<1x8x16xf32>, tensor<1x2x8xf32>)
    %25:2 = "comm.all_gather"(%6) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    %26:2 = "comm.all_gather"(%7) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%25#1) : (!comm.token) -> ()
    "comm.wait"(%26#1) : (!comm.token) -> ()
    %27 = "tdag.linear"(%24#0, %25#0, %26#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %28 = "tdag.add"(%17, %27) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %29:2 = "comm.all_gather"(%8) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %30:2 = "comm.all_gather"(%9) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%29#1) : (!comm.token) -> ()
    "comm.wait"(%30#1) : (!comm.token) -> ()
    %31:3 = "tdag.layernorm"(%28, %29#0, %30#0) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %32:2 = "comm.all_gather"(%10) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    %33:2 = "comm.all_gather"(%11) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<64xf32>) -> (tensor<64xf32>, !comm.token)
    "comm.wait"(%32#1) : (!comm.token) -> ()
    "comm.wait"(%33#1) : (!comm.token) -> ()
    %34 = "tdag.linear"(%31#0, %32#0, %33#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %35 = "tdag.gelu"(%34) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %36:2 = "comm.all_gather"(%12) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    %37:2 = "comm.all_gather"(%13) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%36#1) : (!comm.token) -> ()
    "comm.wait"(%37#1) : (!comm.token) -> ()
    %38 = "tdag.linear"(%35, %36#0, %37#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %39 = "tdag.add"(%28, %38) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %40 = "comm.send"(%39) {peer = 3 : i64, peers = [1, 3], stream = "pp", tag = 0 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>) -> !comm.token
    %41 = "tdag.input"() {first_sample = 3 : i64, name = "tokens", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : () -> tensor<1x8xi32>
    %42:2 = "comm.all_gather"(%0) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<256x16xf32>) -> (tensor<256x16xf32>, !comm.token)
    %43:2 = "comm.all_gather"(%1) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<8x16xf32>) -> (tensor<8x16xf32>, !comm.token)
    "comm.wait"(%42#1) : (!comm.token) -> ()
    "comm.wait"(%43#1) : (!comm.token) -> ()
    %44 = "tdag.embedding"(%41, %42#0, %43#0) {tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<1x8xi32>, tensor<256x16xf32>, tensor<8x16xf32>) -> tensor<1x8x16xf32>
    %45:2 = "comm.all_gather"(%2) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %46:2 = "comm.all_gather"(%3) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%45#1) : (!comm.token) -> ()
    "comm.wait"(%46#1) : (!comm.token) -> ()
    %47:3 = "tdag.layernorm"(%44, %45#0, %46#0) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %48:2 = "comm.all_gather"(%4) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    %49:2 = "comm.all_gather"(%5) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<48xf32>) -> (tensor<48xf32>, !comm.token)
    "comm.wait"(%48#1) : (!comm.token) -> ()
    "comm.wait"(%49#1) : (!comm.token) -> ()
    %50 = "tdag.linear"(%47#0, %48#0, %49#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<1x8x48xf32>
    %51:2 = "tdag.attention"(%50) {heads = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>) -> (tensor<1x8x16xf32>, tensor<1x2x8xf32>)
    %52:2 = "comm.all_gather"(%6) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    %53:2 = "comm.all_gather"(%7) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%52#1) : (!comm.token) -> ()
    "comm.wait"(%53#1) : (!comm.token) -> ()
    %54 = "tdag.linear"(%51#0, %52#0, %53#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %55 = "tdag.add"(%44, %54) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %56:2 = "comm.all_gather"(%8) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %57:2 = "comm.all_gather"(%9) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%56#1) : (!comm.token) -> ()
    "comm.wait"(%57#1) : (!comm.token) -> ()
    %58:3 = "tdag.layernorm"(%55, %56#0, %57#0) {eps = 1.000000e-05 : f64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %59:2 = "comm.all_gather"(%10) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    %60:2 = "comm.all_gather"(%11) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<64xf32>) -> (tensor<64xf32>, !comm.token)
    "comm.wait"(%59#1) : (!comm.token) -> ()
    "comm.wait"(%60#1) : (!comm.token) -> ()
    %61 = "tdag.linear"(%58#0, %59#0, %60#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %62 = "tdag.gelu"(%61) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %63:2 = "comm.all_gather"(%12) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    %64:2 = "comm.all_gather"(%13) {group = [0, 2], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%63#1) : (!comm.token) -> ()
    "comm.wait"(%64#1) : (!comm.token) -> ()
    %65 = "tdag.linear"(%62, %63#0, %64#0) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %66 = "tdag.add"(%55, %65) {tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %67 = "comm.send"(%66) {peer = 3 : i64, peers = [1, 3], stream = "pp", tag = 1 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>) -> !comm.token
    %68:2 = "comm.recv"() {batched, pass = "B", peer = 3 : i64, peers = [1, 3], stream = "pp", tag = 3 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : () -> (tensor<1x8x16xf32>, !comm.token)
    %69:2 = "comm.all_gather"(%12) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    "comm.wait"(%68#1) : (!comm.token) -> ()
    "comm.wait"(%69#1) : (!comm.token) -> ()
    %70 = "tdag.linear_grad_input"(%68#0, %69#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16x64xf32>) -> tensor<1x8x64xf32>
    %71 = "tdag.linear_grad_weight"(%68#0, %35) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x64xf32>) -> tensor<16x64xf32>
    %72 = "tdag.bias_grad"(%68#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %73 = "tdag.gelu_grad"(%70, %34) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %74:2 = "comm.all_gather"(%10) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    "comm.wait"(%74#1) : (!comm.token) -> ()
    %75 = "tdag.linear_grad_input"(%73, %74#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<64x16xf32>) -> tensor<1x8x16xf32>
    %76 = "tdag.linear_grad_weight"(%73, %31#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x16xf32>) -> tensor<64x16xf32>
    %77 = "tdag.bias_grad"(%73) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>) -> tensor<64xf32>
    %78:2 = "comm.all_gather"(%8) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%78#1) : (!comm.token) -> ()
    %79:3 = "tdag.layernorm_grad"(%75, %28, %78#0, %31#1, %31#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %80 = "tdag.add"(%68#0, %79#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %81:2 = "comm.all_gather"(%6) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    "comm.wait"(%81#1) : (!comm.token) -> ()
    %82 = "tdag.linear_grad_input"(%80, %81#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
    %83 = "tdag.linear_grad_weight"(%80, %24#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<16x16xf32>
    %84 = "tdag.bias_grad"(%80) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %85 = "tdag.attention_grad"(%82, %23, %24#0, %24#1) {heads = 2 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x48xf32>, tensor<1x8x16xf32>, tensor<1x2x8xf32>) -> tensor<1x8x48xf32>
    %86:2 = "comm.all_gather"(%4) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    "comm.wait"(%86#1) : (!comm.token) -> ()
    %87 = "tdag.linear_grad_input"(%85, %86#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>, tensor<48x16xf32>) -> tensor<1x8x16xf32>
    %88 = "tdag.linear_grad_weight"(%85, %20#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>, tensor<1x8x16xf32>) -> tensor<48x16xf32>
    %89 = "tdag.bias_grad"(%85) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>) -> tensor<48xf32>
    %90:2 = "comm.all_gather"(%2) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%90#1) : (!comm.token) -> ()
    %91:3 = "tdag.layernorm_grad"(%87, %17, %90#0, %20#1, %20#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %92 = "tdag.add"(%80, %91#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %93:2 = "tdag.embedding_grad"(%92, %14) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8xi32>) -> (tensor<256x16xf32>, tensor<8x16xf32>)
    %94:2 = "comm.recv"() {pass = "B", peer = 3 : i64, peers = [1, 3], stream = "pp", tag = 5 : i64, tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : () -> (tensor<256x16xf32>, !comm.token)
    "comm.wait"(%94#1) : (!comm.token) -> ()
    %95 = "tdag.add"(%94#0, %93#0) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 0 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %96:2 = "comm.recv"() {batched, pass = "B", peer = 3 : i64, peers = [1, 3], stream = "pp", tag = 4 : i64, tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : () -> (tensor<1x8x16xf32>, !comm.token)
    %97:2 = "comm.all_gather"(%12) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    "comm.wait"(%96#1) : (!comm.token) -> ()
    "comm.wait"(%97#1) : (!comm.token) -> ()
    %98 = "tdag.linear_grad_input"(%96#0, %97#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16x64xf32>) -> tensor<1x8x64xf32>
    %99 = "tdag.linear_grad_weight"(%96#0, %62) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x64xf32>) -> tensor<16x64xf32>
    %100 = "tdag.add"(%71, %99) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    %101:2 = "comm.reduce_scatter"(%100) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x64xf32>) -> (tensor<512xf32>, !comm.token)
    %102 = "tdag.bias_grad"(%96#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %103 = "tdag.add"(%72, %102) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%101#1) : (!comm.token) -> ()
    %104:2 = "comm.reduce_scatter"(%103) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %105 = "tdag.gelu_grad"(%98, %61) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %106:2 = "comm.all_gather"(%10) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    "comm.wait"(%106#1) : (!comm.token) -> ()
    %107 = "tdag.linear_grad_input"(%105, %106#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<64x16xf32>) -> tensor<1x8x16xf32>
    %108 = "tdag.linear_grad_weight"(%105, %58#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x16xf32>) -> tensor<64x16xf32>
    %109 = "tdag.add"(%76, %108) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    "comm.wait"(%104#1) : (!comm.token) -> ()
    %110:2 = "comm.reduce_scatter"(%109) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64x16xf32>) -> (tensor<512xf32>, !comm.token)
    %111 = "tdag.bias_grad"(%105) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>) -> tensor<64xf32>
    %112 = "tdag.add"(%77, %111) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    "comm.wait"(%110#1) : (!comm.token) -> ()
    %113:2 = "comm.reduce_scatter"(%112) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64xf32>) -> (tensor<32xf32>, !comm.token)
    %114:2 = "comm.all_gather"(%8) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%114#1) : (!comm.token) -> ()
    %115:3 = "tdag.layernorm_grad"(%107, %55, %114#0, %58#1, %58#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %116 = "tdag.add"(%79#1, %115#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%113#1) : (!comm.token) -> ()
    %117:2 = "comm.reduce_scatter"(%116) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %118 = "tdag.add"(%79#2, %115#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%117#1) : (!comm.token) -> ()
    %119:2 = "comm.reduce_scatter"(%118) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %120 = "tdag.add"(%96#0, %115#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %121:2 = "comm.all_gather"(%6) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    "comm.wait"(%121#1) : (!comm.token) -> ()
    %122 = "tdag.linear_grad_input"(%120, %121#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
    %123 = "tdag.linear_grad_weight"(%120, %51#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<16x16xf32>
    %124 = "tdag.add"(%83, %123) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
    "comm.wait"(%119#1) : (!comm.token) -> ()
    %125:2 = "comm.reduce_scatter"(%124) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x16xf32>) -> (tensor<128xf32>, !comm.token)
    %126 = "tdag.bias_grad"(%120) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %127 = "tdag.add"(%84, %126) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%125#1) : (!comm.token) -> ()
    %128:2 = "comm.reduce_scatter"(%127) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %129 = "tdag.attention_grad"(%122, %50, %51#0, %51#1) {heads = 2 : i64, pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x48xf32>, tensor<1x8x16xf32>, tensor<1x2x8xf32>) -> tensor<1x8x48xf32>
    %130:2 = "comm.all_gather"(%4) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    "comm.wait"(%130#1) : (!comm.token) -> ()
    %131 = "tdag.linear_grad_input"(%129, %130#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>, tensor<48x16xf32>) -> tensor<1x8x16xf32>
    %132 = "tdag.linear_grad_weight"(%129, %47#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>, tensor<1x8x16xf32>) -> tensor<48x16xf32>
    %133 = "tdag.add"(%88, %132) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>) -> tensor<48x16xf32>
    "comm.wait"(%128#1) : (!comm.token) -> ()
    %134:2 = "comm.reduce_scatter"(%133) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48x16xf32>) -> (tensor<384xf32>, !comm.token)
    %135 = "tdag.bias_grad"(%129) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>) -> tensor<48xf32>
    %136 = "tdag.add"(%89, %135) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48xf32>, tensor<48xf32>) -> tensor<48xf32>
    "comm.wait"(%134#1) : (!comm.token) -> ()
    %137:2 = "comm.reduce_scatter"(%136) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48xf32>) -> (tensor<24xf32>, !comm.token)
    %138:2 = "comm.all_gather"(%2) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%138#1) : (!comm.token) -> ()
    %139:3 = "tdag.layernorm_grad"(%131, %44, %138#0, %47#1, %47#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %140 = "tdag.add"(%91#1, %139#1) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%137#1) : (!comm.token) -> ()
    %141:2 = "comm.reduce_scatter"(%140) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %142 = "tdag.add"(%91#2, %139#2) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%141#1) : (!comm.token) -> ()
    %143:2 = "comm.reduce_scatter"(%142) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %144 = "tdag.add"(%120, %139#0) {pass = "B", tags = {PP = 0 : i64, layer = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %145:2 = "tdag.embedding_grad"(%144, %41) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8xi32>) -> (tensor<256x16xf32>, tensor<8x16xf32>)
    %146 = "tdag.add"(%93#1, %145#1) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    "comm.wait"(%143#1) : (!comm.token) -> ()
    %147:2 = "comm.reduce_scatter"(%146) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<8x16xf32>) -> (tensor<64xf32>, !comm.token)
    %148:2 = "comm.recv"() {pass = "B", peer = 3 : i64, peers = [1, 3], stream = "pp", tag = 6 : i64, tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : () -> (tensor<256x16xf32>, !comm.token)
    "comm.wait"(%148#1) : (!comm.token) -> ()
    %149 = "tdag.add"(%148#0, %145#0) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64, mb = 1 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %150 = "tdag.add"(%95, %149) {pass = "B", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    "comm.wait"(%147#1) : (!comm.token) -> ()
    %151:2 = "comm.reduce_scatter"(%150) {group = [0, 2], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> (tensor<2048xf32>, !comm.token)
    %152 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2048xf32>
    %153 = "tdag.adam_state"() {param = "wte.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<2048xf32>
    "comm.wait"(%151#1) : (!comm.token) -> ()
    "tdag.adamw"(%0, %151#0, %152, %153) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>, tensor<2048xf32>, tensor<2048xf32>, tensor<2048xf32>) -> ()
    %154:2 = "comm.all_gather"(%0) {group = [0, 2], pass = "UPD", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> (tensor<256x16xf32>, !comm.token)
    "comm.wait"(%154#1) : (!comm.token) -> ()
    %155 = "comm.send"(%154#0) {pass = "UPD", peer = 3 : i64, peers = [1, 3], stream = "pp", tag = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> !comm.token
    %156 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<64xf32>
    %157 = "tdag.adam_state"() {param = "wpe.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<64xf32>
    "tdag.adamw"(%1, %147#0, %156, %157) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<8x16xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> ()
    %158 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %159 = "tdag.adam_state"() {param = "h.0.ln_1.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%2, %141#0, %158, %159) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %160 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %161 = "tdag.adam_state"() {param = "h.0.ln_1.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%3, %143#0, %160, %161) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %162 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<384xf32>
    %163 = "tdag.adam_state"() {param = "h.0.attn.c_attn.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<384xf32>
    "tdag.adamw"(%4, %134#0, %162, %163) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48x16xf32>, tensor<384xf32>, tensor<384xf32>, tensor<384xf32>) -> ()
    %164 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<24xf32>
    %165 = "tdag.adam_state"() {param = "h.0.attn.c_attn.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<24xf32>
    "tdag.adamw"(%5, %137#0, %164, %165) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<48xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>) -> ()
    %166 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<128xf32>
    %167 = "tdag.adam_state"() {param = "h.0.attn.c_proj.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<128xf32>
    "tdag.adamw"(%6, %125#0, %166, %167) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x16xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> ()
    %168 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %169 = "tdag.adam_state"() {param = "h.0.attn.c_proj.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%7, %128#0, %168, %169) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %170 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %171 = "tdag.adam_state"() {param = "h.0.ln_2.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%8, %117#0, %170, %171) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %172 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %173 = "tdag.adam_state"() {param = "h.0.ln_2.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%9, %119#0, %172, %173) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %174 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<512xf32>
    %175 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<512xf32>
    "tdag.adamw"(%10, %110#0, %174, %175) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64x16xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) -> ()
    %176 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<32xf32>
    %177 = "tdag.adam_state"() {param = "h.0.mlp.c_fc.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<32xf32>
    "tdag.adamw"(%11, %113#0, %176, %177) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> ()
    %178 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<512xf32>
    %179 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<512xf32>
    "tdag.adamw"(%12, %101#0, %178, %179) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16x64xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) -> ()
    %180 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    %181 = "tdag.adam_state"() {param = "h.0.mlp.c_proj.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 0 : i64, layer = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%13, %104#0, %180, %181) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 0 : i64, layer = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    "comm.wait"(%40) : (!comm.token) -> ()
    "comm.wait"(%67) : (!comm.token) -> ()
    "comm.wait"(%155) : (!comm.token) -> ()
    return
  }
  func.func @device_3() {
    %0 = "tdag.param"() {init = "normal", name = "wte.weight", tags = {PP = 0 : i64, embed = 0 : i64}} : () -> tensor<256x16xf32>
    %1 = "tdag.param"() {init = "ones", name = "h.1.ln_1.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %2 = "tdag.param"() {init = "zeros", name = "h.1.ln_1.bias", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %3 = "tdag.param"() {init = "normal", name = "h.1.attn.c_attn.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48x16xf32>
    %4 = "tdag.param"() {init = "zeros", name = "h.1.attn.c_attn.bias", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<48xf32>
    %5 = "tdag.param"() {init = "normal", name = "h.1.attn.c_proj.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x16xf32>
    %6 = "tdag.param"() {init = "zeros", name = "h.1.attn.c_proj.bias", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %7 = "tdag.param"() {init = "ones", name = "h.1.ln_2.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %8 = "tdag.param"() {init = "zeros", name = "h.1.ln_2.bias", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %9 = "tdag.param"() {init = "normal", name = "h.1.mlp.c_fc.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64x16xf32>
    %10 = "tdag.param"() {init = "zeros", name = "h.1.mlp.c_fc.bias", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<64xf32>
    %11 = "tdag.param"() {init = "normal", name = "h.1.mlp.c_proj.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16x64xf32>
    %12 = "tdag.param"() {init = "zeros", name = "h.1.mlp.c_proj.bias", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<16xf32>
    %13 = "tdag.param"() {init = "ones", name = "ln_f.weight", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %14 = "tdag.param"() {init = "zeros", name = "ln_f.bias", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<16xf32>
    %15:2 = "comm.recv"() {batched, peer = 2 : i64, peers = [0, 2], stream = "pp", tag = 0 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : () -> (tensor<1x8x16xf32>, !comm.token)
    %16:2 = "comm.all_gather"(%1) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %17:2 = "comm.all_gather"(%2) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%15#1) : (!comm.token) -> ()
    "comm.wait"(%16#1) : (!comm.token) -> ()
    "comm.wait"(%17#1) : (!comm.token) -> ()
    %18:3 = "tdag.layernorm"(%15#0, %16#0, %17#0) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %19:2 = "comm.all_gather"(%3) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    %20:2 = "comm.all_gather"(%4) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<48xf32>) -> (tensor<48xf32>, !comm.token)
    "comm.wait"(%19#1) : (!comm.token) -> ()
    "comm.wait"(%20#1) : (!comm.token) -> ()
    %21 = "tdag.linear"(%18#0, %19#0, %20#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<1x8x48xf32>
    %22:2 = "tdag.attention"(%21) {heads = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>) -> (tensor<1x8x16xf32>, tensor<1x2x8xf32>)
    %23:2 = "comm.all_gather"(%5) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    %24:2 = "comm.all_gather"(%6) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%23#1) : (!comm.token) -> ()
    "comm.wait"(%24#1) : (!comm.token) -> ()
    %25 = "tdag.linear"(%22#0, %23#0, %24#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %26 = "tdag.add"(%15#0, %25) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %27:2 = "comm.all_gather"(%7) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %28:2 = "comm.all_gather"(%8) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%27#1) : (!comm.token) -> ()
    "comm.wait"(%28#1) : (!comm.token) -> ()
    %29:3 = "tdag.layernorm"(%26, %27#0, %28#0) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %30:2 = "comm.all_gather"(%9) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    %31:2 = "comm.all_gather"(%10) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<64xf32>) -> (tensor<64xf32>, !comm.token)
    "comm.wait"(%30#1) : (!comm.token) -> ()
    "comm.wait"(%31#1) : (!comm.token) -> ()
    %32 = "tdag.linear"(%29#0, %30#0, %31#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %33 = "tdag.gelu"(%32) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %34:2 = "comm.all_gather"(%11) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    %35:2 = "comm.all_gather"(%12) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%34#1) : (!comm.token) -> ()
    "comm.wait"(%35#1) : (!comm.token) -> ()
    %36 = "tdag.linear"(%33, %34#0, %35#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %37 = "tdag.add"(%26, %36) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %38:2 = "comm.all_gather"(%13) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %39:2 = "comm.all_gather"(%14) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%38#1) : (!comm.token) -> ()
    "comm.wait"(%39#1) : (!comm.token) -> ()
    %40:3 = "tdag.layernorm"(%37, %38#0, %39#0) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %41 = "tdag.matmul_nt"(%40#0, %0) {tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<256x16xf32>) -> tensor<1x8x256xf32>
    %42 = "tdag.input"() {first_sample = 1 : i64, name = "targets", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : () -> tensor<1x8xi32>
    %43:2 = "tdag.cross_entropy"(%41, %42) {tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<1x8x256xf32>, tensor<1x8xi32>) -> (tensor<f32>, tensor<1x8x256xf32>)
    "tdag.output"(%43#0) {name = "loss", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<f32>) -> ()
    %44:2 = "comm.recv"() {batched, peer = 2 : i64, peers = [0, 2], stream = "pp", tag = 1 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : () -> (tensor<1x8x16xf32>, !comm.token)
    %45:2 = "comm.all_gather"(%1) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %46:2 = "comm.all_gather"(%2) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%44#1) : (!comm.token) -> ()
    "comm.wait"(%45#1) : (!comm.token) -> ()
    "comm.wait"(%46#1) : (!comm.token) -> ()
    %47:3 = "tdag.layernorm"(%44#0, %45#0, %46#0) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %48:2 = "comm.all_gather"(%3) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    %49:2 = "comm.all_gather"(%4) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<48xf32>) -> (tensor<48xf32>, !comm.token)
    "comm.wait"(%48#1) : (!comm.token) -> ()
    "comm.wait"(%49#1) : (!comm.token) -> ()
    %50 = "tdag.linear"(%47#0, %48#0, %49#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<48x16xf32>, tensor<48xf32>) -> tensor<1x8x48xf32>
    %51:2 = "tdag.attention"(%50) {heads = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>) -> (tensor<1x8x16xf32>, tensor<1x2x8xf32>)
    %52:2 = "comm.all_gather"(%5) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    %53:2 = "comm.all_gather"(%6) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%52#1) : (!comm.token) -> ()
    "comm.wait"(%53#1) : (!comm.token) -> ()
    %54 = "tdag.linear"(%51#0, %52#0, %53#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %55 = "tdag.add"(%44#0, %54) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %56:2 = "comm.all_gather"(%7) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %57:2 = "comm.all_gather"(%8) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%56#1) : (!comm.token) -> ()
    "comm.wait"(%57#1) : (!comm.token) -> ()
    %58:3 = "tdag.layernorm"(%55, %56#0, %57#0) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %59:2 = "comm.all_gather"(%9) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    %60:2 = "comm.all_gather"(%10) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<64xf32>) -> (tensor<64xf32>, !comm.token)
    "comm.wait"(%59#1) : (!comm.token) -> ()
    "comm.wait"(%60#1) : (!comm.token) -> ()
    %61 = "tdag.linear"(%58#0, %59#0, %60#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<64x16xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
    %62 = "tdag.gelu"(%61) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %63:2 = "comm.all_gather"(%11) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    %64:2 = "comm.all_gather"(%12) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%63#1) : (!comm.token) -> ()
    "comm.wait"(%64#1) : (!comm.token) -> ()
    %65 = "tdag.linear"(%62, %63#0, %64#0) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<1x8x16xf32>
    %66 = "tdag.add"(%55, %65) {tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %67:2 = "comm.all_gather"(%13) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    %68:2 = "comm.all_gather"(%14) {group = [1, 3], shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%67#1) : (!comm.token) -> ()
    "comm.wait"(%68#1) : (!comm.token) -> ()
    %69:3 = "tdag.layernorm"(%66, %67#0, %68#0) {eps = 1.000000e-05 : f64, tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<1x8x16xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %70 = "tdag.matmul_nt"(%69#0, %0) {tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<256x16xf32>) -> tensor<1x8x256xf32>
    %71 = "tdag.input"() {first_sample = 3 : i64, name = "targets", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : () -> tensor<1x8xi32>
    %72:2 = "tdag.cross_entropy"(%70, %71) {tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<1x8x256xf32>, tensor<1x8xi32>) -> (tensor<f32>, tensor<1x8x256xf32>)
    "tdag.output"(%72#0) {name = "loss", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<f32>) -> ()
    %73 = "tdag.cross_entropy_grad"(%43#1, %42) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}, total_rows = 32 : i64} : (tensor<1x8x256xf32>, tensor<1x8xi32>) -> tensor<1x8x256xf32>
    %74 = "tdag.linear_grad_input"(%73, %0) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<1x8x256xf32>, tensor<256x16xf32>) -> tensor<1x8x16xf32>
    %75 = "tdag.linear_grad_weight"(%73, %40#0) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<1x8x256xf32>, tensor<1x8x16xf32>) -> tensor<256x16xf32>
    %76 = "comm.send"(%75) {pass = "B", peer = 2 : i64, peers = [0, 2], stream = "pp", tag = 5 : i64, tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<256x16xf32>) -> !comm.token
    %77:2 = "comm.all_gather"(%13) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%77#1) : (!comm.token) -> ()
    %78:3 = "tdag.layernorm_grad"(%74, %37, %77#0, %40#1, %40#2) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %79:2 = "comm.all_gather"(%11) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    "comm.wait"(%79#1) : (!comm.token) -> ()
    %80 = "tdag.linear_grad_input"(%78#0, %79#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16x64xf32>) -> tensor<1x8x64xf32>
    %81 = "tdag.linear_grad_weight"(%78#0, %33) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x64xf32>) -> tensor<16x64xf32>
    %82 = "tdag.bias_grad"(%78#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %83 = "tdag.gelu_grad"(%80, %32) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %84:2 = "comm.all_gather"(%9) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    "comm.wait"(%84#1) : (!comm.token) -> ()
    %85 = "tdag.linear_grad_input"(%83, %84#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<64x16xf32>) -> tensor<1x8x16xf32>
    %86 = "tdag.linear_grad_weight"(%83, %29#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x16xf32>) -> tensor<64x16xf32>
    %87 = "tdag.bias_grad"(%83) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x64xf32>) -> tensor<64xf32>
    %88:2 = "comm.all_gather"(%7) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%88#1) : (!comm.token) -> ()
    %89:3 = "tdag.layernorm_grad"(%85, %26, %88#0, %29#1, %29#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %90 = "tdag.add"(%78#0, %89#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %91:2 = "comm.all_gather"(%5) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    "comm.wait"(%91#1) : (!comm.token) -> ()
    %92 = "tdag.linear_grad_input"(%90, %91#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
    %93 = "tdag.linear_grad_weight"(%90, %22#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<16x16xf32>
    %94 = "tdag.bias_grad"(%90) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %95 = "tdag.attention_grad"(%92, %21, %22#0, %22#1) {heads = 2 : i64, pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x48xf32>, tensor<1x8x16xf32>, tensor<1x2x8xf32>) -> tensor<1x8x48xf32>
    %96:2 = "comm.all_gather"(%3) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    "comm.wait"(%96#1) : (!comm.token) -> ()
    %97 = "tdag.linear_grad_input"(%95, %96#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>, tensor<48x16xf32>) -> tensor<1x8x16xf32>
    %98 = "tdag.linear_grad_weight"(%95, %18#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>, tensor<1x8x16xf32>) -> tensor<48x16xf32>
    %99 = "tdag.bias_grad"(%95) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x48xf32>) -> tensor<48xf32>
    %100:2 = "comm.all_gather"(%1) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%100#1) : (!comm.token) -> ()
    %101:3 = "tdag.layernorm_grad"(%97, %15#0, %100#0, %18#1, %18#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %102 = "tdag.add"(%90, %101#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %103 = "comm.send"(%102) {pass = "B", peer = 2 : i64, peers = [0, 2], stream = "pp", tag = 3 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 0 : i64}} : (tensor<1x8x16xf32>) -> !comm.token
    %104 = "tdag.cross_entropy_grad"(%72#1, %71) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}, total_rows = 32 : i64} : (tensor<1x8x256xf32>, tensor<1x8xi32>) -> tensor<1x8x256xf32>
    %105 = "tdag.linear_grad_input"(%104, %0) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<1x8x256xf32>, tensor<256x16xf32>) -> tensor<1x8x16xf32>
    %106 = "tdag.linear_grad_weight"(%104, %69#0) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<1x8x256xf32>, tensor<1x8x16xf32>) -> tensor<256x16xf32>
    %107 = "comm.send"(%106) {pass = "B", peer = 2 : i64, peers = [0, 2], stream = "pp", tag = 6 : i64, tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<256x16xf32>) -> !comm.token
    %108:2 = "comm.all_gather"(%13) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%108#1) : (!comm.token) -> ()
    %109:3 = "tdag.layernorm_grad"(%105, %66, %108#0, %69#1, %69#2) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %110 = "tdag.add"(%78#1, %109#1) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %111:2 = "comm.reduce_scatter"(%110) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %112 = "tdag.add"(%78#2, %109#2) {pass = "B", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%111#1) : (!comm.token) -> ()
    %113:2 = "comm.reduce_scatter"(%112) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %114:2 = "comm.all_gather"(%11) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16x64xf32>) -> (tensor<16x64xf32>, !comm.token)
    "comm.wait"(%114#1) : (!comm.token) -> ()
    %115 = "tdag.linear_grad_input"(%109#0, %114#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16x64xf32>) -> tensor<1x8x64xf32>
    %116 = "tdag.linear_grad_weight"(%109#0, %62) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x64xf32>) -> tensor<16x64xf32>
    %117 = "tdag.add"(%81, %116) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
    "comm.wait"(%113#1) : (!comm.token) -> ()
    %118:2 = "comm.reduce_scatter"(%117) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x64xf32>) -> (tensor<512xf32>, !comm.token)
    %119 = "tdag.bias_grad"(%109#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %120 = "tdag.add"(%82, %119) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%118#1) : (!comm.token) -> ()
    %121:2 = "comm.reduce_scatter"(%120) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %122 = "tdag.gelu_grad"(%115, %61) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
    %123:2 = "comm.all_gather"(%9) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<64x16xf32>) -> (tensor<64x16xf32>, !comm.token)
    "comm.wait"(%123#1) : (!comm.token) -> ()
    %124 = "tdag.linear_grad_input"(%122, %123#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<64x16xf32>) -> tensor<1x8x16xf32>
    %125 = "tdag.linear_grad_weight"(%122, %58#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>, tensor<1x8x16xf32>) -> tensor<64x16xf32>
    %126 = "tdag.add"(%86, %125) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
    "comm.wait"(%121#1) : (!comm.token) -> ()
    %127:2 = "comm.reduce_scatter"(%126) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64x16xf32>) -> (tensor<512xf32>, !comm.token)
    %128 = "tdag.bias_grad"(%122) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x64xf32>) -> tensor<64xf32>
    %129 = "tdag.add"(%87, %128) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    "comm.wait"(%127#1) : (!comm.token) -> ()
    %130:2 = "comm.reduce_scatter"(%129) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64xf32>) -> (tensor<32xf32>, !comm.token)
    %131:2 = "comm.all_gather"(%7) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%131#1) : (!comm.token) -> ()
    %132:3 = "tdag.layernorm_grad"(%124, %55, %131#0, %58#1, %58#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %133 = "tdag.add"(%89#1, %132#1) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%130#1) : (!comm.token) -> ()
    %134:2 = "comm.reduce_scatter"(%133) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %135 = "tdag.add"(%89#2, %132#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%134#1) : (!comm.token) -> ()
    %136:2 = "comm.reduce_scatter"(%135) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %137 = "tdag.add"(%109#0, %132#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %138:2 = "comm.all_gather"(%5) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16x16xf32>) -> (tensor<16x16xf32>, !comm.token)
    "comm.wait"(%138#1) : (!comm.token) -> ()
    %139 = "tdag.linear_grad_input"(%137, %138#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<16x16xf32>) -> tensor<1x8x16xf32>
    %140 = "tdag.linear_grad_weight"(%137, %51#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<16x16xf32>
    %141 = "tdag.add"(%93, %140) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
    "comm.wait"(%136#1) : (!comm.token) -> ()
    %142:2 = "comm.reduce_scatter"(%141) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x16xf32>) -> (tensor<128xf32>, !comm.token)
    %143 = "tdag.bias_grad"(%137) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>) -> tensor<16xf32>
    %144 = "tdag.add"(%94, %143) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%142#1) : (!comm.token) -> ()
    %145:2 = "comm.reduce_scatter"(%144) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %146 = "tdag.attention_grad"(%139, %50, %51#0, %51#1) {heads = 2 : i64, pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x48xf32>, tensor<1x8x16xf32>, tensor<1x2x8xf32>) -> tensor<1x8x48xf32>
    %147:2 = "comm.all_gather"(%3) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<48x16xf32>) -> (tensor<48x16xf32>, !comm.token)
    "comm.wait"(%147#1) : (!comm.token) -> ()
    %148 = "tdag.linear_grad_input"(%146, %147#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>, tensor<48x16xf32>) -> tensor<1x8x16xf32>
    %149 = "tdag.linear_grad_weight"(%146, %47#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>, tensor<1x8x16xf32>) -> tensor<48x16xf32>
    %150 = "tdag.add"(%98, %149) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48x16xf32>, tensor<48x16xf32>) -> tensor<48x16xf32>
    "comm.wait"(%145#1) : (!comm.token) -> ()
    %151:2 = "comm.reduce_scatter"(%150) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48x16xf32>) -> (tensor<384xf32>, !comm.token)
    %152 = "tdag.bias_grad"(%146) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x48xf32>) -> tensor<48xf32>
    %153 = "tdag.add"(%99, %152) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48xf32>, tensor<48xf32>) -> tensor<48xf32>
    "comm.wait"(%151#1) : (!comm.token) -> ()
    %154:2 = "comm.reduce_scatter"(%153) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48xf32>) -> (tensor<24xf32>, !comm.token)
    %155:2 = "comm.all_gather"(%1) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<16xf32>) -> (tensor<16xf32>, !comm.token)
    "comm.wait"(%155#1) : (!comm.token) -> ()
    %156:3 = "tdag.layernorm_grad"(%148, %44#0, %155#0, %47#1, %47#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<16xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> (tensor<1x8x16xf32>, tensor<16xf32>, tensor<16xf32>)
    %157 = "tdag.add"(%101#1, %156#1) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%154#1) : (!comm.token) -> ()
    %158:2 = "comm.reduce_scatter"(%157) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %159 = "tdag.add"(%101#2, %156#2) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    "comm.wait"(%158#1) : (!comm.token) -> ()
    %160:2 = "comm.reduce_scatter"(%159) {group = [1, 3], pass = "B", shard = 1 : i64, shards = 2 : i64, stream = "dp", tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>) -> (tensor<8xf32>, !comm.token)
    %161 = "tdag.add"(%137, %156#0) {pass = "B", tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>, tensor<1x8x16xf32>) -> tensor<1x8x16xf32>
    %162 = "comm.send"(%161) {pass = "B", peer = 2 : i64, peers = [0, 2], stream = "pp", tag = 4 : i64, tags = {PP = 1 : i64, layer = 1 : i64, mb = 1 : i64}} : (tensor<1x8x16xf32>) -> !comm.token
    %163 = "tdag.adam_state"() {param = "h.1.ln_1.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %164 = "tdag.adam_state"() {param = "h.1.ln_1.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%1, %158#0, %163, %164) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %165 = "tdag.adam_state"() {param = "h.1.ln_1.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %166 = "tdag.adam_state"() {param = "h.1.ln_1.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "comm.wait"(%160#1) : (!comm.token) -> ()
    "tdag.adamw"(%2, %160#0, %165, %166) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %167 = "tdag.adam_state"() {param = "h.1.attn.c_attn.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<384xf32>
    %168 = "tdag.adam_state"() {param = "h.1.attn.c_attn.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<384xf32>
    "tdag.adamw"(%3, %151#0, %167, %168) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48x16xf32>, tensor<384xf32>, tensor<384xf32>, tensor<384xf32>) -> ()
    %169 = "tdag.adam_state"() {param = "h.1.attn.c_attn.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<24xf32>
    %170 = "tdag.adam_state"() {param = "h.1.attn.c_attn.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<24xf32>
    "tdag.adamw"(%4, %154#0, %169, %170) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<48xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>) -> ()
    %171 = "tdag.adam_state"() {param = "h.1.attn.c_proj.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<128xf32>
    %172 = "tdag.adam_state"() {param = "h.1.attn.c_proj.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<128xf32>
    "tdag.adamw"(%5, %142#0, %171, %172) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x16xf32>, tensor<128xf32>, tensor<128xf32>, tensor<128xf32>) -> ()
    %173 = "tdag.adam_state"() {param = "h.1.attn.c_proj.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %174 = "tdag.adam_state"() {param = "h.1.attn.c_proj.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%6, %145#0, %173, %174) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %175 = "tdag.adam_state"() {param = "h.1.ln_2.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %176 = "tdag.adam_state"() {param = "h.1.ln_2.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%7, %134#0, %175, %176) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %177 = "tdag.adam_state"() {param = "h.1.ln_2.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %178 = "tdag.adam_state"() {param = "h.1.ln_2.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%8, %136#0, %177, %178) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %179 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<512xf32>
    %180 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<512xf32>
    "tdag.adamw"(%9, %127#0, %179, %180) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64x16xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) -> ()
    %181 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<32xf32>
    %182 = "tdag.adam_state"() {param = "h.1.mlp.c_fc.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<32xf32>
    "tdag.adamw"(%10, %130#0, %181, %182) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<64xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> ()
    %183 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<512xf32>
    %184 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<512xf32>
    "tdag.adamw"(%11, %118#0, %183, %184) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 1 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16x64xf32>, tensor<512xf32>, tensor<512xf32>, tensor<512xf32>) -> ()
    %185 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    %186 = "tdag.adam_state"() {param = "h.1.mlp.c_proj.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, layer = 1 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%12, %121#0, %185, %186) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, layer = 1 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %187 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %188 = "tdag.adam_state"() {param = "ln_f.weight", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%13, %111#0, %187, %188) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %189 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    %190 = "tdag.adam_state"() {param = "ln_f.bias", pass = "UPD", shard = 1 : i64, shards = 2 : i64, slot = "exp_avg_sq", tags = {PP = 1 : i64, head = 0 : i64}} : () -> tensor<8xf32>
    "tdag.adamw"(%14, %113#0, %189, %190) {beta1 = 9.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, decay = 0 : i64, eps = 1.000000e-08 : f64, pass = "UPD", shard = 1 : i64, shards = 2 : i64, tags = {PP = 1 : i64, head = 0 : i64}} : (tensor<16xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> ()
    %191 = "comm.recv_into"(%0) {pass = "UPD", peer = 2 : i64, peers = [0, 2], stream = "pp", tag = 2 : i64, tags = {PP = 0 : i64, embed = 0 : i64}} : (tensor<256x16xf32>) -> !comm.token
    "comm.wait"(%76) : (!comm.token) -> ()
    "comm.wait"(%103) : (!comm.token) -> ()
    "comm.wait"(%107) : (!comm.token) -> ()
    "comm.wait"(%162) : (!comm.token) -> ()
    "comm.wait"(%191) : (!comm.token) -> ()
    return
  }
}


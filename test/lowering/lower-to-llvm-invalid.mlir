// --piper-lower-to-llvm refuses what it cannot lower, with a diagnostic at the cause.
// RUN: piper-opt %s --split-input-file --piper-lower-to-llvm --verify-diagnostics > /dev/null

// The error sits on the module: line 1 is where the implicit module of this input opens.
// expected-error@-4 {{piper-lower-to-llvm: no function with tdag ops to lower}}
func.func @no_tdag() {
  return
}

// -----

func.func private @body(%a: tensor<2xf32>) -> tensor<2xf32>
func.func @graph_level(%a: tensor<2xf32>) {
  // expected-error@+1 {{piper-lower-to-llvm: only tdag compute ops and comm send/recv/all_reduce/reduce_scatter/all_gather/all_to_all can be lowered here}}
  %0 = "tdag.node"(%a) {callee = @body, kind = "F"} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @one() {
  %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
  return
}
// expected-error@+1 {{piper-lower-to-llvm: a module lowers one device function; found a second}}
func.func @two() {
  %p = "tdag.param"() {init = "normal", name = "q"} : () -> tensor<4xf32>
  return
}

// -----

// A graph function with arguments or results (test/tools/Inputs/gelu.mlir) once crashed the
// lowering: an argument has no storage. It is refused at the function.
// expected-error@+1 {{piper-lower-to-llvm: the graph function @f has 1 argument(s) and 1 result(s); a training graph takes its tensors from tdag.param and tdag.input ops and reports through tdag.output, so it must be `() -> ()`}}
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "tdag.gelu"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// A huge piper.devices once made the rank dispatch emit a billion compares (a hang); it must
// equal the number of device functions.
// expected-error@+1 {{piper-lower-to-llvm: piper.devices must be an integer in [1, 1048576] equal to the number of device functions, or piper.roles to that of role functions (1 here)}}
module attributes {piper.devices = 1000000000 : i64} {
  func.func @device_0() {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    return
  }
}

// -----

// expected-error@+1 {{piper-lower-to-llvm: piper.devices must be an integer in [1, 1048576] equal to the number of device functions, or piper.roles to that of role functions (1 here)}}
module attributes {piper.devices = 0 : i64} {
  func.func @device_0() {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    return
  }
}

// -----

module attributes {piper.devices = 2 : i64} {
  func.func @device_0() {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    return
  }
  // expected-error@+1 {{piper-lower-to-llvm: in a plan of piper.devices devices, graph functions must be named device_0 .. device_{N-1} (or role_0 .. role_{P-1} with piper.role in a plan of piper.roles), each once (run --piper-extract)}}
  func.func @device_00() {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    return
  }
}

// -----

// Each value fits int64 bytes, but two of them live at once do not: the arena's offsets are
// checked sums, never wrapped into a small arena.
// expected-error@+1 {{piper-lower-to-llvm: the activation arena of this function would need more bytes than int64 can count; use smaller tensors or more devices}}
func.func @arena_overflows() {
  %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<1152921504606846976xf32>
  %g1 = "tdag.gelu"(%p) : (tensor<1152921504606846976xf32>) -> tensor<1152921504606846976xf32>
  %g2 = "tdag.gelu"(%g1) : (tensor<1152921504606846976xf32>) -> tensor<1152921504606846976xf32>
  return
}

// -----

// Role plans follow the name rule verify-plan proves by: `role_00` is no role's plan (the
// lowering once read it as role 0 while verify-plan skipped it).
module attributes {piper.devices = 2 : i64, piper.roles = 1 : i64} {
  // expected-error@+1 {{graph functions must be named device_0 .. device_{N-1} (or role_0 .. role_{P-1}}}
  func.func @role_00() attributes {piper.role = [0, 1, 2]} {
    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>
    return
  }
}

// -----

// Expert parallelism per role: ep_expert names where the expert index sits in the name; one
// whose digits are not there (here byte 2 of "e.3.w" is "3", not "4") is refused at the op.
module attributes {piper.devices = 2 : i64, piper.roles = 1 : i64} {
  func.func @role_0() attributes {piper.role = [0, 1, 2]} {
    // expected-error@+1 {{piper-lower-to-llvm: ep_expert must be [at, len, e, stride] on a tdag.param or tdag.adam_state, with the expert index e (len decimal digits) at byte `at` of the parameter's name and stride >= 1 (passes/shard.c writes it)}}
    %p = "tdag.param"() {ep_expert = [2, 1, 4, 2], init = "normal", name = "e.3.w"} : () -> tensor<4xf32>
    // expected-error@+1 {{piper-lower-to-llvm: ep_expert must be [at, len, e, stride]}}
    %q = "tdag.param"() {ep_expert = [2, 1], init = "normal", name = "e.0.v"} : () -> tensor<4xf32>
    return
  }
}

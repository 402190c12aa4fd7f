// comm: communication between devices in the global DAG and the per-device plans. Ops carry
// the `devices` that issue them (as tdag ops do), their `peers` or `group` as device lists
// (an array of ids, or a range array<i64: START, COUNT, STEP, RUN>: include/piper/piper.h), an
// optional `stream`, and a `tag` that pairs a send with its recv. Waits make cross-stream
// dependencies explicit.
irdl.dialect @comm {
  // Completion of an asynchronous communication.
  irdl.type @token {
  }
  // Sends `value` from each device of the op's `devices` to the device at the same position
  // of `peers` (replicas pair up one to one); `tag` pairs it with its comm.recv.
  irdl.operation @send {
    %a1_ids = irdl.base "#builtin.array"
    %a1_range = irdl.base "#builtin.dense_array"
    %a1 = irdl.any_of(%a1_ids, %a1_range)
    %i2 = irdl.base "#builtin.integer"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "peers" = %a1, "tag" = %i2 }
    irdl.operands(value: %t3)
    irdl.results(done: %tok4)
  }
  // Receives the value a comm.send with the same `tag` sends from `peers`.
  irdl.operation @recv {
    %a1_ids = irdl.base "#builtin.array"
    %a1_range = irdl.base "#builtin.dense_array"
    %a1 = irdl.any_of(%a1_ids, %a1_range)
    %i2 = irdl.base "#builtin.integer"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "peers" = %a1, "tag" = %i2 }
    irdl.results(value: %t3, done: %tok4)
  }
  // Receives into the storage of an existing tensor (a copy of a parameter another device
  // updates, refreshed at the end of the step).
  irdl.operation @recv_into {
    %a1_ids = irdl.base "#builtin.array"
    %a1_range = irdl.base "#builtin.dense_array"
    %a1 = irdl.any_of(%a1_ids, %a1_range)
    %i2 = irdl.base "#builtin.integer"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "peers" = %a1, "tag" = %i2 }
    irdl.operands(into: %t3)
    irdl.results(done: %tok4)
  }
  // Sum over `group` (array of device ids); every member gets the whole result.
  irdl.operation @all_reduce {
    %g1_ids = irdl.base "#builtin.array"
    %g1_range = irdl.base "#builtin.dense_array"
    %g1 = irdl.any_of(%g1_ids, %g1_range)
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "group" = %g1 }
    irdl.operands(value: %t2)
    irdl.results(out: %t3, done: %tok4)
  }
  // Sum over `group`; member k keeps shard k of the result (ZeRO-2 gradients).
  irdl.operation @reduce_scatter {
    %g1_ids = irdl.base "#builtin.array"
    %g1_range = irdl.base "#builtin.dense_array"
    %g1 = irdl.any_of(%g1_ids, %g1_range)
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "group" = %g1 }
    irdl.operands(value: %t2)
    irdl.results(out: %t3, done: %tok4)
  }
  // Concatenation of every member's shard (ZeRO-3 parameters, ZeRO-1 updated parameters).
  irdl.operation @all_gather {
    %g1_ids = irdl.base "#builtin.array"
    %g1_range = irdl.base "#builtin.dense_array"
    %g1 = irdl.any_of(%g1_ids, %g1_range)
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "group" = %g1 }
    irdl.operands(value: %t2)
    irdl.results(out: %t3, done: %tok4)
  }
  // Expert-parallel dispatch/combine.
  irdl.operation @all_to_all {
    %g1_ids = irdl.base "#builtin.array"
    %g1_range = irdl.base "#builtin.dense_array"
    %g1 = irdl.any_of(%g1_ids, %g1_range)
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "group" = %g1 }
    irdl.operands(value: %t2)
    irdl.results(out: %t3, done: %tok4)
  }
  // Context parallelism: causal attention whose key/value rows travel around `group` (the
  // context-parallel group, device ids in ring order; member r holds sequence chunks r and
  // 2G-1-r as its local rows), runtime/cp_attention.c. A collective of the group: every member
  // issues the group's ring ops in the same order (verify-plan proves it, as for the
  // collectives above), and each completes inside its call (its point-to-point transfers go to
  // member r+1 and come from r-1 with tags `tag` and `tag` + 1 in a fixed pattern), so `done`
  // has nothing left to wait for. lse (B, H, Tl): one log-sum-exp per local query row.
  // GPT's packed qkv (B, Tl, 3C) -> out (B, Tl, C), lse.
  irdl.operation @ring_attention {
    %g_ids = irdl.base "#builtin.array"
    %g_range = irdl.base "#builtin.dense_array"
    %g = irdl.any_of(%g_ids, %g_range)
    %tag = irdl.base "#builtin.integer"
    %heads = irdl.base "#builtin.integer"
    %qkv = irdl.base "!builtin.tensor"
    %out = irdl.base "!builtin.tensor"
    %lse = irdl.base "!builtin.tensor"
    %done = irdl.base @comm::@token
    irdl.attributes { "group" = %g, "tag" = %tag, "heads" = %heads }
    irdl.operands(qkv: %qkv)
    irdl.results(out: %out, lse: %lse, done: %done)
  }
  // dqkv from dout, the forward's out, qkv and lse; dK, dV travel with the keys.
  irdl.operation @ring_attention_grad {
    %g_ids = irdl.base "#builtin.array"
    %g_range = irdl.base "#builtin.dense_array"
    %g = irdl.any_of(%g_ids, %g_range)
    %tag = irdl.base "#builtin.integer"
    %heads = irdl.base "#builtin.integer"
    %dout = irdl.base "!builtin.tensor"
    %out = irdl.base "!builtin.tensor"
    %qkv = irdl.base "!builtin.tensor"
    %lse = irdl.base "!builtin.tensor"
    %dqkv = irdl.base "!builtin.tensor"
    %done = irdl.base @comm::@token
    irdl.attributes { "group" = %g, "tag" = %tag, "heads" = %heads }
    irdl.operands(dout: %dout, out: %out, qkv: %qkv, lse: %lse)
    irdl.results(dqkv: %dqkv, done: %done)
  }
  // Grouped-query: q (B, Tl, H*D), k and v (B, Tl, KV*D) -> out like q, lse.
  irdl.operation @ring_gqa_attention {
    %g_ids = irdl.base "#builtin.array"
    %g_range = irdl.base "#builtin.dense_array"
    %g = irdl.any_of(%g_ids, %g_range)
    %tag = irdl.base "#builtin.integer"
    %heads = irdl.base "#builtin.integer"
    %kv_heads = irdl.base "#builtin.integer"
    %q = irdl.base "!builtin.tensor"
    %k = irdl.base "!builtin.tensor"
    %v = irdl.base "!builtin.tensor"
    %out = irdl.base "!builtin.tensor"
    %lse = irdl.base "!builtin.tensor"
    %done = irdl.base @comm::@token
    irdl.attributes { "group" = %g, "tag" = %tag, "heads" = %heads, "kv_heads" = %kv_heads }
    irdl.operands(q: %q, k: %k, v: %v)
    irdl.results(out: %out, lse: %lse, done: %done)
  }
  irdl.operation @ring_gqa_attention_grad {
    %g_ids = irdl.base "#builtin.array"
    %g_range = irdl.base "#builtin.dense_array"
    %g = irdl.any_of(%g_ids, %g_range)
    %tag = irdl.base "#builtin.integer"
    %heads = irdl.base "#builtin.integer"
    %kv_heads = irdl.base "#builtin.integer"
    %dout = irdl.base "!builtin.tensor"
    %out = irdl.base "!builtin.tensor"
    %q = irdl.base "!builtin.tensor"
    %k = irdl.base "!builtin.tensor"
    %v = irdl.base "!builtin.tensor"
    %lse = irdl.base "!builtin.tensor"
    %dq = irdl.base "!builtin.tensor"
    %dk = irdl.base "!builtin.tensor"
    %dv = irdl.base "!builtin.tensor"
    %done = irdl.base @comm::@token
    irdl.attributes { "group" = %g, "tag" = %tag, "heads" = %heads, "kv_heads" = %kv_heads }
    irdl.operands(dout: %dout, out: %out, q: %q, k: %k, v: %v, lse: %lse)
    irdl.results(dq: %dq, dk: %dk, dv: %dv, done: %done)
  }
  // Blocks the issuing stream until the communications behind `tokens` have completed.
  irdl.operation @wait {
    %tok1 = irdl.base @comm::@token
    irdl.operands(tokens: variadic %tok1)
  }
}

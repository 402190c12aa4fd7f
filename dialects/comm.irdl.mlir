// comm: communication between devices in the global DAG and the per-device plans. Ops carry
// the `devices` that issue them (as tdag ops do), their `peers` or `group` as device ids, an
// optional `stream`, and a `tag` that pairs a send with its recv. Waits make cross-stream
// dependencies explicit.
irdl.dialect @comm {
  // Completion of an asynchronous communication.
  irdl.type @token {
  }
  // Sends `value` from each device of the op's `devices` to the device at the same position
  // of `peers` (replicas pair up one to one); `tag` pairs it with its comm.recv.
  irdl.operation @send {
    %a1 = irdl.base "#builtin.array"
    %i2 = irdl.base "#builtin.integer"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "peers" = %a1, "tag" = %i2 }
    irdl.operands(value: %t3)
    irdl.results(done: %tok4)
  }
  // Receives the value a comm.send with the same `tag` sends from `peers`.
  irdl.operation @recv {
    %a1 = irdl.base "#builtin.array"
    %i2 = irdl.base "#builtin.integer"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "peers" = %a1, "tag" = %i2 }
    irdl.results(value: %t3, done: %tok4)
  }
  // Receives into the storage of an existing tensor (a copy of a parameter another device
  // updates, refreshed at the end of the step).
  irdl.operation @recv_into {
    %a1 = irdl.base "#builtin.array"
    %i2 = irdl.base "#builtin.integer"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "peers" = %a1, "tag" = %i2 }
    irdl.operands(into: %t3)
    irdl.results(done: %tok4)
  }
  // Sum over `group` (array of device ids); every member gets the whole result.
  irdl.operation @all_reduce {
    %g1 = irdl.base "#builtin.array"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "group" = %g1 }
    irdl.operands(value: %t2)
    irdl.results(out: %t3, done: %tok4)
  }
  // Sum over `group`; member k keeps shard k of the result (ZeRO-2 gradients).
  irdl.operation @reduce_scatter {
    %g1 = irdl.base "#builtin.array"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "group" = %g1 }
    irdl.operands(value: %t2)
    irdl.results(out: %t3, done: %tok4)
  }
  // Concatenation of every member's shard (ZeRO-3 parameters, ZeRO-1 updated parameters).
  irdl.operation @all_gather {
    %g1 = irdl.base "#builtin.array"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "group" = %g1 }
    irdl.operands(value: %t2)
    irdl.results(out: %t3, done: %tok4)
  }
  // Expert-parallel dispatch/combine.
  irdl.operation @all_to_all {
    %g1 = irdl.base "#builtin.array"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "group" = %g1 }
    irdl.operands(value: %t2)
    irdl.results(out: %t3, done: %tok4)
  }
  // Blocks the issuing stream until the communications behind `tokens` have completed.
  irdl.operation @wait {
    %tok1 = irdl.base @comm::@token
    irdl.operands(tokens: variadic %tok1)
  }
}

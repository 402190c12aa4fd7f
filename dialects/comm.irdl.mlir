// comm: communication between devices in the global DAG and the per-device plans. Every op
// names its peers or group as device ids, the `stream` it is issued on, and a `tag` that pairs
// a send with its recv. Waits make cross-stream dependencies explicit.
irdl.dialect @comm {
  // Completion of an asynchronous communication.
  irdl.type @token {
  }
  irdl.operation @send {
    %i1 = irdl.base "#builtin.integer"
    %i2 = irdl.base "#builtin.integer"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "peer" = %i1, "tag" = %i2 }
    irdl.operands(value: %t3)
    irdl.results(done: %tok4)
  }
  irdl.operation @recv {
    %i1 = irdl.base "#builtin.integer"
    %i2 = irdl.base "#builtin.integer"
    %t3 = irdl.base "!builtin.tensor"
    %tok4 = irdl.base @comm::@token
    irdl.attributes { "peer" = %i1, "tag" = %i2 }
    irdl.results(value: %t3, done: %tok4)
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

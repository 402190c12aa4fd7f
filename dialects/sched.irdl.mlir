// sched: Piper's scheduling directives as IR, so a strategy is a program the compiler can
// verify. Piper's JSON schedule files are imported into these ops. A `filter` is a dictionary
// over tag names: {PP = 0}, {PP = "*"}, optionally PASS = "F" | "B" | "BI" | "BW".
// Optional fields (stream, shard_params, ...) are checked by the directive passes.
irdl.dialect @sched {
  // Puts the selected nodes on `devices` (array<i64>).
  irdl.operation @place {
    %d1 = irdl.base "#builtin.dictionary"
    %a2 = irdl.base "#builtin.array"
    irdl.attributes { "filter" = %d1, "devices" = %a2 }
  }
  // Data parallelism over `devices`; shard_grads (ZeRO-2), shard_params (ZeRO-3),
  // shard_optim (ZeRO-1), bucket_size, gather_stream, reduce_stream are optional.
  irdl.operation @replicate {
    %d1 = irdl.base "#builtin.dictionary"
    %a2 = irdl.base "#builtin.array"
    irdl.attributes { "filter" = %d1, "devices" = %a2 }
  }
  // Expert parallelism: all-to-all dispatch/combine over `devices`.
  irdl.operation @shard {
    %d1 = irdl.base "#builtin.dictionary"
    %a2 = irdl.base "#builtin.array"
    irdl.attributes { "filter" = %d1, "devices" = %a2 }
  }
  // Copies the selected sub-DAG once per microbatch, tagging copy i with {dim_name = i}.
  irdl.operation @split {
    %d1 = irdl.base "#builtin.dictionary"
    %s2 = irdl.base "#builtin.string"
    %i3 = irdl.base "#builtin.integer"
    irdl.attributes { "filter" = %d1, "dim_name" = %s2, "num_microbatches" = %i3 }
  }
  // Tensor parallelism (Megatron): the selected attention/MLP regions are split over the
  // group `devices` (column-parallel, then row-parallel + all-reduce); `stream` is optional.
  // Applied by --piper-shard-tensor (passes/shard_tensor.c).
  irdl.operation @shard_tensor {
    %d1 = irdl.base "#builtin.dictionary"
    %a2 = irdl.base "#builtin.array"
    irdl.attributes { "filter" = %d1, "devices" = %a2 }
  }
  // Context parallelism: the sequence of the ops whose tags match `tags` (a filter) is split
  // over the group `devices` (member r holds chunks r and 2G-1-r of 2G); attention becomes the
  // comm dialect's ring ops. Applied by --piper-shard-sequence (passes/shard_sequence.c).
  irdl.operation @shard_sequence {
    %d1 = irdl.base "#builtin.dictionary"
    %a2 = irdl.base "#builtin.array"
    irdl.attributes { "tags" = %d1, "devices" = %a2 }
  }
  // Temporal edges: every node matching group k runs before every node matching group k+1.
  irdl.operation @order {
    %a1 = irdl.base "#builtin.array"
    irdl.attributes { "filters" = %a1 }
  }
}

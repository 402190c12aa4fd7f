// tdag: the training DAG. Tensor ops of the model (forward), their gradients (backward), the
// optimizer update, and the graph-level node that groups ops into global-DAG nodes.
// Every op may carry a discardable `tags` dictionary ({layer = 0, PP = 1}) set by annotations.
// Shapes and element types are checked by piperVerifyTdag (dialects/tdag.c), which IRDL cannot
// express; IRDL checks op names, operand/result counts and required attributes.
// An IRDL constraint value used twice must be satisfied by the same type or attribute, so each
// entry has its own constraint unless equality is meant (add, gelu, gelu_grad: one type).
irdl.dialect @tdag {
  // ---- leaves: named storage the runtime owns ----
  // A trained parameter; `init` is "normal" | "zeros" | "ones".
  irdl.operation @param {
    %s1 = irdl.base "#builtin.string"
    %s2 = irdl.base "#builtin.string"
    %t3 = irdl.base "!builtin.tensor"
    irdl.attributes { "name" = %s1, "init" = %s2 }
    irdl.results(out: %t3)
  }
  // An AdamW moment of parameter `param`; `slot` is "exp_avg" | "exp_avg_sq".
  irdl.operation @adam_state {
    %s1 = irdl.base "#builtin.string"
    %s2 = irdl.base "#builtin.string"
    %t3 = irdl.base "!builtin.tensor"
    irdl.attributes { "param" = %s1, "slot" = %s2 }
    irdl.results(out: %t3)
  }
  // A batch input filled by the data loader: "tokens" or "targets", tensor<BxTxi32>.
  irdl.operation @input {
    %s1 = irdl.base "#builtin.string"
    %t2 = irdl.base "!builtin.tensor"
    irdl.attributes { "name" = %s1 }
    irdl.results(out: %t2)
  }
  // A scalar the step reports to the runtime (the loss).
  irdl.operation @output {
    %s1 = irdl.base "#builtin.string"
    %t2 = irdl.base "!builtin.tensor"
    irdl.attributes { "name" = %s1 }
    irdl.operands(value: %t2)
  }

  // ---- forward ----
  // x(B,T,C) = wte[tokens] + wpe[t]
  irdl.operation @embedding {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    irdl.operands(tokens: %t1, wte: %t2, wpe: %t3)
    irdl.results(out: %t4)
  }
  // y = (x - mean) * rstd * w + b over the last dim; mean and rstd are saved for backward.
  irdl.operation @layernorm {
    %f1 = irdl.base "#builtin.float"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    %t5 = irdl.base "!builtin.tensor"
    %t6 = irdl.base "!builtin.tensor"
    %t7 = irdl.base "!builtin.tensor"
    irdl.attributes { "eps" = %f1 }
    irdl.operands(x: %t2, weight: %t3, bias: %t4)
    irdl.results(out: %t5, mean: %t6, rstd: %t7)
  }
  // y(...,N) = x(...,K) w(N,K)^T + b(N)
  irdl.operation @linear {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    irdl.operands(x: %t1, weight: %t2, bias: %t3)
    irdl.results(out: %t4)
  }
  // y(...,N) = x(...,K) w(N,K)^T  (the tied LM head)
  irdl.operation @matmul_nt {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    irdl.operands(x: %t1, weight: %t2)
    irdl.results(out: %t3)
  }
  // Causal multi-head self-attention on packed qkv(B,T,3C) -> out(B,T,C); probs(B,H,T,T) saved.
  irdl.operation @attention {
    %i1 = irdl.base "#builtin.integer"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    irdl.attributes { "heads" = %i1 }
    irdl.operands(qkv: %t2)
    irdl.results(out: %t3, probs: %t4)
  }
  // GELU, tanh approximation.
  irdl.operation @gelu {
    %t = irdl.base "!builtin.tensor"
    irdl.operands(x: %t)
    irdl.results(out: %t)
  }
  irdl.operation @add {
    %t = irdl.base "!builtin.tensor"
    irdl.operands(lhs: %t, rhs: %t)
    irdl.results(out: %t)
  }
  // loss = mean cross-entropy of logits(B,T,V) against targets(B,T); probs saved for backward.
  irdl.operation @cross_entropy {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    irdl.operands(logits: %t1, targets: %t2)
    irdl.results(loss: %t3, probs: %t4)
  }

  // ---- backward (built by --piper-autodiff). Input- and weight-gradient halves are separate
  // ops so that zero-bubble schedules can split a backward into BI and BW. ----
  irdl.operation @embedding_grad {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    irdl.operands(dout: %t1, tokens: %t2)
    irdl.results(dwte: %t3, dwpe: %t4)
  }
  irdl.operation @layernorm_grad {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    %t5 = irdl.base "!builtin.tensor"
    %t6 = irdl.base "!builtin.tensor"
    %t7 = irdl.base "!builtin.tensor"
    %t8 = irdl.base "!builtin.tensor"
    irdl.operands(dout: %t1, x: %t2, weight: %t3, mean: %t4, rstd: %t5)
    irdl.results(dx: %t6, dweight: %t7, dbias: %t8)
  }
  // dx(...,K) = dout(...,N) w(N,K)
  irdl.operation @linear_grad_input {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    irdl.operands(dout: %t1, weight: %t2)
    irdl.results(dx: %t3)
  }
  // dw(N,K) = dout(...,N)^T x(...,K)
  irdl.operation @linear_grad_weight {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    irdl.operands(dout: %t1, x: %t2)
    irdl.results(dweight: %t3)
  }
  // db(N) = dout(...,N) summed over all leading dims
  irdl.operation @bias_grad {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    irdl.operands(dout: %t1)
    irdl.results(dbias: %t2)
  }
  irdl.operation @attention_grad {
    %i1 = irdl.base "#builtin.integer"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    %t5 = irdl.base "!builtin.tensor"
    irdl.attributes { "heads" = %i1 }
    irdl.operands(dout: %t2, qkv: %t3, probs: %t4)
    irdl.results(dqkv: %t5)
  }
  irdl.operation @gelu_grad {
    %t = irdl.base "!builtin.tensor"
    irdl.operands(dout: %t, x: %t)
    irdl.results(dx: %t)
  }
  // dlogits = (probs - onehot(targets)) / (B*T): the gradient of the mean loss.
  irdl.operation @cross_entropy_grad {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    irdl.operands(probs: %t1, targets: %t2)
    irdl.results(dlogits: %t3)
  }

  // ---- optimizer (built by --piper-autodiff) ----
  // torch.optim.AdamW on one parameter, in place: updates param, exp_avg and exp_avg_sq.
  // lr and weight decay are run flags; `decay` (0/1) says whether weight decay applies.
  // With ZeRO the moments (and the gradient) are shards: `shards` = R, `shard` = this replica.
  irdl.operation @adamw {
    %t0 = irdl.base "!builtin.tensor"
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %f1 = irdl.base "#builtin.float"
    %f2 = irdl.base "#builtin.float"
    %f3 = irdl.base "#builtin.float"
    %i = irdl.base "#builtin.integer"
    irdl.attributes { "beta1" = %f1, "beta2" = %f2, "eps" = %f3, "decay" = %i }
    irdl.operands(param: %t0, grad: %t1, exp_avg: %t2, exp_avg_sq: %t3)
  }

  // ---- gradient buckets (built by the replicate directive's bucket_size) ----
  // A flat tensor whose contents the pack_into ops below fill.
  irdl.operation @bucket {
    %a = irdl.base "!builtin.tensor"
    irdl.results(out: %a)
  }
  // out = flat with `value` flattened into elements [offset, offset + numel(value)); in place.
  irdl.operation @pack_into {
    %a = irdl.base "!builtin.tensor"
    %b = irdl.base "!builtin.tensor"
    %i = irdl.base "#builtin.integer"
    irdl.attributes { "offset" = %i }
    irdl.operands(flat: %a, value: %b)
    irdl.results(out: %a)
  }
  // out = elements [offset, offset + numel(out)) of the flat tensor `flat`, reshaped; no copy.
  irdl.operation @view {
    %a = irdl.base "!builtin.tensor"
    %b = irdl.base "!builtin.tensor"
    %i = irdl.base "#builtin.integer"
    irdl.attributes { "offset" = %i }
    irdl.operands(flat: %a)
    irdl.results(out: %b)
  }

  // ---- graph level (global training DAG) ----
  // One node of the global DAG: the ops of one tag group, pass and microbatch, outlined into
  // the function `callee` (the way gpu.launch_func names its kernel: IRDL ops cannot declare a
  // terminator for a region of their own). `kind` is "F" | "B" | "BI" | "BW" | "UPD";
  // `devices`, `stream` and temporal edges are set by the directive passes. Values crossing
  // node boundaries are operands and results, so data edges are SSA.
  irdl.operation @node {
    %a = irdl.any
    %b = irdl.any
    %s = irdl.base "#builtin.string"
    %c = irdl.base "#builtin.symbol_ref"
    irdl.attributes { "kind" = %s, "callee" = %c }
    irdl.operands(ins: variadic %a)
    irdl.results(outs: variadic %b)
  }
}

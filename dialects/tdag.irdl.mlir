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

  // ---- Qwen3 (piper-gen qwen3). Forward ----
  // x(B,T,C) = wte(V,C)[tokens(B,T)]: a token embedding without a position table.
  irdl.operation @embed {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    irdl.operands(tokens: %t1, wte: %t2)
    irdl.results(out: %t3)
  }
  // RMSNorm of every contiguous chunk of D elements of x's last dim N (w is (D), D divides N):
  // y = x * rstd * w with rstd = 1 / sqrt(mean(x^2) + eps) per chunk, saved for backward
  // (x's shape with last dim N/D). D = N is a plain RMSNorm; D = head dim normalizes each head.
  irdl.operation @rmsnorm {
    %f1 = irdl.base "#builtin.float"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    %t5 = irdl.base "!builtin.tensor"
    irdl.attributes { "eps" = %f1 }
    irdl.operands(x: %t2, weight: %t3)
    irdl.results(out: %t4, rstd: %t5)
  }
  // Rotary position embedding of x(B,T,H*D), rotate-half convention per head of `head_dim` D:
  // for j < D/2, angle a = t * theta^(-2j/D) at position t (dim 1),
  // (x_j, x_{j+D/2}) -> (x_j cos a - x_{j+D/2} sin a, x_{j+D/2} cos a + x_j sin a).
  irdl.operation @rope {
    %i1 = irdl.base "#builtin.integer"
    %f2 = irdl.base "#builtin.float"
    %t = irdl.base "!builtin.tensor"
    irdl.attributes { "head_dim" = %i1, "theta" = %f2 }
    irdl.operands(x: %t)
    irdl.results(out: %t)
  }
  // y = silu(gate) * up, elementwise.
  irdl.operation @swiglu {
    %t = irdl.base "!builtin.tensor"
    irdl.operands(gate: %t, up: %t)
    irdl.results(out: %t)
  }
  // Causal grouped-query attention: q(B,T,H*D), k, v(B,T,KV*D) -> out(B,T,H*D) =
  // softmax(q k^T / sqrt(D)) v per query head j, which reads kv head floor(j*KV/H);
  // probs(B,H,T,T) saved for backward.
  irdl.operation @gqa_attention {
    %i1 = irdl.base "#builtin.integer"
    %i2 = irdl.base "#builtin.integer"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    %t5 = irdl.base "!builtin.tensor"
    %t6 = irdl.base "!builtin.tensor"
    %t7 = irdl.base "!builtin.tensor"
    irdl.attributes { "heads" = %i1, "kv_heads" = %i2 }
    irdl.operands(q: %t3, k: %t4, v: %t5)
    irdl.results(out: %t6, probs: %t7)
  }
  // ---- Qwen3 backward (built by --piper-autodiff) ----
  // dwte(V,C) = scatter-sum of dout(B,T,C) by tokens(B,T).
  irdl.operation @embed_grad {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    irdl.operands(dout: %t1, tokens: %t2)
    irdl.results(dwte: %t3)
  }
  irdl.operation @rmsnorm_grad {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    %t5 = irdl.base "!builtin.tensor"
    %t6 = irdl.base "!builtin.tensor"
    irdl.operands(dout: %t1, x: %t2, weight: %t3, rstd: %t4)
    irdl.results(dx: %t5, dweight: %t6)
  }
  // The inverse rotation (the rotation is orthogonal, so its transpose).
  irdl.operation @rope_grad {
    %i1 = irdl.base "#builtin.integer"
    %f2 = irdl.base "#builtin.float"
    %t = irdl.base "!builtin.tensor"
    irdl.attributes { "head_dim" = %i1, "theta" = %f2 }
    irdl.operands(dout: %t)
    irdl.results(dx: %t)
  }
  irdl.operation @swiglu_grad {
    %t = irdl.base "!builtin.tensor"
    irdl.operands(dout: %t, gate: %t, up: %t)
    irdl.results(dgate: %t, dup: %t)
  }
  irdl.operation @gqa_attention_grad {
    %i1 = irdl.base "#builtin.integer"
    %i2 = irdl.base "#builtin.integer"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    %t5 = irdl.base "!builtin.tensor"
    %t6 = irdl.base "!builtin.tensor"
    %t7 = irdl.base "!builtin.tensor"
    %t8 = irdl.base "!builtin.tensor"
    %t9 = irdl.base "!builtin.tensor"
    %t10 = irdl.base "!builtin.tensor"
    irdl.attributes { "heads" = %i1, "kv_heads" = %i2 }
    irdl.operands(dout: %t3, q: %t4, k: %t5, v: %t6, probs: %t7)
    irdl.results(dq: %t8, dk: %t9, dv: %t10)
  }

  // ---- mixture of experts (issue 9). Letters: N tokens (the leading dims of h), C channels,
  // E experts, K experts per token, G expert groups (devices under expert parallelism; 1 on one
  // device), El = E/G experts per group, Fe expert FFN dim. A token's K copies are dispatched
  // into R = G * cap rows, cap = N * min(K, El): group g's rows [g*cap, (g+1)*cap) hold the
  // copies for its experts, expert by expert, each expert's copies in token order, the rest
  // zero. `groups` (G) is optional, default 1. ----
  // weights(...,K) = the top-K softmax(logits) probabilities renormalised to sum 1, experts
  // (...,K) i32 their indices, largest first (ties: the lower index).
  irdl.operation @moe_topk {
    %i1 = irdl.base "#builtin.integer"
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    irdl.attributes { "top_k" = %i1 }
    irdl.operands(logits: %t1)
    irdl.results(weights: %t2, experts: %t3)
  }
  // dlogits(...,E): zero but at the chosen experts, where dlogits[e_m] = w_m (dw_m - sum_k dw_k w_k)
  // (the renormalised weights are a softmax over the K chosen logits).
  irdl.operation @moe_topk_grad {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    irdl.operands(dweights: %t1, weights: %t2, experts: %t3)
    irdl.results(dlogits: %t4)
  }
  // rows(R,C): each token's copy for each of its K experts, laid out as above; counts(E) i32:
  // the copies each expert gets.
  irdl.operation @moe_dispatch {
    %i1 = irdl.base "#builtin.integer"
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    irdl.attributes { "num_experts" = %i1 }
    irdl.operands(h: %t1, experts: %t2)
    irdl.results(rows: %t3, counts: %t4)
  }
  // dh(...,C) = the sum of the gradients of a token's K rows.
  irdl.operation @moe_dispatch_grad {
    %i1 = irdl.base "#builtin.integer"
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    irdl.attributes { "num_experts" = %i1 }
    irdl.operands(drows: %t1, experts: %t2)
    irdl.results(dh: %t3)
  }
  // The El local experts: gates gate_0..gate_{El-1} (Fe,C), ups (Fe,C), downs (C,Fe), three
  // variadic groups (so operandSegmentSizes = array<i32: 1, 1, El, El, El>: one IRDL constraint
  // makes every operand of a variadic group the same type). counts (G*El) i32: block s, expert
  // j has counts[s*El + j] rows. Each used row x of expert j: out = down_j(silu(gate_j x) *
  // up_j x); hidden(R, 2Fe) saves [gate_j x, up_j x] for the backward. Unused rows are zero.
  irdl.operation @moe_experts {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    %t5 = irdl.base "!builtin.tensor"
    %t6 = irdl.base "!builtin.tensor"
    %t7 = irdl.base "!builtin.tensor"
    irdl.operands(rows: %t1, counts: %t2, gates: variadic %t3, ups: variadic %t4,
                  downs: variadic %t5)
    irdl.results(out: %t6, hidden: %t7)
  }
  // drows(R,C): the gradient of the rows through their experts (zero on unused rows); the
  // weights as moe_experts' (operandSegmentSizes = array<i32: 1, 1, 1, El, El, El>).
  irdl.operation @moe_experts_grad_input {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    %t5 = irdl.base "!builtin.tensor"
    %t6 = irdl.base "!builtin.tensor"
    %t7 = irdl.base "!builtin.tensor"
    irdl.operands(dout: %t1, counts: %t2, hidden: %t3, gates: variadic %t4, ups: variadic %t5,
                  downs: variadic %t6)
    irdl.results(drows: %t7)
  }
  // The weight gradients of local expert `expert` (j): its gate, up (Fe,C) and down (C,Fe).
  irdl.operation @moe_experts_grad_weight {
    %i1 = irdl.base "#builtin.integer"
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    %t5 = irdl.base "!builtin.tensor"
    %t6 = irdl.base "!builtin.tensor"
    %t7 = irdl.base "!builtin.tensor"
    %t8 = irdl.base "!builtin.tensor"
    irdl.attributes { "expert" = %i1 }
    irdl.operands(dout: %t1, rows: %t2, counts: %t3, hidden: %t4, down: %t5)
    irdl.results(dgate: %t6, dup: %t7, ddown: %t8)
  }
  // y(...,C) = sum_k weights_k * out[the row of the token's k-th copy].
  irdl.operation @moe_combine {
    %i1 = irdl.base "#builtin.integer"
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    irdl.attributes { "num_experts" = %i1 }
    irdl.operands(out: %t1, weights: %t2, experts: %t3)
    irdl.results(y: %t4)
  }
  // dout(R,C) = weights_k * dy at each copy's row (zero on unused rows);
  // dweights(...,K) = dy . out[row of copy k].
  irdl.operation @moe_combine_grad {
    %i1 = irdl.base "#builtin.integer"
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    %t4 = irdl.base "!builtin.tensor"
    %t5 = irdl.base "!builtin.tensor"
    %t6 = irdl.base "!builtin.tensor"
    irdl.attributes { "num_experts" = %i1 }
    irdl.operands(dy: %t1, out: %t2, weights: %t3, experts: %t4)
    irdl.results(dout: %t5, dweights: %t6)
  }
  // ---- tensor parallelism ----
  // y(...,N) = x(...,N) + b(N): a row-parallel linear's bias, added once after the
  // all-reduce of its partial products (passes/shard_tensor.c).
  irdl.operation @bias_add {
    %t1 = irdl.base "!builtin.tensor"
    %t2 = irdl.base "!builtin.tensor"
    %t3 = irdl.base "!builtin.tensor"
    irdl.operands(x: %t1, bias: %t2)
    irdl.results(out: %t3)
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

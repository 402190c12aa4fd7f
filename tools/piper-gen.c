/* piper-gen: the model zoo. `piper-gen gpt ...` prints an annotated GPT-2 forward graph in the
 * tdag dialect (see docs/models.md); `piper-gen qwen3 ...` a dense Qwen3 (Hugging Face
 * parameter names, GQA, qk-norm, RoPE, SwiGLU) and `piper-gen llama3 ...` a Llama 3 (the same
 * decoder without qk-norm: one emitter, see decoderModels), tagged the same way. Every op carries
 * a `tags` dictionary, as Piper's annotate() regions would give it: {embed = 0} for the
 * embeddings, {layer = i} for block i, {head = 0} for the final norm, LM head and loss; each also
 * gets PP = its pipeline stage (0 without --stages): the blocks split as evenly as possible over
 * --stages S (earlier stages take the remainder), the embeddings on the first stage and the head
 * on the last. In GPT, the ops of the attention block (c_attn, attention, c_proj) and of the MLP
 * block (c_fc, gelu, c_proj) and their parameters also get TP = 0: the regions a shard_tensor
 * directive may split (passes/shard_tensor.c); layernorms and residual adds stay untagged,
 * replicated. Qwen3 likewise tags its attention (q/k/v/o projections, q_norm, k_norm, rope,
 * gqa_attention) and its dense MLP (gate/up/down projections, swiglu) TP = 0, as does Llama 3 (the
 * same less q_norm and k_norm); qwen3-moe's MoE MLP has no TP tag (it runs replicated within a
 * tensor-parallel group). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "piper/checked.h"

typedef struct {
  long L, C, H, T, B, V, S; /* layers, channels, heads, sequence, batch, vocab, stages */
} GptConfig;

static void usage(FILE *out) {
  fprintf(out,
          "usage: piper-gen gpt [--layers L] [--dim C] [--heads H] [--seq T] [--batch B]\n"
          "                     [--vocab V] [--stages S]\n"
          "Prints an annotated GPT-2 forward graph (tdag dialect) to stdout.\n"
          "defaults: --layers 4 --dim 256 --heads 4 --seq 128 --batch 8 --vocab 256 --stages 1\n"
          "\n"
          "usage: piper-gen qwen3 --layers L --dim C --heads H --kv-heads KV [--head-dim D]\n"
          "                       --ffn-dim F --seq T --batch B [--vocab V] [--stages S]\n"
          "                       [--rope-theta THETA] [--tie-embeddings]\n"
          "Prints an annotated dense Qwen3 forward graph (Hugging Face parameter names).\n"
          "defaults: --head-dim C/H --vocab 256 --stages 1 --rope-theta 1e6, untied lm_head\n"
          "\n"
          "usage: piper-gen qwen3-moe --layers L --dim C --heads H --kv-heads KV [--head-dim D]\n"
          "                           --experts E --top-k K --expert-ffn-dim Fe --seq T\n"
          "                           --batch B [--vocab V] [--stages S] [--rope-theta THETA]\n"
          "                           [--tie-embeddings]\n"
          "Prints Qwen3 with a mixture-of-experts MLP in every block (E SwiGLU experts of dim\n"
          "Fe, top-K routing); the dispatch and experts carry the tag EP for shard directives.\n"
          "\n"
          "usage: piper-gen llama3 --layers L --dim C --heads H --kv-heads KV [--head-dim D]\n"
          "                        --ffn-dim F --seq T --batch B [--vocab V] [--stages S]\n"
          "                        [--rope-theta THETA] [--tie-embeddings]\n"
          "Prints an annotated Llama 3 forward graph (Hugging Face LlamaForCausalLM names):\n"
          "qwen3's decoder without qk-norm, RMSNorm eps 1e-5.\n"
          "defaults: --head-dim C/H --vocab 256 --stages 1 --rope-theta 5e5, untied lm_head\n");
}

static GptConfig cfg;
static const char *tags; /* the current op's tags, e.g. "layer = 1 : i64, PP = 0 : i64" */

/* Every type string ty() made, freed at exit: a generator prints a few thousand of them. */
static char **typeTexts;
static size_t nTypeTexts, typeTextsCap;

static void freeTypeTexts(void) {
  for (size_t i = 0; i < nTypeTexts; ++i) free(typeTexts[i]);
  free(typeTexts);
}

/* Tensor type text for a shape, e.g. tensor<8x128x256xf32>. Each string has its own storage,
 * valid until exit. */
static const char *ty(const char *elem, int rank, long d0, long d1, long d2, long d3) {
  char *b = malloc(64);
  if (!b || !piperGrow((void **)&typeTexts, &typeTextsCap, nTypeTexts + 1, sizeof *typeTexts)) {
    fprintf(stderr, "piper-gen: error: out of memory\n");
    exit(1);
  }
  if (!nTypeTexts) atexit(freeTypeTexts);
  typeTexts[nTypeTexts++] = b;
  long d[4] = {d0, d1, d2, d3};
  int n = snprintf(b, 64, "tensor<");
  for (int i = 0; i < rank; ++i) n += snprintf(b + n, 64 - n, "%ldx", d[i]);
  snprintf(b + n, 64 - n, "%s>", elem);
  return b;
}
#define F32(...) ty("f32", __VA_ARGS__)

static void param(const char *ssa, const char *name, const char *init, const char *type) {
  printf("    %%%s = \"tdag.param\"() {init = \"%s\", name = \"%s\", tags = {%s}} : () -> %s\n",
         ssa, init, name, tags, type);
}

/* The stage of block `layer` of L over S stages: blocks per stage L/S, the first L%S stages
 * take one more. */
static int stageOfIn(long L, long S, long layer) {
  long base = L / S, extra = L % S, first = 0;
  for (int s = 0; s < S; ++s) {
    long n = base + (s < extra);
    if (layer < first + n) return s;
    first += n;
  }
  return (int)S - 1;
}

static int stageOf(long layer) { return stageOfIn(cfg.L, cfg.S, layer); }

/* Every op gets its pipeline stage, PP = 0 with one stage, so a strategy's filters read the
 * same whatever the stage count (piper-sched's pure data-parallel plans select {PP: 0}). */
static void setTags(char *buf, size_t size, const char *name, long index, int stage) {
  snprintf(buf, size, "%s = %ld : i64, PP = %d : i64", name, index, stage);
  tags = buf;
}

/* The tags of the current block with TP = 0 added (tpBuf) or not (tagBuf): see tp(). */
static char *blockTags, *blockTpTags;

/* Marks the next ops as part of a tensor-parallel region (on = 1) or not. */
static void tp(int on) { tags = on ? blockTpTags : blockTags; }

static void emitGpt(void) {
  long L = cfg.L, C = cfg.C, H = cfg.H, T = cfg.T, B = cfg.B, V = cfg.V;
  const char *x3 = F32(3, B, T, C, 0), *stat = F32(2, B, T, 0, 0), *vecC = F32(1, C, 0, 0, 0);
  char tagBuf[96];
  printf("// GPT-2: L=%ld C=%ld H=%ld T=%ld B=%ld V=%ld, %ld pipeline stage(s). "
         "Generated by piper-gen.\n", L, C, H, T, B, V, cfg.S);
  printf("module {\n  func.func @gpt() {\n");

  setTags(tagBuf, sizeof tagBuf, "embed", 0, 0);
  printf("    %%tokens = \"tdag.input\"() {name = \"tokens\", tags = {%s}} : () -> %s\n", tags,
         ty("i32", 2, B, T, 0, 0));
  param("wte", "wte.weight", "normal", F32(2, V, C, 0, 0));
  param("wpe", "wpe.weight", "normal", F32(2, T, C, 0, 0));
  printf("    %%x = \"tdag.embedding\"(%%tokens, %%wte, %%wpe) {tags = {%s}} : (%s, %s, %s) -> %s\n",
         tags, ty("i32", 2, B, T, 0, 0), F32(2, V, C, 0, 0), F32(2, T, C, 0, 0), x3);

  const char *x = "x";
  char xbuf[2][32];
  for (long i = 0; i < L; ++i) {
    setTags(tagBuf, sizeof tagBuf, "layer", i, stageOf(i));
    char tpBuf[sizeof tagBuf + 16];
    snprintf(tpBuf, sizeof tpBuf, "%s, TP = 0 : i64", tagBuf);
    blockTags = tagBuf, blockTpTags = tpBuf;
    char n[64], p[64];
#define NAME(fmt) (snprintf(n, sizeof n, "h.%ld." fmt, i), n)
#define SSA(fmt) (snprintf(p, sizeof p, "h%ld_" fmt, i), p)
    param(SSA("ln1_w"), NAME("ln_1.weight"), "ones", vecC);
    param(SSA("ln1_b"), NAME("ln_1.bias"), "zeros", vecC);
    tp(1);
    param(SSA("attn_w"), NAME("attn.c_attn.weight"), "normal", F32(2, 3 * C, C, 0, 0));
    param(SSA("attn_b"), NAME("attn.c_attn.bias"), "zeros", F32(1, 3 * C, 0, 0, 0));
    param(SSA("proj_w"), NAME("attn.c_proj.weight"), "normal", F32(2, C, C, 0, 0));
    param(SSA("proj_b"), NAME("attn.c_proj.bias"), "zeros", vecC);
    tp(0);
    param(SSA("ln2_w"), NAME("ln_2.weight"), "ones", vecC);
    param(SSA("ln2_b"), NAME("ln_2.bias"), "zeros", vecC);
    tp(1);
    param(SSA("fc_w"), NAME("mlp.c_fc.weight"), "normal", F32(2, 4 * C, C, 0, 0));
    param(SSA("fc_b"), NAME("mlp.c_fc.bias"), "zeros", F32(1, 4 * C, 0, 0, 0));
    param(SSA("fcproj_w"), NAME("mlp.c_proj.weight"), "normal", F32(2, C, 4 * C, 0, 0));
    param(SSA("fcproj_b"), NAME("mlp.c_proj.bias"), "zeros", vecC);
    tp(0);
    const char *x4 = F32(3, B, T, 4 * C, 0), *qkv = F32(3, B, T, 3 * C, 0);
    printf("    %%h%ld_ln1, %%h%ld_ln1_mean, %%h%ld_ln1_rstd = \"tdag.layernorm\"(%%%s, %%h%ld_ln1_w, "
           "%%h%ld_ln1_b) {eps = 1.0e-05 : f64, tags = {%s}} : (%s, %s, %s) -> (%s, %s, %s)\n",
           i, i, i, x, i, i, tags, x3, vecC, vecC, x3, stat, stat);
    tp(1);
    printf("    %%h%ld_qkv = \"tdag.linear\"(%%h%ld_ln1, %%h%ld_attn_w, %%h%ld_attn_b) {tags = {%s}}"
           " : (%s, %s, %s) -> %s\n", i, i, i, i, tags, x3, F32(2, 3 * C, C, 0, 0),
           F32(1, 3 * C, 0, 0, 0), qkv);
    printf("    %%h%ld_att, %%h%ld_lse = \"tdag.attention\"(%%h%ld_qkv) {heads = %ld : i64, "
           "tags = {%s}} : (%s) -> (%s, %s)\n", i, i, i, H, tags, qkv, x3, F32(3, B, H, T, 0));
    printf("    %%h%ld_proj = \"tdag.linear\"(%%h%ld_att, %%h%ld_proj_w, %%h%ld_proj_b) "
           "{tags = {%s}} : (%s, %s, %s) -> %s\n", i, i, i, i, tags, x3, F32(2, C, C, 0, 0), vecC,
           x3);
    tp(0);
    printf("    %%h%ld_res1 = \"tdag.add\"(%%%s, %%h%ld_proj) {tags = {%s}} : (%s, %s) -> %s\n", i,
           x, i, tags, x3, x3, x3);
    printf("    %%h%ld_ln2, %%h%ld_ln2_mean, %%h%ld_ln2_rstd = \"tdag.layernorm\"(%%h%ld_res1, "
           "%%h%ld_ln2_w, %%h%ld_ln2_b) {eps = 1.0e-05 : f64, tags = {%s}} : (%s, %s, %s) -> "
           "(%s, %s, %s)\n", i, i, i, i, i, i, tags, x3, vecC, vecC, x3, stat, stat);
    tp(1);
    printf("    %%h%ld_fc = \"tdag.linear\"(%%h%ld_ln2, %%h%ld_fc_w, %%h%ld_fc_b) {tags = {%s}} : "
           "(%s, %s, %s) -> %s\n", i, i, i, i, tags, x3, F32(2, 4 * C, C, 0, 0),
           F32(1, 4 * C, 0, 0, 0), x4);
    printf("    %%h%ld_gelu = \"tdag.gelu\"(%%h%ld_fc) {tags = {%s}} : (%s) -> %s\n", i, i, tags,
           x4, x4);
    printf("    %%h%ld_mlp = \"tdag.linear\"(%%h%ld_gelu, %%h%ld_fcproj_w, %%h%ld_fcproj_b) "
           "{tags = {%s}} : (%s, %s, %s) -> %s\n", i, i, i, i, tags, x4, F32(2, C, 4 * C, 0, 0),
           vecC, x3);
    tp(0);
    snprintf(xbuf[i & 1], sizeof xbuf[0], "h%ld_out", i);
    printf("    %%%s = \"tdag.add\"(%%h%ld_res1, %%h%ld_mlp) {tags = {%s}} : (%s, %s) -> %s\n",
           xbuf[i & 1], i, i, tags, x3, x3, x3);
    x = xbuf[i & 1];
#undef NAME
#undef SSA
  }

  setTags(tagBuf, sizeof tagBuf, "head", 0, (int)cfg.S - 1);
  param("lnf_w", "ln_f.weight", "ones", vecC);
  param("lnf_b", "ln_f.bias", "zeros", vecC);
  printf("    %%lnf, %%lnf_mean, %%lnf_rstd = \"tdag.layernorm\"(%%%s, %%lnf_w, %%lnf_b) "
         "{eps = 1.0e-05 : f64, tags = {%s}} : (%s, %s, %s) -> (%s, %s, %s)\n",
         x, tags, x3, vecC, vecC, x3, stat, stat);
  const char *logits = F32(3, B, T, V, 0);
  printf("    %%logits = \"tdag.matmul_nt\"(%%lnf, %%wte) {tags = {%s}} : (%s, %s) -> %s\n", tags,
         x3, F32(2, V, C, 0, 0), logits);
  printf("    %%targets = \"tdag.input\"() {name = \"targets\", tags = {%s}} : () -> %s\n", tags,
         ty("i32", 2, B, T, 0, 0));
  printf("    %%loss, %%probs = \"tdag.cross_entropy\"(%%logits, %%targets) {tags = {%s}} : "
         "(%s, %s) -> (tensor<f32>, %s)\n", tags, logits, ty("i32", 2, B, T, 0, 0), logits);
  printf("    \"tdag.output\"(%%loss) {name = \"loss\", tags = {%s}} : (tensor<f32>) -> ()\n",
         tags);
  printf("    return\n  }\n}\n");
}

/* ---- The decoder family: Qwen3 (dense and MoE) and Llama 3. Qwen3, exactly, is issue #9's
 * "The models, exactly": Hugging Face Qwen3 in fp32 without biases: RMSNorm (eps 1e-6),
 * per-head q_norm/k_norm, rotate-half RoPE, grouped-query attention, SwiGLU MLP, final norm and
 * an lm_head (or the tied embed_tokens). Llama 3 (Hugging Face LlamaForCausalLM, issue 16) is
 * the same graph with the same parameter names, less q_norm/k_norm, with eps 1e-5 and RoPE
 * theta 500000 by default. One DecoderModel row tells the members apart. ---- */

typedef struct {
  const char *name;   /* the piper-gen command */
  const char *symbol; /* the func.func name: no dash */
  double eps;         /* every RMSNorm's epsilon */
  double theta;       /* the default --rope-theta */
  bool qkNorm;        /* RMSNorm per head on q and k before RoPE (q_norm, k_norm) */
  bool moe;           /* a mixture-of-experts MLP: --experts, --top-k, --expert-ffn-dim */
} DecoderModel;

static const DecoderModel decoderModels[] = {
    {"qwen3", "qwen3", 1e-6, 1e6, true, false},
    {"qwen3-moe", "qwen3_moe", 1e-6, 1e6, true, true},
    {"llama3", "llama3", 1e-5, 5e5, false, false},
};

typedef struct DecoderConfig DecoderConfig;
struct DecoderConfig {
  const DecoderModel *model;
  long L, C, H, KV, D, F, T, B, V, S; /* layers, channels, query heads, kv heads, head dim, FFN
                                         dim, sequence, batch, vocab, pipeline stages */
  double theta;                       /* RoPE base (--rope-theta) */
  int tie;                            /* --tie-embeddings: logits = x embed_tokens^T */
  /* Emits block `layer`'s MLP on the normed residual %<in> (B,T,C) with the block's tags set,
   * defining %<out> (B,T,C): emitDenseMlp (dense SwiGLU) for qwen3 and llama3; an MoE model
   * swaps in its own. */
  void (*mlp)(const DecoderConfig *q, long layer, const char *in, const char *out);
  long E, K, Fe; /* qwen3-moe: experts, experts per token, expert FFN dim (0 in qwen3) */
};

/* printf into fresh storage that lives until exit (kept with ty()'s strings). */
static const char *str(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *str(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (!b || !piperGrow((void **)&typeTexts, &typeTextsCap, nTypeTexts + 1, sizeof *typeTexts)) {
    fprintf(stderr, "piper-gen: error: out of memory\n");
    exit(1);
  }
  if (!nTypeTexts) atexit(freeTypeTexts);
  typeTexts[nTypeTexts++] = b;
  va_start(ap, fmt);
  vsnprintf(b, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return b;
}

/* One tdag op: <res> = "tdag.<name>"(<args>) {<attrs>, tags = {...}} : (<in>) -> <out>, where
 * res and args are SSA lists with their % signs and attrs may be empty. */
static void op(const char *res, const char *name, const char *args, const char *attrs,
               const char *in, const char *out) {
  printf("    %s = \"tdag.%s\"(%s) {%s%stags = {%s}} : (%s) -> %s\n", res, name, args, attrs,
         *attrs ? ", " : "", tags, in, out);
}

/* %<y>, %<y>_rstd = rmsnorm(%<x>, %<w>) with the model's eps: x (xType) normalized in chunks
 * of w's size. */
static void rmsnorm(const DecoderConfig *q, const char *y, const char *x, const char *w,
                    const char *xType, const char *wType, const char *rstdType) {
  op(str("%%%s, %%%s_rstd", y, y), "rmsnorm", str("%%%s, %%%s", x, w),
     str("eps = %e : f64", q->model->eps), str("%s, %s", xType, wType),
     str("(%s, %s)", xType, rstdType));
}

/* %<y> = x w^T: a linear layer without bias (tdag.matmul_nt). */
static void linearNoBias(const char *y, const char *x, const char *w, const char *xType,
                         const char *wType, const char *yType) {
  op(str("%%%s", y), "matmul_nt", str("%%%s, %%%s", x, w), "", str("%s, %s", xType, wType), yType);
}

/* The dense MLP of block i: down_proj(silu(gate_proj(h)) * up_proj(h)). */
static void emitDenseMlp(const DecoderConfig *q, long i, const char *in, const char *out) {
  const char *x3 = F32(3, q->B, q->T, q->C, 0), *f3 = F32(3, q->B, q->T, q->F, 0);
  const char *wFC = F32(2, q->F, q->C, 0, 0), *wCF = F32(2, q->C, q->F, 0, 0);
  const char *blockTags = tags;
  tags = str("%s, TP = 0 : i64", blockTags); /* the region a shard_tensor directive splits */
  param(str("l%ld_gate_w", i), str("model.layers.%ld.mlp.gate_proj.weight", i), "normal", wFC);
  param(str("l%ld_up_w", i), str("model.layers.%ld.mlp.up_proj.weight", i), "normal", wFC);
  param(str("l%ld_down_w", i), str("model.layers.%ld.mlp.down_proj.weight", i), "normal", wCF);
  linearNoBias(str("l%ld_gate", i), in, str("l%ld_gate_w", i), x3, wFC, f3);
  linearNoBias(str("l%ld_up", i), in, str("l%ld_up_w", i), x3, wFC, f3);
  op(str("%%l%ld_act", i), "swiglu", str("%%l%ld_gate, %%l%ld_up", i, i), "",
     str("%s, %s", f3, f3), f3);
  linearNoBias(out, str("l%ld_act", i), str("l%ld_down_w", i), f3, wCF, x3);
  tags = blockTags;
}

/* The MoE MLP of block i (qwen3-moe): router logits = gate(h) (E), top-K softmax weights
 * renormalised, each token's copies dispatched to its experts (SwiGLU of dim Fe each) and
 * combined by those weights. The dispatch and the experts carry EP = 0 besides the block's tags
 * (Piper's annotate("EP")): a shard directive selects them; the router, top-k and combine stay
 * in the stage's region. */
static void emitQwen3MoeMlp(const DecoderConfig *q, long i, const char *in, const char *out) {
  long B = q->B, T = q->T, C = q->C, E = q->E, K = q->K, Fe = q->Fe, R = B * T * K;
  const char *x3 = F32(3, B, T, C, 0), *wEC = F32(2, E, C, 0, 0), *e3 = F32(3, B, T, E, 0);
  const char *k3 = F32(3, B, T, K, 0), *k3i = ty("i32", 3, B, T, K, 0);
  const char *rows = F32(2, R, C, 0, 0), *counts = ty("i32", 1, E, 0, 0, 0);
  const char *wFC = F32(2, Fe, C, 0, 0), *wCF = F32(2, C, Fe, 0, 0);
  const char *moeAttr = str("num_experts = %ld : i64", E);
  param(str("l%ld_router_w", i), str("model.layers.%ld.mlp.gate.weight", i), "normal", wEC);
  static const char *const proj[3] = {"gate_proj", "up_proj", "down_proj"};
  const char *ws = "", *wt = "";
  for (int w = 0; w < 3; ++w)
    for (long e = 0; e < E; ++e) {
      const char *ssa = str("l%ld_e%ld_%s", i, e, proj[w]);
      param(ssa, str("model.layers.%ld.mlp.experts.%ld.%s.weight", i, e, proj[w]), "normal",
            w < 2 ? wFC : wCF);
      ws = str("%s%s%%%s", ws, *ws ? ", " : "", ssa);
      wt = str("%s%s%s", wt, *wt ? ", " : "", w < 2 ? wFC : wCF);
    }
  linearNoBias(str("l%ld_router", i), in, str("l%ld_router_w", i), x3, wEC, e3);
  op(str("%%l%ld_rw, %%l%ld_re", i, i), "moe_topk", str("%%l%ld_router", i),
     str("top_k = %ld : i64", K), e3, str("(%s, %s)", k3, k3i));
  const char *blockTags = tags;
  tags = str("%s, EP = 0 : i64", blockTags);
  op(str("%%l%ld_rows, %%l%ld_counts", i, i), "moe_dispatch", str("%%%s, %%l%ld_re", in, i),
     moeAttr, str("%s, %s", x3, k3i), str("(%s, %s)", rows, counts));
  op(str("%%l%ld_eout, %%l%ld_ehid", i, i), "moe_experts",
     str("%%l%ld_rows, %%l%ld_counts, %s", i, i, ws),
     str("operandSegmentSizes = array<i32: 1, 1, %ld, %ld, %ld>", E, E, E),
     str("%s, %s, %s", rows, counts, wt), str("(%s, %s)", rows, F32(2, R, 2 * Fe, 0, 0)));
  tags = blockTags;
  op(str("%%%s", out), "moe_combine", str("%%l%ld_eout, %%l%ld_rw, %%l%ld_re", i, i, i), moeAttr,
     str("%s, %s, %s", rows, k3, k3i), x3);
}

/* Block i on the residual stream %<x>, defining %l<i>_out. */
static void emitDecoderBlock(const DecoderConfig *q, long i, const char *x) {
  long B = q->B, T = q->T, C = q->C, H = q->H, KV = q->KV, D = q->D;
  const char *x3 = F32(3, B, T, C, 0), *q3 = F32(3, B, T, H * D, 0), *k3 = F32(3, B, T, KV * D, 0);
  const char *vecC = F32(1, C, 0, 0, 0), *vecD = F32(1, D, 0, 0, 0);
  const char *wQ = F32(2, H * D, C, 0, 0), *wK = F32(2, KV * D, C, 0, 0);
  const char *wO = F32(2, C, H * D, 0, 0);
#define L_(s) str("l%ld_" s, i)
#define NAME(s) str("model.layers.%ld." s, i)
  /* the attention (q/k/v/o projections, q_norm and k_norm if any, rope, gqa_attention) and its
   * parameters get TP = 0, the region a shard_tensor directive splits; the norms around it and
   * the residual adds stay untagged (replicated) */
  const char *blockTags = tags, *tpTags = str("%s, TP = 0 : i64", blockTags);
  param(L_("in_norm_w"), NAME("input_layernorm.weight"), "ones", vecC);
  tags = tpTags;
  param(L_("q_w"), NAME("self_attn.q_proj.weight"), "normal", wQ);
  param(L_("k_w"), NAME("self_attn.k_proj.weight"), "normal", wK);
  param(L_("v_w"), NAME("self_attn.v_proj.weight"), "normal", wK);
  param(L_("o_w"), NAME("self_attn.o_proj.weight"), "normal", wO);
  if (q->model->qkNorm) {
    param(L_("q_norm_w"), NAME("self_attn.q_norm.weight"), "ones", vecD);
    param(L_("k_norm_w"), NAME("self_attn.k_norm.weight"), "ones", vecD);
  }
  tags = blockTags;
  param(L_("post_norm_w"), NAME("post_attention_layernorm.weight"), "ones", vecC);
  /* h = x + o_proj(attn(rms(x))) */
  rmsnorm(q, L_("ln1"), x, L_("in_norm_w"), x3, vecC, F32(3, B, T, 1, 0));
  tags = tpTags;
  linearNoBias(L_("q"), L_("ln1"), L_("q_w"), x3, wQ, q3);
  linearNoBias(L_("k"), L_("ln1"), L_("k_w"), x3, wK, k3);
  linearNoBias(L_("v"), L_("ln1"), L_("v_w"), x3, wK, k3);
  const char *qIn = L_("q"), *kIn = L_("k"); /* what RoPE rotates */
  if (q->model->qkNorm) {
    rmsnorm(q, L_("qn"), L_("q"), L_("q_norm_w"), q3, vecD, F32(3, B, T, H, 0));
    rmsnorm(q, L_("kn"), L_("k"), L_("k_norm_w"), k3, vecD, F32(3, B, T, KV, 0));
    qIn = L_("qn"), kIn = L_("kn");
  }
  const char *rope = str("head_dim = %ld : i64, theta = %.17e : f64", D, q->theta);
  op(str("%%l%ld_qr", i), "rope", str("%%%s", qIn), rope, q3, q3);
  op(str("%%l%ld_kr", i), "rope", str("%%%s", kIn), rope, k3, k3);
  op(str("%%l%ld_att, %%l%ld_lse", i, i), "gqa_attention",
     str("%%l%ld_qr, %%l%ld_kr, %%l%ld_v", i, i, i),
     str("heads = %ld : i64, kv_heads = %ld : i64", H, KV), str("%s, %s, %s", q3, k3, k3),
     str("(%s, %s)", q3, F32(3, B, H, T, 0)));
  linearNoBias(L_("o"), L_("att"), L_("o_w"), q3, wO, x3);
  tags = blockTags;
  op(str("%%l%ld_res1", i), "add", str("%%%s, %%l%ld_o", x, i), "", str("%s, %s", x3, x3), x3);
  /* x = h + mlp(rms(h)) */
  rmsnorm(q, L_("ln2"), L_("res1"), L_("post_norm_w"), x3, vecC, F32(3, B, T, 1, 0));
  q->mlp(q, i, L_("ln2"), L_("mlp"));
  op(str("%%l%ld_out", i), "add", str("%%l%ld_res1, %%l%ld_mlp", i, i), "",
     str("%s, %s", x3, x3), x3);
#undef L_
#undef NAME
}

static void emitDecoder(const DecoderConfig *q) {
  const char *model = q->model->symbol;
  long L = q->L, C = q->C, T = q->T, B = q->B, V = q->V;
  const char *x3 = F32(3, B, T, C, 0), *vecC = F32(1, C, 0, 0, 0), *wte = F32(2, V, C, 0, 0);
  const char *tok = ty("i32", 2, B, T, 0, 0), *logits = F32(3, B, T, V, 0);
  char tagBuf[96];
  printf("// %s: L=%ld C=%ld H=%ld KV=%ld D=%ld F=%ld T=%ld B=%ld V=%ld rope_theta=%g, %s, %ld "
         "pipeline stage(s). Generated by piper-gen.\n", model, L, C, q->H, q->KV, q->D, q->F,
         T, B, V, q->theta, q->tie ? "tied embeddings" : "untied lm_head", q->S);
  printf("module {\n  func.func @%s() {\n", model);

  setTags(tagBuf, sizeof tagBuf, "embed", 0, 0);
  printf("    %%tokens = \"tdag.input\"() {name = \"tokens\", tags = {%s}} : () -> %s\n", tags,
         tok);
  param("embed_w", "model.embed_tokens.weight", "normal", wte);
  op("%x", "embed", "%tokens, %embed_w", "", str("%s, %s", tok, wte), x3);

  const char *x = "x";
  for (long i = 0; i < L; ++i) {
    setTags(tagBuf, sizeof tagBuf, "layer", i, stageOfIn(L, q->S, i));
    emitDecoderBlock(q, i, x);
    x = str("l%ld_out", i);
  }

  setTags(tagBuf, sizeof tagBuf, "head", 0, (int)q->S - 1);
  param("norm_w", "model.norm.weight", "ones", vecC);
  rmsnorm(q, "xf", x, "norm_w", x3, vecC, F32(3, B, T, 1, 0));
  if (!q->tie) param("head_w", "lm_head.weight", "normal", wte);
  linearNoBias("logits", "xf", q->tie ? "embed_w" : "head_w", x3, wte, logits);
  printf("    %%targets = \"tdag.input\"() {name = \"targets\", tags = {%s}} : () -> %s\n", tags,
         tok);
  op("%loss, %probs", "cross_entropy", "%logits, %targets", "", str("%s, %s", logits, tok),
     str("(tensor<f32>, %s)", logits));
  printf("    \"tdag.output\"(%%loss) {name = \"loss\", tags = {%s}} : (tensor<f32>) -> ()\n",
         tags);
  printf("    return\n  }\n}\n");
}

enum { DIM_MAX = 1 << 24 }; /* the largest size flag; the verifier checks the products */

/* An integer flag value in [1, DIM_MAX], or exit 2 naming the flag and the range. */
static long positive(const char *flag, const char *value) {
  int64_t v;
  if (!piperParseI64(value, 1, DIM_MAX, &v)) {
    fprintf(stderr, "piper-gen: error: %s needs an integer in [1, %d], got '%s'\n", flag,
            DIM_MAX, value ? value : "(nothing)");
    exit(2);
  }
  return (long)v;
}

/* piper-gen qwen3|qwen3-moe|llama3 FLAGS: parses and checks the flags, then prints the model
 * m; exit 2 on a bad flag, naming it. --layers, --dim, --heads, --kv-heads, --ffn-dim, --seq
 * and --batch are required (no GPT-style defaults: a decoder's shape is a choice). */
static int mainDecoder(int argc, char **argv, const DecoderModel *m) {
  bool moe = m->moe;
  DecoderConfig q = {.model = m, .V = 256, .S = 1, .theta = m->theta,
                     .mlp = moe ? emitQwen3MoeMlp : emitDenseMlp};
  const char *model = m->name;
  /* a dense model takes --ffn-dim, qwen3-moe --experts, --top-k and --expert-ffn-dim instead */
  long *noFlag = NULL;
  struct { const char *flag; long *field; bool required; } flags[] = {
      {"--layers", &q.L, true},   {"--dim", &q.C, true},       {"--heads", &q.H, true},
      {"--kv-heads", &q.KV, true}, {"--head-dim", &q.D, false},
      {"--ffn-dim", moe ? noFlag : &q.F, !moe},
      {"--seq", &q.T, true},      {"--batch", &q.B, true},     {"--vocab", &q.V, false},
      {"--stages", &q.S, false},  {"--experts", moe ? &q.E : noFlag, moe},
      {"--top-k", moe ? &q.K : noFlag, moe}, {"--expert-ffn-dim", moe ? &q.Fe : noFlag, moe}};
  size_t nFlags = sizeof flags / sizeof *flags;
  for (int i = 2; i < argc; ++i) {
    if (!strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--tie-embeddings")) {
      q.tie = 1;
      continue;
    }
    if (!strcmp(argv[i], "--rope-theta")) {
      const char *v = i + 1 < argc ? argv[i + 1] : NULL;
      char *end = NULL;
      q.theta = v ? strtod(v, &end) : 0.0;
      if (!v || end == v || *end || !isfinite(q.theta) || q.theta <= 0.0) {
        fprintf(stderr, "piper-gen: error: --rope-theta needs a positive number, got '%s'\n",
                v ? v : "(nothing)");
        return 2;
      }
      ++i;
      continue;
    }
    size_t k = 0;
    while (k < nFlags && (strcmp(argv[i], flags[k].flag) || !flags[k].field)) ++k;
    if (k == nFlags) {
      fprintf(stderr, "piper-gen: error: unknown flag '%s' for %s; see piper-gen --help\n",
              argv[i], model);
      return 2;
    }
    *flags[k].field = positive(argv[i], i + 1 < argc ? argv[i + 1] : NULL);
    ++i;
  }
  for (size_t k = 0; k < nFlags; ++k)
    if (flags[k].required && *flags[k].field == 0) {
      fprintf(stderr, "piper-gen: error: %s needs %s; see piper-gen --help\n", model,
              flags[k].flag);
      return 2;
    }
  if (moe && q.E > 1 << 20) { /* the verifier's bound on num_experts (dialects/tdag.c) */
    fprintf(stderr, "piper-gen: error: --experts %ld exceeds 1048576, the most experts a "
                    "tdag.moe_dispatch takes\n", q.E);
    return 2;
  }
  if (moe && q.K > q.E) {
    fprintf(stderr, "piper-gen: error: --top-k %ld exceeds --experts %ld\n", q.K, q.E);
    return 2;
  }
  if (q.H % q.KV) {
    fprintf(stderr, "piper-gen: error: --kv-heads %ld must divide --heads %ld\n", q.KV, q.H);
    return 2;
  }
  if (!q.D && q.C % q.H) {
    fprintf(stderr, "piper-gen: error: --heads %ld must divide --dim %ld (or give --head-dim)\n",
            q.H, q.C);
    return 2;
  }
  if (!q.D) q.D = q.C / q.H;
  if (q.D % 2) {
    fprintf(stderr, "piper-gen: error: the head dim %ld must be even: RoPE rotates pairs\n", q.D);
    return 2;
  }
  if (q.S > q.L) {
    fprintf(stderr, "piper-gen: error: --stages %ld exceeds --layers %ld: every stage needs a "
                    "block\n", q.S, q.L);
    return 2;
  }
  emitDecoder(&q);
  return ferror(stdout) ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (size_t k = 0; k < sizeof decoderModels / sizeof *decoderModels; ++k)
    if (!strcmp(argv[1], decoderModels[k].name)) return mainDecoder(argc, argv, &decoderModels[k]);
  if (strcmp(argv[1], "gpt")) {
    fprintf(stderr, "piper-gen: error: unknown model '%s'; the zoo has: gpt, qwen3, qwen3-moe, "
                    "llama3\n", argv[1]);
    return 2;
  }
  cfg = (GptConfig){4, 256, 4, 128, 8, 256, 1};
  struct { const char *flag; long *field; } flags[] = {
      {"--layers", &cfg.L}, {"--dim", &cfg.C},   {"--heads", &cfg.H}, {"--seq", &cfg.T},
      {"--batch", &cfg.B},  {"--vocab", &cfg.V}, {"--stages", &cfg.S}};
  for (int i = 2; i < argc; ++i) {
    if (!strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    }
    size_t k = 0, n = sizeof flags / sizeof *flags;
    while (k < n && strcmp(argv[i], flags[k].flag)) ++k;
    if (k == n) {
      fprintf(stderr, "piper-gen: error: unknown flag '%s'; see piper-gen --help\n", argv[i]);
      return 2;
    }
    *flags[k].field = positive(argv[i], i + 1 < argc ? argv[i + 1] : NULL);
    ++i;
  }
  if (cfg.C % cfg.H) {
    fprintf(stderr, "piper-gen: error: --heads %ld must divide --dim %ld\n", cfg.H, cfg.C);
    return 2;
  }
  if (cfg.V > 256) {
    fprintf(stderr, "piper-gen: error: --vocab %ld: tokens are bytes, so at most 256\n", cfg.V);
    return 2;
  }
  if (cfg.S > cfg.L) {
    fprintf(stderr, "piper-gen: error: --stages %ld exceeds --layers %ld: every stage needs a "
                    "block\n", cfg.S, cfg.L);
    return 2;
  }
  emitGpt();
  return ferror(stdout) ? 1 : 0;
}

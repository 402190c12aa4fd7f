/* Candidate strategies for N devices, within what the model's tags allow.
 *
 * The model's PP tags fix the pipeline's stages S (piper-gen --stages S); a candidate puts them
 * on P pipeline devices, each replicated D times, each replica a tensor-parallel group of T
 * (P * D * T = N; T >= 2 only if the model has TP tags), with the schedules piper-sched knows:
 *   P = 1       all stages on every device: gpipe --stages 1 (S = 1) or interleaved-1f1b with
 *               --devices 1 (forwards in stage order, backwards reversed): DP, TP, DP x TP
 *   P = S       gpipe, 1f1b, zb-h1
 *   P | S, P<S  interleaved-1f1b (S/P stages a device), M a multiple of P
 *   P = S/2     dualpipev (M >= 2P)
 * times microbatches M (the batch must split into D * M), ZeRO 0..3 over D >= 2 replicas,
 * expert parallelism over the D replicas (EP-tagged models), and bucket sizes for the gradient
 * all-reduces (ZeRO 0 and 1; ZeRO-2/3 reduce-scatter unbucketed). The directives themselves
 * are piper-sched's: tuneGenerate calls its generator (sched.c) in process, so every schedule
 * is generated (and checked) by the one generator the project has. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "piper/checked.h"
#include "piper/piper.h"
#include "tune/tune.h"

/* The integer tag `key` of `op`'s tags dictionary, or -1. */
static int64_t tagOf(MlirOperation op, const char *key) {
  MlirAttribute tags = mlirOperationGetAttributeByName(op, piperStr("tags"));
  if (mlirAttributeIsNull(tags) || !mlirAttributeIsADictionary(tags)) return -1;
  MlirAttribute v = mlirDictionaryAttrGetElementByName(tags, piperStr(key));
  return !mlirAttributeIsNull(v) && mlirAttributeIsAInteger(v) ? mlirIntegerAttrGetValueInt(v)
                                                                : -1;
}

static void scanModel(MlirOperation op, TuneModel *m) {
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
         !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b))
      for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);
           o = mlirOperationGetNextInBlock(o)) {
        if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(o, piperStr("tags"))))
          m->tagged = true;
        int64_t pp = tagOf(o, "PP");
        if (pp >= 0 && pp < 100000 && pp + 1 > m->stages) m->stages = (int)pp + 1;
        m->tp |= tagOf(o, "TP") >= 0;
        m->ep |= tagOf(o, "EP") >= 0;
        if (!m->batch && piperIsOp(o, PIPER_TDAG_INPUT) && mlirOperationGetNumResults(o) == 1) {
          MlirType t = mlirValueGetType(mlirOperationGetResult(o, 0));
          if (piperTensorRank(t) >= 1) m->batch = piperTensorDim(t, 0);
        }
        scanModel(o, m);
      }
}

TuneModel tuneReadModel(MlirOperation module) {
  TuneModel m = {.stages = 1};
  scanModel(module, &m);
  return m;
}

static void add(TuneCandidates *cs, TuneCandidate c) {
  if (!piperGrow((void **)&cs->items, &cs->cap, cs->n + 1, sizeof *cs->items)) {
    fprintf(stderr, "piper-tune: error: out of memory listing candidates\n");
    exit(1);
  }
  int n = 0;
  size_t size = sizeof c.name;
  if (c.P > 1) n += snprintf(c.name + n, size - n, "PP%d %s M%d ", c.P, tuneSchedNames[c.sched], c.M);
  if (c.D > 1) n += snprintf(c.name + n, size - n, "DP%d ", c.D);
  if (c.T > 1) n += snprintf(c.name + n, size - n, "TP%d ", c.T);
  if (c.ep) n += snprintf(c.name + n, size - n, "EP%d ", c.D);
  if (c.P == 1 && c.M > 1) n += snprintf(c.name + n, size - n, "M%d ", c.M);
  if (c.zero) n += snprintf(c.name + n, size - n, "Z%d ", c.zero);
  if (c.bucketMB >= 0) n += snprintf(c.name + n, size - n, "b%g ", c.bucketMB);
  if (!n) n = snprintf(c.name, size, "single ");
  c.name[n - 1] = '\0';
  c.json = NULL;
  cs->items[cs->n++] = c;
}

/* Bucket sizes tried for all-reduced gradients (MB): -1 is replicate's default (1 MB). */
static const double bucketSizes[] = {-1, 4, 25};
static const int microbatches[] = {1, 2, 4, 8};

/* The ZeRO, EP and bucket variants of one layout. */
static void addVariants(const TuneModel *m, TuneCandidates *cs, TuneCandidate c) {
  for (int zero = 0; zero <= (c.D > 1 ? 3 : 0); ++zero)
    for (int ep = 0; ep <= (m->ep && c.D > 1); ++ep)
      for (size_t b = 0; b < (zero < 2 && c.D > 1 ? sizeof bucketSizes / sizeof *bucketSizes : 1);
           ++b) {
        TuneCandidate v = c;
        v.zero = zero;
        v.ep = ep;
        v.bucketMB = bucketSizes[b];
        add(cs, v);
      }
}

void tuneEnumerate(const TuneModel *m, int devices, TuneCandidates *out) {
  int S = m->stages;
  for (int T = 1; T <= devices; ++T) {
    if (devices % T || (T > 1 && !m->tp)) continue;
    for (int P = 1; P <= devices / T; ++P) {
      if ((devices / T) % P) continue;
      int D = devices / T / P;
      for (size_t k = 0; k < sizeof microbatches / sizeof *microbatches; ++k) {
        int M = microbatches[k];
        if (m->batch > 0 && m->batch % ((int64_t)D * M)) continue;
        TuneCandidate c = {.S = S, .P = P, .M = M, .D = D, .T = T, .bucketMB = -1};
        if (P == 1) {
          c.sched = S == 1 ? TUNE_GPIPE : TUNE_INTERLEAVED;
          addVariants(m, out, c);
          continue;
        }
        if (M < 2) continue; /* a pipeline of one microbatch runs one stage at a time */
        if (P == S)
          for (TuneSched s = TUNE_GPIPE; s <= TUNE_ZBH1; ++s)
            if (s != TUNE_INTERLEAVED) {
              c.sched = s;
              addVariants(m, out, c);
            }
        if (P < S && S % P == 0 && M % P == 0) {
          c.sched = TUNE_INTERLEAVED;
          addVariants(m, out, c);
        }
        if (S % 2 == 0 && P == S / 2 && M >= 2 * P) {
          c.sched = TUNE_DUALPIPEV;
          addVariants(m, out, c);
        }
      }
    }
  }
}

void tuneCandidatesFree(TuneCandidates *cs) {
  for (size_t i = 0; i < cs->n; ++i) free(cs->items[i].json);
  free(cs->items);
  *cs = (TuneCandidates){0};
}

/* `text` with `"op":"replicate",` followed by the bucket size in every replicate (owned). */
static char *withBucketSize(const char *text, double mb) {
  static const char key[] = "\"op\":\"replicate\",";
  char field[48];
  int fl = snprintf(field, sizeof field, "\"bucket_size\":%g,", mb);
  size_t count = 0;
  for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) ++count;
  char *out = malloc(strlen(text) + count * (size_t)fl + 1), *o = out;
  if (!out) return NULL;
  for (const char *p = text;;) {
    const char *hit = strstr(p, key);
    size_t len = hit ? (size_t)(hit - p) + sizeof key - 1 : strlen(p);
    memcpy(o, p, len), o += len;
    if (!hit) break;
    memcpy(o, field, (size_t)fl), o += fl;
    p = hit + sizeof key - 1;
  }
  *o = '\0';
  return out;
}

bool tuneGenerate(TuneCandidate *c, char *why, size_t whySize) {
  TuneSchedArgs args = {.sched = c->sched, .S = c->S, .M = c->M, .D = c->D, .T = c->T,
                        .zero = c->zero, .ep = c->ep ? c->D : 0, .costF = 1, .costB = 2,
                        .costW = 1, .swap = {-1, -1, -1}};
  if (c->sched == TUNE_INTERLEAVED) args.devices = c->P;
  char *text = NULL, msg[512];
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  if (!out) {
    snprintf(why, whySize, "out of memory writing the strategy");
    return false;
  }
  int rc = tuneSchedRun(&args, TUNE_SCHED_JSON, out, msg, sizeof msg);
  bool ok = !fclose(out) && rc == 0;
  if (!ok) {
    snprintf(why, whySize, "piper-sched: %s", rc ? msg : "out of memory writing the strategy");
  } else if (c->bucketMB >= 0) {
    c->json = withBucketSize(text, c->bucketMB);
    ok = c->json != NULL;
  } else {
    c->json = text, text = NULL;
  }
  free(text);
  return ok;
}

/* --piper-print-dag=FILE.dot: the global training DAG as a Graphviz graph, for looking at a
 * strategy (`dot -Tsvg FILE.dot`). One box per global-DAG node (the ops sharing devices, tags
 * and pass), labelled with them and its op count and filled by its first device; an edge per
 * pair of nodes an SSA value connects, dashed where a comm op carries it. The IR is not
 * changed. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "passes/strategy.h"
#include "piper/checked.h"
#include "piper/ptrmap.h"

typedef struct {
  char label[192]; /* "B PP=1 layer=3 mb=2 @[1, 3]" */
  int ops;         /* ops in the node */
  int64_t device;  /* first device, for the colour */
} DagNode;

/* The node key of an op: its node label (pass and tags) and its devices, "... @[0, 2]". */
static void nodeKey(MlirOperation op, char *buf, size_t size, int64_t *device) {
  piperNodeLabel(op, buf, size);
  size_t n = strlen(buf);
  MlirAttribute d = mlirOperationGetAttributeByName(op, piperStr("devices"));
  intptr_t count = piperListLen(d);
  *device = count ? piperListAt(d, 0) : 0;
  n += (size_t)snprintf(buf + n, n < size ? size - n : 0, " @%s", mlirAttributeIsNull(d) ? "" : "[");
  for (intptr_t i = 0; i < count && n < size; ++i)
    n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "",
                          (long long)piperListAt(d, i));
  if (!mlirAttributeIsNull(d) && n < size) snprintf(buf + n, size - n, "]");
}

static MlirLogicalResult runPrintDag(MlirOperation module, const char *path) {
  if (!path || !*path) {
    mlirEmitError(mlirOperationGetLocation(module),
                  "--piper-print-dag needs a file: --piper-print-dag=dag.dot");
    return mlirLogicalResultFailure();
  }
  MlirOperation func = piperTrainingFunction(module, "piper-print-dag");
  if (mlirOperationIsNull(func)) return mlirLogicalResultFailure();
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  DagNode *nodes = NULL; /* every node of the DAG: a table that grows */
  size_t nNodes = 0, capNodes = 0;
  PiperPtrMap nodeOf; /* op ptr -> node index */
  piperPtrMapInit(&nodeOf, 1024);
  PiperPtrMap nodeByLabel; /* interned node key -> node index */
  piperPtrMapInit(&nodeByLabel, 256);
  bool ok = true;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); ok && !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (piperOpIs(op, "func.return") || piperOpInDialect(op, "comm")) continue;
    char key[192];
    int64_t device;
    nodeKey(op, key, sizeof key, &device);
    if (device < 0) { /* it picks the node's colour: an index */
      piperEmitErrorf(mlirOperationGetLocation(op),
                      "piper-print-dag: device %lld is not a device id (ids are >= 0)",
                      (long long)device);
      ok = false;
      break;
    }
    /* the label interned as an MLIR identifier is a stable key: O(1) per op */
    const void *interned =
        mlirIdentifierStr(mlirIdentifierGet(mlirOperationGetContext(op), piperStr(key))).data;
    intptr_t found;
    size_t k = piperPtrMapGet(&nodeByLabel, interned, &found) ? (size_t)found : nNodes;
    if (k == nNodes) {
      piperPtrMapPut(&nodeByLabel, interned, (intptr_t)nNodes);
      if (!piperGrow((void **)&nodes, &capNodes, nNodes + 1, sizeof *nodes)) {
        mlirEmitError(mlirOperationGetLocation(op), "piper-print-dag: out of memory");
        ok = false;
        break;
      }
      snprintf(nodes[nNodes].label, sizeof nodes[0].label, "%s", key);
      nodes[nNodes].device = device;
      nodes[nNodes].ops = 0;
      nNodes++;
    }
    nodes[k].ops++;
    piperPtrMapPut(&nodeOf, op.ptr, (intptr_t)k);
  }
  piperPtrMapFree(&nodeByLabel);
  PiperOutput out;
  if (!ok || !piperOutputOpen(&out, path)) {
    piperPtrMapFree(&nodeOf);
    free(nodes);
    return mlirLogicalResultFailure();
  }
  static const char *colours[] = {"#cfe2f3", "#d9ead3", "#fff2cc", "#f4cccc",
                                  "#d9d2e9", "#fce5cd", "#d0e0e3", "#ead1dc"};
  fprintf(out.file, "digraph global_dag {\n  rankdir=LR;\n  node [shape=box, style=filled, "
                    "fontname=\"monospace\"];\n");
  for (size_t k = 0; k < nNodes; ++k)
    fprintf(out.file, "  n%zu [label=\"%s\\n%d ops\", fillcolor=\"%s\"];\n", k, nodes[k].label,
            nodes[k].ops, colours[nodes[k].device % 8]);
  /* Edges: from each op's producers (through comm ops, which are drawn dashed). Dedup: one
   * edge per (from, to, kind), remembered in a map keyed by that triple encoded as a nonzero
   * integer (an nNodes^2 matrix would be gigabytes for a large plan). */
  PiperPtrMap seen;
  piperPtrMapInit(&seen, 1024);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    intptr_t to;
    if (!piperPtrMapGet(&nodeOf, op.ptr, &to)) continue;
    for (intptr_t a = 0; a < mlirOperationGetNumOperands(op); ++a) {
      MlirValue v = mlirOperationGetOperand(op, a);
      if (!mlirValueIsAOpResult(v)) continue;
      MlirOperation from = mlirOpResultGetOwner(v);
      bool viaComm = false;
      while (piperOpInDialect(from, "comm")) { /* recv: find its send's operand, by tag */
        viaComm = true;
        if (mlirOperationGetNumOperands(from) > 0) {
          MlirValue src = mlirOperationGetOperand(from, 0);
          if (!mlirValueIsAOpResult(src)) break;
          from = mlirOpResultGetOwner(src);
          continue;
        }
        int64_t tag = piperGetIntAttr(from, "tag", -1);
        MlirOperation send = {NULL};
        for (MlirOperation s = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(s);
             s = mlirOperationGetNextInBlock(s))
          if (piperOpIs(s, "comm.send") && piperGetIntAttr(s, "tag", -2) == tag) send = s;
        if (mlirOperationIsNull(send)) break;
        MlirValue src = mlirOperationGetOperand(send, 0);
        if (!mlirValueIsAOpResult(src)) break;
        from = mlirOpResultGetOwner(src);
      }
      intptr_t f;
      if (!piperPtrMapGet(&nodeOf, from.ptr, &f) || f == to) continue;
      /* +1: nonzero; << 4: the map hashes key >> 4 (it expects aligned pointers) */
      uintptr_t edge = ((((uintptr_t)f * nNodes + (uintptr_t)to) << 1 | viaComm) + 1) << 4;
      if (piperPtrMapGet(&seen, (const void *)edge, NULL)) continue;
      piperPtrMapPut(&seen, (const void *)edge, 1);
      fprintf(out.file, "  n%ld -> n%ld%s;\n", (long)f, (long)to, viaComm ? " [style=dashed]" : "");
    }
  }
  fprintf(out.file, "}\n");
  piperPtrMapFree(&seen);
  piperPtrMapFree(&nodeOf);
  free(nodes);
  return piperOutputCommit(&out, true) ? mlirLogicalResultFailure() : mlirLogicalResultSuccess();
}

MlirPass piperCreatePrintDagPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-print-dag", "global DAG as Graphviz", runPrintDag,
                               arg);
}

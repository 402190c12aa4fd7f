/* piper-opt --verify-diagnostics: checks the diagnostics a run emits against the
 * `// expected-error {{...}}` annotations of its input, as mlir-opt does. */
#ifndef PIPER_TOOLS_VERIFY_DIAGNOSTICS_H
#define PIPER_TOOLS_VERIFY_DIAGNOSTICS_H

#include <stdio.h>

#include "mlir-c/IR.h"

typedef struct PiperDiagVerifier PiperDiagVerifier;

/* Reads the expectations of `text` (whose locations name `fileName`) and attaches a handler
 * to `ctx` that matches every diagnostic against them and swallows it. Each annotation is
 * `expected-{error|warning|note|remark}[@+N|@-N|@above|@below] {{substring}}`; without a
 * designator it is for its own line. An unexpected diagnostic is reported to `out` as it comes,
 * as `file:line:col: error: unexpected error: message`. */
PiperDiagVerifier *piperDiagVerifierCreate(MlirContext ctx, const char *text,
                                           const char *fileName, FILE *out);

/* Detaches the handler, reports each unmet expectation to `out` as
 * `file:line:col: error: expected error "..." was not produced`, frees the verifier, and
 * returns 0 if every diagnostic was expected and every expectation met, 1 otherwise. */
int piperDiagVerifierFinish(PiperDiagVerifier *v);

#endif

/* What the compiler fuzz targets share: a context with piper's dialects whose diagnostics are
 * counted instead of printed, renewed now and then so that attributes interned from millions
 * of fuzzed inputs do not grow without bound, and a runner for a list of passes on a copy of a
 * module. A target's job is to prove that every input ends in a result or a diagnostic: a
 * crash, a sanitizer report, a hang (libFuzzer's -timeout) or an error without a diagnostic
 * is a bug. */
#ifndef PIPER_TEST_FUZZ_PIPELINE_H
#define PIPER_TEST_FUZZ_PIPELINE_H

#include "piper/piper.h"

/* The context for this input: the same one for many inputs, recreated every few hundred.
 * `fresh` (may be NULL) is set when the context is new, so a target can rebuild what it
 * caches in it; `release` (may be NULL) is called first, to destroy what it cached in the
 * old one. */
MlirContext fuzzContext(bool *fresh, void (*release)(void));

/* Errors the current context has reported since the last call (then reset to 0). */
int fuzzTakeErrorCount(void);

/* With PIPER_FUZZ_VERBOSE set, prints how stage `what` ended: to check that seeds reach the
 * passes they are meant to exercise. */
void fuzzReport(const char *what, bool ok);

/* A failure with no error diagnostic is itself a bug (the user would see exit 1 and no
 * reason): aborts with `what` so libFuzzer records the input. */
void fuzzRequireDiagnostic(bool failed, const char *what);

/* Runs `passes` (owned, consumed) on `module` itself; true on success. A failure must come
 * with a diagnostic. */
bool fuzzRunPasses(MlirContext ctx, MlirOperation module, MlirPass *passes, int n,
                   const char *what);

/* Runs `passes` (owned, consumed) on a clone of `module`, destroys the clone; true on success.
 * A failure must come with a diagnostic. */
bool fuzzRunOnClone(MlirContext ctx, MlirOperation module, MlirPass *passes, int n,
                    const char *what);

/* A NUL-terminated copy of the fuzzer's bytes, or NULL if they hold a NUL byte (the tools
 * refuse such a file when they read it, before any parsing); free() it. */
char *fuzzCString(const uint8_t *data, size_t size);

#endif

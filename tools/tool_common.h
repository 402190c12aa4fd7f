/* What piper-opt and piper-compile share: reading input, parsing it with file locations,
 * and the verification every tool runs right after parsing. */
#ifndef PIPER_TOOLS_TOOL_COMMON_H
#define PIPER_TOOLS_TOOL_COMMON_H

#include "piper/piper.h"

/* The whole of `path` ("-" = stdin) as a NUL-terminated string, or NULL after printing an
 * error that names the file. *len gets the length. Free with free(). */
char *piperReadInput(const char *path, size_t *len);
/* Parses `text` as a module whose locations name `sourceName`; null module on failure (the
 * diagnostics are already out). Then verifies IRDL constraints and tdag shapes. */
MlirModule piperParseAndVerify(MlirContext ctx, const char *text, const char *sourceName);

#endif

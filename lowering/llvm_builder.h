/* A small builder for llvm-dialect ops through the MLIR C API's generic op creation: function
 * declarations and definitions, calls, constants, GEPs and string globals. Lowering passes
 * build with it instead of spelling property attributes at every call site. */
#ifndef PIPER_LOWERING_LLVM_BUILDER_H
#define PIPER_LOWERING_LLVM_BUILDER_H

#include "piper/piper.h"
#include "piper/ptrmap.h"

typedef struct {
  MlirContext ctx;
  MlirLocation loc;      /* location given to every op built */
  MlirBlock moduleBody;  /* where declarations and globals go */
  MlirBlock block;       /* where instructions are appended */
  MlirType ptr, i64, i32, f32, voidType;
  PiperPtrMap *declared; /* interned callee name -> 1, for functions declared already; owned
                            unless shared through lbInitShared */
  PiperPtrMap ownDeclared; /* the map `declared` points to when not shared */
  int nStrings;          /* string globals made so far, for unique names */
  char symPrefix[32];    /* prefix of this builder's global names, unique per builder */
  MlirOperation lastString; /* the newest string global: the next goes after it */
} LlvmBuilder;

/* `symPrefix` keeps the globals of several builders on one module apart ("" for one). */
void lbInit(LlvmBuilder *b, MlirModule module, MlirLocation loc, const char *symPrefix);
/* Like lbInit, for one of several builders on a module: `declared` (initialised by the caller)
 * records the functions all of them have declared or defined, so no builder rescans the module
 * (which grows with every device function). */
void lbInitShared(LlvmBuilder *b, MlirModule module, MlirLocation loc, const char *symPrefix,
                  PiperPtrMap *declared);
void lbFree(LlvmBuilder *b);
/* Defines `name(ptr)` returning void, makes its entry block current; returns the argument. */
MlirValue lbBeginFunction(LlvmBuilder *b, const char *name);
void lbReturn(LlvmBuilder *b);
MlirValue lbConstI64(LlvmBuilder *b, int64_t v);
MlirValue lbConstI32(LlvmBuilder *b, int32_t v);
MlirValue lbConstF32(LlvmBuilder *b, float v);
MlirValue lbNullPtr(LlvmBuilder *b);
/* base + byteOffset as a pointer */
MlirValue lbOffset(LlvmBuilder *b, MlirValue base, int64_t byteOffset);
/* The same with the byte offset an i64 value computed at run time. */
MlirValue lbOffsetV(LlvmBuilder *b, MlirValue base, MlirValue byteOffset);
/* A pointer to a private NUL-terminated copy of `s`. */
MlirValue lbString(LlvmBuilder *b, const char *s);
/* A new block at the end of the current function; makes it current when `enter`. */
MlirBlock lbNewBlock(LlvmBuilder *b, bool enter);
void lbSetBlock(LlvmBuilder *b, MlirBlock block);
/* switch (value) { case values[i]: goto cases[i]; default: goto dflt } for an i64 value, one
 * jump table or search LLVM picks, instead of a chain of compares. */
void lbSwitch(LlvmBuilder *b, MlirValue value, MlirBlock dflt, intptr_t n, const int64_t *values,
              const MlirBlock *cases);
/* A pointer to a private constant array of int64 values. */
MlirValue lbI64Array(LlvmBuilder *b, intptr_t n, const int64_t *values);
/* Calls external function `callee` (declared on first use from the argument types);
 * `ret` null for void. Returns the result or a null value. */
MlirValue lbCall(LlvmBuilder *b, const char *callee, MlirType ret, intptr_t n,
                 const MlirValue *args);

#endif

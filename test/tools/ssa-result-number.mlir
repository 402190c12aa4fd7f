// An SSA use with a huge result number (`%v#N`) is rejected at the number's line and column
// before MLIR's parser sees it: the parser sizes a table by N for a use that comes before its
// definition, so `%83#2147483648` made piper-opt abort with "LLVM ERROR: out of memory"
// (found by the opt fuzz target; corpus/opt/huge-result-number-*). The bound is 1048575
// (dialects/parse.c says why); numbers in strings and comments, attribute values, and
// ordinary result numbers are left to the parser.
// RUN: piper-opt %s --split-input-file --verify-diagnostics > /dev/null

// The exact place and wording, from piper-opt and piper-compile (the same parse entry).
// RUN: rm -rf %t && mkdir -p %t
// RUN: printf '// padding\nfunc.func @f() {\n  "tdag.output"(%%%%83#2147483648) : (tensor<2xf32>) -> ()\n  return\n}\n' > %t/huge.mlir
// RUN: not piper-opt %t/huge.mlir 2>&1 | FileCheck %s --check-prefix=OPT
// OPT: huge.mlir:3:20: error: result number of '%83#2147483648' is out of range: at most 1048575 (no op has more results than that)
// OPT-NOT: out of memory
// RUN: not piper-compile %t/huge.mlir -o %t/never 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not ls %t/never
// The same input under a 1 GiB address-space limit: ssa-result-number-memory-limit.test.

func.func @huge_forward_use() {
  // expected-error@+1 {{result number of '%83#2147483648' is out of range: at most 1048575}}
  "tdag.output"(%83#2147483648) : (tensor<2xf32>) -> ()
  return
}

// -----

// The lexer joins `%v` and `#N` across blanks and comments, and so does the check.
func.func @number_after_comment() {
  "tdag.output"(%83 // a comment between the name and its number
  // expected-error@+1 {{result number of '%83 #4294967296' is out of range}}
  #4294967296) : (tensor<2xf32>) -> ()
  return
}

// -----

// Leading zeros do not hide the value; past 2^32 (where MLIR's own message would come) the
// same error.
func.func @leading_zeros() {
  // expected-error@+1 {{result number of '%x#0001048576' is out of range}}
  "tdag.output"(%x#0001048576) : (tensor<2xf32>) -> ()
  return
}

// -----

// One past the bound after a defined value: still rejected, though the op is known.
func.func @defined_value(%a: tensor<8x16x96xf32>) {
  %x:2 = "tdag.attention"(%a) {heads = 2 : i64} : (tensor<8x16x96xf32>) -> (tensor<8x16x32xf32>, tensor<8x2x16xf32>)
  // expected-error@+1 {{result number of '%x#99999999999999999999999' is out of range}}
  "tdag.output"(%x#99999999999999999999999) : (tensor<2xf32>) -> ()
  return
}

// -----

// Must not fire: the bound itself reaches the parser (which finds no %83 and says so), as do
// huge numbers in a string attribute, in a comment (%83#2147483648) and as an attribute value.
func.func @at_the_bound() {
  // expected-error@+1 {{use of undeclared SSA value name}}
  "tdag.output"(%83#1048575) {note = "%83#2147483648 \" %83#2147483648", n = 2147483648 : i64} : (tensor<2xf32>) -> ()
  return
}

// -----

// Must not fire: an ordinary multi-result use verifies, with a string holding a huge number
// and an escaped quote before it on the same line.
func.func @ordinary(%x: tensor<8x16x96xf32>) {
  %att:2 = "tdag.attention"(%x) {doc = "\"%att#2147483648\"", heads = 2 : i64} : (tensor<8x16x96xf32>) -> (tensor<8x16x32xf32>, tensor<8x2x16xf32>)
  %y = "tdag.add"(%att#1, %att#1) : (tensor<8x2x16xf32>, tensor<8x2x16xf32>) -> tensor<8x2x16xf32>
  return
}

"""Prints a one-device plan whose all-reduce names a group of N members 0..N-1 (the lowering
does not need the other devices to declare the group). Usage: gen_group_plan.py N."""
import sys

n = int(sys.argv[1])
print('module attributes {piper.devices = 1 : i64} {')
print('  func.func @device_0() {')
print('    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>')
print('    %%r, %%t = "comm.all_reduce"(%%p) {group = [%s]} : '
      '(tensor<4xf32>) -> (tensor<4xf32>, !comm.token)' % ", ".join(map(str, range(n))))
print('    "comm.wait"(%t) : (!comm.token) -> ()')
print('    return')
print('  }')
print('}')

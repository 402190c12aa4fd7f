"""Prints a per-device plan of N devices whose all-reduces form a chain of N-1 two-member
groups [d, d+1]: device d reduces with d-1, then with d+1, so the plan cannot hang and has
N-1 distinct communicator groups. For tests of the tables that hold groups (verify-plan, the
lowering); usage: gen_chain_plan.py N."""
import sys

n = int(sys.argv[1])
print('module attributes {piper.devices = %d : i64, piper.global_batch = 1 : i64} {' % n)
for d in range(n):
    print('  func.func @device_%d() {' % d)
    print('    %p = "tdag.param"() {init = "normal", name = "p"} : () -> tensor<4xf32>')
    prev = '%p'
    for k, group in enumerate([[d - 1, d], [d, d + 1]]):
        if group[0] < 0 or group[1] >= n:
            continue
        print('    %%r%d, %%t%d = "comm.all_reduce"(%s) {group = [%d, %d]} : '
              '(tensor<4xf32>) -> (tensor<4xf32>, !comm.token)' % (k, k, prev, group[0], group[1]))
        print('    "comm.wait"(%%t%d) : (!comm.token) -> ()' % k)
        prev = '%%r%d' % k
    print('    %%g = "tdag.gelu"(%s) : (tensor<4xf32>) -> tensor<4xf32>' % prev)
    print('    return')
    print('  }')
print('}')

"""Reads lowered MLIR on stdin and checks that the constant member array of a communicator
group of N members holds exactly 0..N-1 (a group once lost every member past 1,024 to stack
garbage). Prints `members ok: N` or what is wrong, and exits 1 on a mismatch."""
import re
import struct
import sys

n = int(sys.argv[1])
text = sys.stdin.read()
m = re.search(r'dense<"0x([0-9A-F]+)"> : tensor<%dxi64>' % n, text)
if not m:  # small arrays print as a list
    m2 = re.search(r'dense<\[([-0-9, ]+)\]> : tensor<%dxi64>' % n, text)
    if not m2:
        print("no %d-element member array in the output" % n)
        sys.exit(1)
    members = [int(x) for x in m2.group(1).split(",")]
else:
    raw = bytes.fromhex(m.group(1))
    members = list(struct.unpack("<%dq" % (len(raw) // 8), raw))
if members != list(range(n)):
    bad = next(i for i, v in enumerate(members) if i >= len(range(n)) or v != i)
    print("member %d is %d, expected %d" % (bad, members[bad], bad))
    sys.exit(1)
print("members ok: %d" % n)

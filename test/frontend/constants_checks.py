"""Checks of python/piper/_constants.triangle, the causal-mask recognition behind the exporter's
tdag.triangle (test/frontend/constants.test): a (T, T) triangle with leading dims of 1, and
Hugging Face's (B, 1, T, T) mask (one triangle expanded over the batch) are recognised; a mask
whose batch rows differ (a padded row) and a mask with a wrong cell are not."""
import sys

import torch

from piper import _constants

T, B = 6, 3
fmin = torch.finfo(torch.float32).min
tri = torch.full((T, T), fmin).triu(1)  # 0 where a key is visible, finfo.min above the diagonal
cases = [
    ("(1, 1, T, T) triangle", tri[None, None], (0, 0.0, fmin)),
    ("(B, 1, T, T) expanded over the batch", tri[None, None].expand(B, 1, T, T), (0, 0.0, fmin)),
    ("(B, H, T, T) expanded over batch and heads", tri.expand(B, 2, T, T), (0, 0.0, fmin)),
]
padded = tri[None, None].expand(B, 1, T, T).clone()
padded[1, 0, :, 0] = fmin  # batch row 1's first key padded away
wrong = tri.clone()
wrong[T - 1, 0] = fmin
cases += [("(B, 1, T, T) with a padded batch row", padded, None),
          ("(T, T) with one wrong cell", wrong, None)]
failed = 0
for name, t, want in cases:
    got = _constants.triangle(t)
    ok = got == want
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} {name}: {got}")
print(f"constants: {failed} failed")
sys.exit(1 if failed else 0)

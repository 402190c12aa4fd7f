#!/usr/bin/env bash
# Prints two OpenBLAS kernels (OPENBLAS_CORETYPE names) other than the one OpenBLAS picks on
# this processor, for make check-kernels: of Haswell (AVX2 + FMA, also Zen's), Sandybridge
# (AVX, no FMA) and SkylakeX (AVX-512, where the processor has it), the first two that round
# unlike this processor's own. Debian's OpenBLAS carries every kernel (DYNAMIC_ARCH).
set -euo pipefail
own=$(/usr/bin/python3 - <<'PY'
import ctypes, ctypes.util
lib = ctypes.CDLL(ctypes.util.find_library("openblas") or "libopenblas.so.0")
lib.openblas_get_corename.restype = ctypes.c_char_p
print(lib.openblas_get_corename().decode().lower())
PY
)
case "$own" in zen*) own=haswell ;; cooperlake|sapphirerapids) own=skylakex ;; esac
picked=()
for k in Haswell Sandybridge SkylakeX; do
  [ "${k,,}" = "$own" ] && continue
  [ "$k" = SkylakeX ] && ! grep -qw avx512f /proc/cpuinfo && continue
  picked+=("$k")
  [ ${#picked[@]} -eq 2 ] && break
done
echo "${picked[@]}"

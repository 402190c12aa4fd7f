#!/usr/bin/env bash
# make fuzz: runs every libFuzzer target of BUILD for SECONDS each and prints a table.
# Usage: test/fuzz/run.sh BUILD SECONDS [TARGET...]
# New inputs go to BUILD/fuzz/corpus/NAME (the checked-in corpus test/fuzz/corpus/NAME is read,
# not written: `make fuzz-corpus` merges what is new into it); a crash, a leak, a sanitizer
# report or a timeout (an input running over 20 s: a hang) is written to
# BUILD/fuzz/crashes/NAME/ and fails the run. Targets run two at a time (this machine kind
# has 2 cores). A target NAME with a script NAME_fuzz.py here (safetensors_py: the Python
# checkpoint reader) runs under Debian's python3 for SECONDS from a fresh seed, over the
# checked-in corpus of its C twin (corpus/safetensors); what it finds goes to the same
# crashes folder.
set -uo pipefail
build=$1 seconds=$2
shift 2
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(strategy opt safetensors flags data safetensors_py)
src=$(cd "$(dirname "$0")" && pwd)
out=$build/fuzz
mkdir -p "$out"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$src/../sanitizers/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
  local name=$1 dict=()
  mkdir -p "$out/corpus/$name" "$out/crashes/$name"
  if [ -f "$src/${name}_fuzz.py" ]; then
    /usr/bin/python3 "$src/${name}_fuzz.py" --seconds "$seconds" --timeout 20 \
      --corpus "$src/corpus/${name%_py}" --crashes "$out/crashes/$name" >"$out/$name.log" 2>&1
    echo $? >"$out/$name.rc"
    return
  fi
  # the build's dictionary where it writes one (strategy: the directive list's words added)
  if [ -f "$out/$name.dict" ]; then dict=(-dict="$out/$name.dict")
  elif [ -f "$src/$name.dict" ]; then dict=(-dict="$src/$name.dict"); fi
  "$build/bin/$name-fuzz" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$out/crashes/$name/" "${dict[@]}" \
    "$out/corpus/$name" "$src/corpus/$name" >"$out/$name.log" 2>&1
  echo $? >"$out/$name.rc"
}

pids=()
for name in "${targets[@]}"; do
  run_one "$name" &
  pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait

status=0
printf '%-14s %8s %12s %10s %8s %s\n' target seconds inputs exec/s corpus result
for name in "${targets[@]}"; do
  log=$out/$name.log
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  corpus=$(find "$out/corpus/$name" "$src/corpus/${name%_py}" -type f | wc -l)
  crashes=$(find "$out/crashes/$name" -type f | wc -l)
  result=clean
  if [ "$(cat "$out/$name.rc")" != 0 ] || [ "$crashes" != 0 ]; then
    result="FAILED: see $log and $out/crashes/$name/"
    status=1
  fi
  printf '%-14s %8s %12s %10s %8s %s\n' "$name" "$seconds" "${execs:-?}" "${rate:-?}" \
    "$corpus" "$result"
done
exit $status

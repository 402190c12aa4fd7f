#!/usr/bin/env bash
# make bench: every benchmark table. Usage: bench/run.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
/usr/bin/python3 "$(dirname "$0")/bench_gpt.py" "$build"
/usr/bin/python3 "$(dirname "$0")/bench_pipeline.py" "$build"
/usr/bin/python3 "$(dirname "$0")/bench_overlap.py" "$build"
/usr/bin/python3 "$(dirname "$0")/bench_compile.py" "$build"
/usr/bin/python3 "$(dirname "$0")/bench_moe.py" "$build"
/usr/bin/python3 "$(dirname "$0")/bench_tp.py" "$build"
/usr/bin/python3 "$(dirname "$0")/bench_cp.py" "$build"
/usr/bin/python3 "$(dirname "$0")/bench_gpu.py" "$build"
/usr/bin/python3 "$(dirname "$0")/bench_faults.py" "$build"
/usr/bin/python3 "$(dirname "$0")/bench_frontend.py" "$build"
/usr/bin/python3 "$(dirname "$0")/bench_hosts.py" "$build"

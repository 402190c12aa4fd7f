#!/usr/bin/env bash
# `make install` as a user's project uses it: installs the build into a temporary prefix (under
# /tmp, outside the source and build trees), moves the prefix elsewhere (piper-compile finds its
# runtime from its own location, so a prefix is relocatable), checks that no installed text file
# names either tree, then, in a private mount namespace where both trees are hidden under an
# empty folder, runs docs/frontend.md's walkthrough (model.py: annotate and export; run.sh:
# piper-sched, piper-compile, mpirun; load.py: piper.load with strict=True) in a fresh
# environment set up by the guide's own two-line "Installing" block, with only the installed
# files. Prints what it checked for FileCheck; exits non-zero on any failure.
# Usage: install.sh SOURCE_TREE BUILD_TREE
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/piper-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
mv "$work/prefix" "$work/moved"
prefix=$work/moved
for f in bin/piper-compile bin/piper-sched bin/piper-opt bin/piper-gen bin/piper-tune bin/piper-run \
         lib/libpiper_rt.a lib/libpiper_rt_main.a lib/libpiper_base.a lib/piper_rt_serial.link \
         lib/piper_rt_mpi.link include/piper/runtime.h lib/python/piper/__init__.py \
         lib/python/piper/_ops/moe.py; do
  test -e "$prefix/$f" || { echo "FAIL: not installed: $f"; exit 1; }
done
echo "installed: $(cd "$prefix" && find . -type f | wc -l) files; relocated to another folder"
if grep -rIl -e "$src" -e "$build" "$prefix"; then
  echo "FAIL: the installed files above name the source or build tree"
  exit 1
fi
echo "no installed text file names the source or build tree"
mkdir "$work/user" "$work/empty"
for f in env.sh; do
  awk -v m="<!-- frontend-install: $f -->" '$0 == m {on=1; next} on && /^```/ {if (code) exit; code=1; next} code' \
    "$src/docs/frontend.md" | sed "s|DIR|$prefix|g" > "$work/user/$f"
done
for f in model.py run.sh load.py; do
  awk -v m="<!-- frontend-walkthrough: $f -->" '$0 == m {on=1; next} on && /^```/ {if (code) exit; code=1; next} code' \
    "$src/docs/frontend.md" > "$work/user/$f"
done
grep -q "export PATH=$prefix/bin" "$work/user/env.sh" && grep -q piper.export "$work/user/model.py" &&
  grep -q mpirun "$work/user/run.sh" && grep -q piper.load "$work/user/load.py"
hide="mount --bind '$work/empty' '$src'"
case "$build/" in "$src"/*) ;; *) hide="$hide && mount --bind '$work/empty' '$build'" ;; esac
unshare -m --propagation private bash -c "$hide && cd '$work/user' &&
  env -i HOME='$work/user' TMPDIR='$work/user' PATH=/usr/bin:/bin OMP_NUM_THREADS=1 \
    OPENBLAS_NUM_THREADS=1 bash -e -c '
    test ! -e \"$src/docs\" && test ! -e \"$build/bin\" && echo \"source and build trees hidden\"
    . ./env.sh
    echo \"piper-compile: \$(command -v piper-compile)\" | sed \"s|$prefix|PREFIX|\"
    python3 model.py
    bash -e run.sh
    python3 load.py
    python3 -c \"import json; l = [json.loads(x) for x in open(\\\"m.jsonl\\\")]; t = [x[\\\"loss\\\"] for x in l if x.get(\\\"kind\\\") == \\\"train\\\"]; assert len(t) == 10 and t[-1] < t[0], t; print(\\\"trained 10 steps, loss\\\", round(t[0], 4), \\\"->\\\", round(t[-1], 4))\"
  '"

#!/usr/bin/env bash
# job.sh SCRIPT [SBATCH OPTIONS...]: inside `slurm.sh with`, submits SCRIPT and waits for the job
# to end for good (requeued jobs run again: sbatch --wait alone returns at the first end), at
# most 600 s. Prints the job's id, its final state and exit code and its restart count
# ("job 1 COMPLETED 0:0 restarts 1"), then the job's output file.
set -u
out=$(sbatch --parsable "${@:2}" "$1") || { echo "job.sh: sbatch failed: $out"; exit 1; }
id=${out%%;*}
for _ in $(seq 1 3000); do
  line=$(scontrol show job "$id" -o 2> /dev/null)
  state=$(echo "$line" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  case "$state" in
  COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE) break ;;
  esac
  sleep 0.2
done
echo "job $id $state $(echo "$line" | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p') restarts $(echo "$line" | sed -n 's/.* Restarts=\([0-9]*\).*/\1/p')"

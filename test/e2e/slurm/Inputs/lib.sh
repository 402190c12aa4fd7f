# lib.sh: what the job scripts of test/e2e/slurm share (sourced, inside `slurm.sh with`).

# Waits until the shell test $1 holds, at most 300 s (a deadline, not a count of rounds); 1
# (saying so) if it never did.
wait_for() {
  local end=$(($(date +%s) + 300))
  while [ "$(date +%s)" -le $end ]; do
    eval "$1" && return 0
    sleep 0.2
  done
  echo "$(basename "$0"): gave up waiting for: $1" >&2
  return 1
}

# Waits until job $1 has ended for good (a requeued job runs again first: sbatch --wait alone
# returns at its first end), at most 600 s, and prints "job ID STATE EXIT restarts N".
job_final() {
  local line state end=$(($(date +%s) + 600))
  while [ "$(date +%s)" -le $end ]; do
    line=$(scontrol show job "$1" -o 2> /dev/null)
    state=$(echo "$line" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    case "$state" in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE) break ;;
    esac
    sleep 0.2
  done
  echo "job $1 $state $(echo "$line" | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p') restarts $(echo "$line" | sed -n 's/.* Restarts=\([0-9]*\).*/\1/p')"
}

# Submits the batch script $1 (sbatch options after it) and prints its job id.
submit() {
  local out
  out=$(sbatch --parsable "${@:2}" "$1") || { echo "sbatch failed: $out" >&2; return 1; }
  echo "${out%%;*}"
}

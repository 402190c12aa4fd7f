#!/usr/bin/env bash
# job.sh SCRIPT [SBATCH OPTIONS...]: inside `slurm.sh with`, submits SCRIPT and waits for the job
# to end for good. Prints its id, final state, exit code and restart count ("job 1 COMPLETED 0:0
# restarts 0").
set -u
. "$(dirname "$0")/lib.sh"
id=$(submit "$@") || exit 1
job_final "$id"

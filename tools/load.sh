#!/usr/bin/env bash
# Two CPU-bound busy loops beside whatever else runs, to prove that the tests
# pass on a busy machine (issue 39: `deno task test` green with two such
# processes on the 2 cores). The loops stop by themselves after SECONDS, or
# when this script ends or is killed; each is stopped by its PID.
#
#   tools/load.sh [SECONDS]                  load for SECONDS (default 600)
#   tools/load.sh SECONDS -- COMMAND [ARG…]  load while COMMAND runs; exits with its status
#
# e.g. tools/load.sh 1800 -- deno task test
set -euo pipefail

seconds="${1:-600}"
if [[ $# -gt 0 ]]; then shift; fi

busy() {
  local end=$((SECONDS + seconds))
  while ((SECONDS < end)); do :; done
}

pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap stop EXIT
trap 'exit 130' INT TERM

for _ in 1 2; do
  busy &
  pids+=("$!")
done
echo "load: busy loops ${pids[*]} for at most ${seconds} s" >&2

if [[ "${1:-}" == "--" ]]; then
  shift
  "$@"
else
  wait "${pids[@]}"
fi

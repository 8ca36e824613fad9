#!/usr/bin/env bash
# make test's runner: every test package, with tests/e2e split into E2E_SHARDS shards (2 by
# default) that run beside the others, each shard its own go test process and so its own
# stack. The e2e package alone is most of the suite's time, and one stack leaves part of
# the machine idle while it waits on clusters and timers (BENCHMARKS.md, "CI").
# Shards take every E2E_SHARDS-th test in source order, so a new test needs no listing.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
SHARDS=${E2E_SHARDS:-2}
# A shard beside the other packages has run over 45 minutes (4,197 s on 2026-11-29, a
# loaded machine; BENCHMARKS.md, "CI").
TIMEOUT=${TEST_TIMEOUT:-70m}

others=$($GO list ./... | grep -v '/tests/e2e$') || exit 1
tests=$($GO test -list '^Test' ./tests/e2e | grep '^Test') || { echo "tests/e2e: cannot list its tests" >&2; exit 1; }

pids=()
$GO test -count=1 -timeout "$TIMEOUT" $others &
pids+=($!)
for ((i = 0; i < SHARDS; i++)); do
  names=$(awk -v n="$SHARDS" -v i="$i" '(NR - 1) % n == i' <<<"$tests" | paste -sd '|')
  [ -n "$names" ] || continue
  TEMCO_E2E_SHARD="$((i + 1))-of-$SHARDS" $GO test -count=1 -timeout "$TIMEOUT" -run "^($names)\$" ./tests/e2e &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
  wait "$p" || rc=1
done
exit $rc

#!/usr/bin/env bash
# Records a new set of workflow histories for the replay test (`make histories`): runs the
# e2e suite with TEMCO_RECORD_HISTORIES, then appends the set's sums to SHA256SUMS.
# Sets are append-only: re-recording a committed set would drop the runs it proves still
# replay, so a set already in git is refused.
#   tests/replay/record.sh SET     e.g. 2026-11-24-apply-order
# HISTORIES_RUN (a go test -run pattern) records from those e2e tests only: the ones whose
# workflows a change touched.
set -euo pipefail
export LC_ALL=C # the order of the sums appended
set=${1:-}
GO=${GO:-go}
root=$(git rev-parse --show-toplevel)
dir=tests/testdata/histories
sums=$dir/SHA256SUMS
cd "$root"

if [[ ! $set =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]]; then
  echo "histories: '$set' is not a set name (a folder name, e.g. $(date +%Y-%m-%d)-<change>)" >&2
  exit 2
fi
if [ -n "$(git ls-files -- "$dir/$set")" ] || git show ":$sums" 2>/dev/null | grep -q "  $set/"; then
  echo "histories: $dir/$set is already in git; sets are append-only:" \
    "record a new one, e.g. make histories HISTORIES=$(date +%Y-%m-%d)-<change>" >&2
  exit 1
fi

mkdir -p "$dir/$set"
rm -f "$dir/$set"/*.json # left by an earlier attempt that was not committed
TEMCO_RECORD_HISTORIES="$root/$dir/$set" "$GO" test -count=1 -timeout 30m -run "${HISTORIES_RUN:-.}" ./tests/e2e/

# The sums of committed sets stay as they are; lines an earlier attempt left are replaced.
touch "$sums"
grep -v "  $set/" "$sums" > "$sums.new" || true
(cd "$dir" && sha256sum "$set"/*.json) >> "$sums.new"
mv "$sums.new" "$sums"
echo "histories: recorded $dir/$set; commit it with $sums"

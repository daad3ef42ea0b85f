#!/usr/bin/env bash
# Every size in bench/README.md, REPEAT times each (default 3), one JSON line per run in
# bench/results/<scenario>-<size>.jsonl, then the Markdown summary (median, min – max).
# About 35 minutes on a 2-core machine with REPEAT=3.
set -uo pipefail
cd "$(dirname "$0")/.."
REPEAT="${REPEAT:-3}"
OUT="${OUT:-bench/results}"
mkdir -p "$OUT"
if [[ -z "${SKIP_BUILD:-}" ]]; then bash scripts/setup.sh >/dev/null && npx tsc -b || exit 1; fi

run() { # name, then bench flags (RUNS=n before the call overrides REPEAT for that row)
  local name="$1"
  shift
  for i in $(seq 1 "${RUNS:-$REPEAT}"); do
    echo "== $name run $i: $*" >&2
    timeout 900 node bench/dist/main.js "$@" --json >>"$OUT/$name.jsonl" || echo "== $name run $i failed ($?)" >&2
  done
}

run join-200x50 --scenario join --clusters 200 --nodes 50
run join-1x5000 --scenario join --clusters 1 --nodes 5000
run join-20x50-svc5 --scenario join --clusters 20 --nodes 50 --services 5
# Services at 5,000 × 5,000 did not converge in 10 minutes when measured (see README): one run, bounded.
RUNS=1 run join-1x5000-svc5000 --scenario join --clusters 1 --nodes 5000 --services 5000 --timeout-s 300
run steady-20x50 --scenario steady --clusters 20 --nodes 50
run churn-20x50 --scenario churn --clusters 20 --nodes 50 --services 5
run chaos-3x30 --scenario chaos --clusters 3 --nodes 30
# The soak that left test/lifecycle.e2e.test.ts: all 90 nodes NotReady with running instances,
# 60 monitor rounds of them (5,400 checks) against the lying cloud; wrongDeletions must be 0.
RUNS=1 run chaos-3x30-soak --scenario chaos --clusters 3 --nodes 30 --not-ready 30 --gone 0 \
  --monitor-period-ms 100 --delete-after-ms 1000 --min-checks 5400 --duration-s 600

node bench/dist/summarize.js "$OUT"/*.jsonl

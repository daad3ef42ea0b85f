#!/usr/bin/env bash
# The test command (`npm test`): build, typecheck the tests, run every jest suite, and print
# one closing line "N passed, N failed". Extra arguments go to jest (e.g. a path filter).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
npx tsc -p tsconfig.test.json
rm -f .jest.json
status=0
NODE_OPTIONS="--experimental-vm-modules --no-warnings=ExperimentalWarning" \
  npx jest --json --outputFile=.jest.json "$@" || status=$?
if [[ -f .jest.json ]]; then
  node -e 'const r=JSON.parse(require("fs").readFileSync(".jest.json","utf8"));console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed`)'
fi
exit $status

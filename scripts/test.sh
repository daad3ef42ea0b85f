#!/usr/bin/env bash
# The test command (`npm test`): build, typecheck the tests, run every jest suite (projects
# unit and e2e, see jest.config.js), and print one closing line "N passed, N failed". Extra
# arguments go to jest (e.g. a path filter, or `--selectProjects unit`).
# SKIP_TYPECHECK=1 leaves the typecheck out (test:lts: the same sources are typechecked by
# npm test, whatever Node runs them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# The tests against the workspaces' declarations (the build has just checked the workspaces
# themselves): incremental, so nothing is checked again when nothing changed.
if [[ -z ${SKIP_TYPECHECK:-} ]]; then npx tsc -b tsconfig.test.json; fi
rm -f .jest.json
status=0
NODE_OPTIONS="--experimental-vm-modules --no-warnings=ExperimentalWarning" \
  npx jest --json --outputFile=.jest.json "$@" || status=$?
if [[ -f .jest.json ]]; then
  node -e 'const r=JSON.parse(require("fs").readFileSync(".jest.json","utf8"));console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed`)'
fi
exit $status

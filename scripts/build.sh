#!/usr/bin/env bash
# The build (`npm run build`): compile every workspace with tsc, then bundle the agent.
# `fleet-ccm agent` runs from cli/dist/agent.bundle.js: one file holding only the code the agent
# executes (see cli/src/agent-main.ts), which keeps its memory within its budget.
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc -b
node scripts/bundle/agent.mjs

#!/usr/bin/env bash
# The build (`npm run build`): compile every workspace with tsc, then bundle the agent.
# `fleet-ccm agent` runs from cli/dist/agent.bundle.js: one file holding only the code the agent
# executes (see cli/src/agent-main.ts), which keeps its memory within its budget.
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc -b
# Whitespace and syntax are minified, names are not: stack traces stay readable.
npx esbuild cli/dist/agent-main.js --bundle --platform=node --format=esm --target=node20 \
  --minify-whitespace --minify-syntax --outfile=cli/dist/agent.bundle.js --log-level=warning \
  --alias:whatwg-url=./scripts/bundle/whatwg-url.mjs --alias:url=./scripts/bundle/url.mjs \
  --banner:js="import { createRequire as __fleetRequire } from 'node:module'; const require = __fleetRequire(import.meta.url);"

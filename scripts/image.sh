#!/usr/bin/env bash
# Builds the container images deckhand/base:VERSION and
# deckhand/desktop:VERSION into the local engine, with no registry pull:
#
#  1. a root file system per image, made by mmdebstrap (--variant=minbase,
#     Debian bookworm from this machine's apt sources) from the packages
#     in packaging/image/*.packages and imported with `docker import` as
#     deckhand/rootfs:<image>-<hash of its package list>. An imported one
#     is kept and reused until its list changes; downloaded .deb files are
#     kept in the cache dir, so base and desktop share them.
#  2. `docker build` of packaging/image/<image>.Dockerfile FROM that
#     rootfs: the agent (bin/deckhand, PID 1), the user `user` (uid 1000,
#     home /home/user), and for desktop deckhand-display, the daemon
#     program files and the session bus policy (packaging/image/desktop).
#     The engine's build cache keeps the steps that did not change.
#
#   scripts/image.sh [VERSION] [base|desktop ...]   (default: both)
#
# Environment (defaults in brackets):
#   BIN                      where deckhand and deckhand-display are [bin]
#   DECKHAND_IMAGE_CACHE     .deb cache and lock [/var/cache/deckhand-image]
#   DECKHAND_IMAGE_SOURCES   apt sources for mmdebstrap [/etc/apt/sources.list.d/debian.sources]
#   DOCKER_HOST              the engine [unix:///var/run/docker.sock]
# It prints each image's reference and how long each step took.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:-dev}
shift || true
IMAGES=("$@")
((${#IMAGES[@]})) || IMAGES=(base desktop)
BIN=${BIN:-bin}
CACHE=${DECKHAND_IMAGE_CACHE:-/var/cache/deckhand-image}
SOURCES=${DECKHAND_IMAGE_SOURCES:-/etc/apt/sources.list.d/debian.sources}
SUITE=bookworm
SRC=packaging/image
# The classic builder: it never pulls an image that is already local, and
# needs no buildx plugin.
export DOCKER_BUILDKIT=0

SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"

[[ "$VERSION" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || { echo "image: VERSION $VERSION is not a valid tag" >&2; exit 2; }
for c in docker mmdebstrap; do
  command -v "$c" >/dev/null || { echo "image: $c is missing; run scripts/setup.sh" >&2; exit 1; }
done
[[ -x "$BIN/deckhand" ]] || { echo "image: $BIN/deckhand is missing; run make build" >&2; exit 1; }
[[ -r "$SOURCES" ]] || { echo "image: no apt sources at $SOURCES (DECKHAND_IMAGE_SOURCES)" >&2; exit 1; }
docker version >/dev/null 2>&1 || { echo "image: no engine answers (scripts/engine.sh start)" >&2; exit 1; }

packages() { # image -> its packages, one a line, sorted
  { sed 's/#.*//' "$SRC/base.packages"; [[ "$1" == desktop ]] && sed 's/#.*//' "$SRC/desktop.packages"; } |
    tr -s ' \t' '\n' | sed '/^$/d' | sort -u
}

elapsed() { echo "$(($(date +%s%N) / 1000000 - $1))ms"; }
now() { echo $(($(date +%s%N) / 1000000)); }

# rootfs image -> the reference of its imported root file system, built
# when missing.
rootfs() {
  local img=$1 list hash ref t
  list=$(packages "$img")
  hash=$(printf '%s\n%s\n%s\n' "$SUITE" minbase "$list" | sha256sum | cut -c1-16)
  ref="deckhand/rootfs:$img-$hash"
  if docker image inspect "$ref" >/dev/null 2>&1; then
    echo "$ref"
    return
  fi
  $SUDO mkdir -p "$CACHE/debs"
  # One build of a root file system at a time per machine (tests and make
  # image may start together); the second finds the first's import.
  exec 7>>"$CACHE/lock"
  flock -w 1800 7 || { echo "image: $CACHE/lock is held" >&2; exit 1; }
  if ! docker image inspect "$ref" >/dev/null 2>&1; then
    t=$(now)
    echo "image: building the $img root file system ($ref) with mmdebstrap" >&2
    $SUDO mmdebstrap --quiet --variant=minbase --include="$(paste -sd, <<<"$list")" --format=tar \
      --skip=download/empty --skip=essential/unlink \
      --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
      --setup-hook="sync-in $CACHE/debs /var/cache/apt/archives/" \
      --customize-hook="sync-out /var/cache/apt/archives $CACHE/debs" \
      "$SUITE" - "$SOURCES" |
      docker import --change 'LABEL deckhand.image=rootfs' --message "mmdebstrap minbase $SUITE: $(paste -sd' ' <<<"$list")" - "$ref" >/dev/null
    echo "image: $ref built in $(elapsed "$t")" >&2
  fi
  exec 7>&-
  echo "$ref"
}

for img in "${IMAGES[@]}"; do
  case "$img" in base | desktop) ;; *) echo "image: unknown image $img (base or desktop)" >&2; exit 2 ;; esac
  t0=$(now)
  from=$(rootfs "$img")
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
  install -D -m 0755 "$BIN/deckhand" "$ctx/root/usr/bin/deckhand"
  if [[ "$img" == desktop ]]; then
    [[ -x "$BIN/deckhand-display" ]] || { echo "image: $BIN/deckhand-display is missing; run make build" >&2; exit 1; }
    install -D -m 0755 "$BIN/deckhand-display" "$ctx/root/usr/bin/deckhand-display"
    cp -a "$SRC/desktop/." "$ctx/root/"
    chmod -R go-rwx "$ctx/root/var/lib/deckhand"
  fi
  cp "$SRC/$img.Dockerfile" "$ctx/Dockerfile"
  t1=$(now)
  # The classic builder's deprecation notice is noise here; its errors are
  # shown.
  if ! out=$(docker build --quiet --build-arg ROOTFS="$from" --build-arg VERSION="$VERSION" -t "deckhand/$img:$VERSION" "$ctx" 2>&1); then
    echo "$out" >&2
    echo "image: docker build of deckhand/$img:$VERSION failed" >&2
    exit 1
  fi
  rm -rf "$ctx"
  trap - EXIT
  echo "deckhand/$img:$VERSION (from $from; rootfs $(($t1 - $t0))ms, build $(elapsed "$t1"))"
done

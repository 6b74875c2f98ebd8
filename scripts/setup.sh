#!/usr/bin/env bash
# Installs what building and testing deckhand needs on a Debian machine:
# apt packages by name, only when absent, and npm packages from lockfiles.
# Idempotent: a second run installs nothing and takes well under a second.
#
#   scripts/setup.sh          build + test dependencies
#   scripts/setup.sh --bench  also the peers the benchmarks compare against
set -euo pipefail
cd "$(dirname "$0")/.."

# Build: cgo headers for the display binary (robotgo, X11, XTest).
BUILD_PKGS=(gcc make pkg-config libc6-dev libx11-dev libxtst-dev libxkbcommon-dev libxkbcommon-x11-dev
  libx11-xcb-dev libxinerama-dev libxrandr-dev libxfixes-dev libxext-dev libpng-dev libjpeg62-turbo-dev)
# Tests drive real things: an X server and clients, independent checkers,
# a browser, TOTP and signature verifiers, and PostgreSQL (the store's
# second engine: tests initdb private servers from its binaries), and WebDAV
# checkers (litmus, rclone, cadaver) for the file service; systemd-analyze
# (systemd) verifies the units (packaging/);
# iproute2, dante-server, tinyproxy and stunnel4 build the egress tests' network
# namespaces and real SOCKS5, HTTP CONNECT and TLS proxies. `make run`
# (scripts/run.sh) needs curl and jq; the README's quickstart, which
# scripts/quickstarte2e runs, serves a page with python3; python3 with
# pytest and cryptography runs the Python SDK's tests (sdk/python).
# at-spi2-core and a python3-gi GTK window give the display's accessibility
# tests a real tree, ffmpeg records the screen, x11vnc and novnc serve the
# takeover view; the mcp tests click a button of such a window.
TEST_PKGS=(openssl oathtool procps util-linux xvfb xauth openbox xterm x11-apps x11-utils x11-xserver-utils
  xdotool xclip xsel imagemagick scrot chromium fonts-dejavu-core nodejs postgresql cron litmus rclone cadaver poppler-utils
  git curl libnotify-bin dbus dbus-x11 openssh-server openssh-client prometheus systemd
  iproute2 dante-server tinyproxy stunnel4
  jq python3 python3-pytest python3-cryptography
  at-spi2-core python3-gi gir1.2-gtk-3.0 ffmpeg x11vnc novnc)
# Containers run on a real engine: Debian's Docker (docker.io; dockerd is
# started by scripts/engine.sh, there is no systemd here) and Podman, whose
# Docker-compatible socket the driver tests also use. mmdebstrap builds the
# images' Debian root file systems from packages (no registry pull; make
# image), busybox-static is the tests' smallest image; etcd-server,
# containerd and containernetworking-plugins are the store, the node's
# runtime and the Pod network of the one-node Kubernetes cluster the
# kubernetes driver's tests run (make test-kube).
ENGINE_PKGS=(docker.io podman busybox-static mmdebstrap etcd-server containerd containernetworking-plugins)
# Benchmarks compare against these peers.
BENCH_PKGS=(openssh-server openssh-client wrk hey hyperfine nginx supervisor)

want=("${BUILD_PKGS[@]}" "${TEST_PKGS[@]}" "${ENGINE_PKGS[@]}")
[[ "${1:-}" == "--bench" ]] && want+=("${BENCH_PKGS[@]}")

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages come only through committed lockfiles, with the machine's npm.
for lock in $(git ls-files '*package-lock.json' 2>/dev/null || true); do
  dir=$(dirname "$lock")
  stamp="$dir/node_modules/.deckhand-lock"
  if [[ ! -f "$stamp" ]] || ! cmp -s "$lock" "$stamp"; then
    echo "setup: npm ci in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$lock" "$stamp"
  fi
done

#!/usr/bin/env bash
# Builds the desktop container image as an OCI layout, without Docker:
# a root file system assembled from this Debian machine's installed files
# (Xvfb, xkbcomp and the XKB data, the openbox window manager with its
# fonts and theme, a shell and a few core tools, each binary with the
# shared libraries ldd finds), the agent binaries from bin/, and daemon
# program files that start Xvfb and openbox under the agent. The agent is
# PID 1 (its init reaps orphans). bin/deckhand-pkg then writes it as one
# layer with go-containerregistry.
#   scripts/image.sh VERSION OUT
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:-dev}
OUT=${2:-dist/image}
ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT

for p in xvfb x11-xkb-utils xkb-data openbox fonts-dejavu-core bash coreutils; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || { echo "image: needs the Debian package $p (scripts/setup.sh)"; exit 1; }
done

BINS=(/usr/bin/Xvfb /usr/bin/xkbcomp /usr/bin/openbox /usr/bin/bash /usr/bin/dash /usr/bin/ls /usr/bin/cat /usr/bin/sleep
  /usr/bin/env /usr/bin/test /usr/bin/ps /usr/bin/id /usr/bin/mkdir /usr/bin/rm)
copy() { # copy a path into the root, keeping symlinks and their targets
  local src=$1
  [[ -e "$src" || -L "$src" ]] || return 0
  mkdir -p "$ROOT$(dirname "$src")"
  cp -a --no-preserve=ownership "$src" "$ROOT$src" 2>/dev/null || true
  if [[ -L "$src" ]]; then copy "$(readlink -f "$src")"; fi
}
mkdir -p "$ROOT"/{usr/bin,usr/lib,usr/lib64,etc,tmp,root,var/lib/deckhand/daemon/programs,proc,sys,dev,run}
chmod 1777 "$ROOT/tmp"
ln -s usr/bin "$ROOT/bin"; ln -s usr/bin "$ROOT/sbin"; ln -s usr/lib "$ROOT/lib"; ln -s usr/lib64 "$ROOT/lib64"
for b in "${BINS[@]}"; do
  copy "$b"
  ldd "$b" 2>/dev/null | awk '/=>/ {print $3} /^\t\// {print $1}' | while read -r lib; do [[ -n "$lib" ]] && copy "$lib"; done
done
# openbox loads pango, fontconfig and image libraries through its own
# shared libraries; ldd above lists them. Data it reads at run time:
for d in /usr/share/X11/xkb /etc/X11/xkb /etc/xdg/openbox /usr/share/themes/Clearlooks /usr/share/themes/Mikachu \
  /etc/fonts /usr/share/fonts/truetype/dejavu /usr/share/fontconfig /usr/lib/x86_64-linux-gnu/gdk-pixbuf-2.0 /usr/share/X11/locale; do
  copy "$d"
done
ln -sf dash "$ROOT/usr/bin/sh"
BIN=${BIN:-bin}
PKG=${PKG:-bin/deckhand-pkg}
install -m 0755 "$BIN/deckhand" "$ROOT/usr/bin/deckhand"
[[ -x "$BIN/deckhand-display" ]] && { install -m 0755 "$BIN/deckhand-display" "$ROOT/usr/bin/deckhand-display"
  ldd "$BIN/deckhand-display" | awk '/=>/ {print $3} /^\t\// {print $1}' | while read -r lib; do [[ -n "$lib" ]] && copy "$lib"; done; }
cat > "$ROOT/etc/passwd" <<'P'
root:x:0:0:root:/root:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
P
cat > "$ROOT/etc/group" <<'G'
root:x:0:
nogroup:x:65534:
G
# The desktop, started and kept running by the agent's daemon service.
cat > "$ROOT/var/lib/deckhand/daemon/programs/xvfb.json" <<'J'
{"command": "/usr/bin/Xvfb", "args": [":99", "-screen", "0", "1280x800x24", "-nolisten", "tcp"], "restart": "always",
 "readiness": {"command": ["/usr/bin/test", "-S", "/tmp/.X11-unix/X99"], "timeout": 30}}
J
cat > "$ROOT/var/lib/deckhand/daemon/programs/openbox.json" <<'J'
{"command": "/usr/bin/openbox", "env": {"DISPLAY": ":99"}, "restart": "always", "depends_on": ["xvfb"]}
J
chmod -R go-rwx "$ROOT/var/lib/deckhand"
"$PKG" image --version "$VERSION" --rootfs "$ROOT" --out "$OUT"

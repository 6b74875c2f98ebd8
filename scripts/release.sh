#!/usr/bin/env bash
# Cross-builds the release binaries into OUT with the version stamped from
# git, and writes OUT/SHA256SUMS.
#   control plane  deckhand-control  static, CGO off, linux amd64 + arm64
#   agent          deckhand          static, CGO off, linux amd64 + arm64
#   display        deckhand-display  cgo (X11/XTest): amd64 natively; arm64
#                  only where Debian's cross toolchain and arm64 X libraries
#                  are installed (gcc-aarch64-linux-gnu, libx11-dev:arm64,
#                  libxtst-dev:arm64, ...); otherwise it is skipped, said so.
#   scripts/release.sh VERSION OUT
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
OUT=${2:-dist/release}
BUILT=${SOURCE_DATE_EPOCH:+$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)}
BUILT=${BUILT:-$(git log -1 --format=%cd --date=format:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)}
LDFLAGS="-s -w -X deckhand/platform.Version=$VERSION -X deckhand/platform.BuildTime=$BUILT"
GO=${GO:-go}
rm -rf "$OUT"
mkdir -p "$OUT"

for arch in amd64 arm64; do
  for cmd in deckhand-control:./control/cmd/deckhand-control deckhand:./agent/cmd/deckhand; do
    name=${cmd%%:*}
    echo "release: $name linux/$arch (static, CGO off)"
    CGO_ENABLED=0 GOOS=linux GOARCH=$arch $GO build -trimpath -ldflags "$LDFLAGS" -o "$OUT/${name}_linux_$arch" "${cmd#*:}"
  done
done

if [[ -d display/cmd/deckhand-display ]]; then
  echo "release: deckhand-display linux/amd64 (cgo)"
  CGO_ENABLED=1 GOOS=linux GOARCH=amd64 $GO build -trimpath -ldflags "$LDFLAGS" -o "$OUT/deckhand-display_linux_amd64" ./display/cmd/deckhand-display
  if command -v aarch64-linux-gnu-gcc >/dev/null && PKG_CONFIG_PATH=/usr/lib/aarch64-linux-gnu/pkgconfig pkg-config --exists x11 xtst 2>/dev/null; then
    echo "release: deckhand-display linux/arm64 (cgo, aarch64-linux-gnu-gcc)"
    CGO_ENABLED=1 GOOS=linux GOARCH=arm64 CC=aarch64-linux-gnu-gcc PKG_CONFIG_PATH=/usr/lib/aarch64-linux-gnu/pkgconfig \
      $GO build -trimpath -ldflags "$LDFLAGS" -o "$OUT/deckhand-display_linux_arm64" ./display/cmd/deckhand-display
  else
    echo "release: deckhand-display linux/arm64 skipped: needs gcc-aarch64-linux-gnu and the arm64 X11/XTest dev packages (dpkg --add-architecture arm64)"
  fi
fi

(cd "$OUT" && sha256sum -- * > SHA256SUMS)
echo "release: $VERSION in $OUT"
cat "$OUT/SHA256SUMS"

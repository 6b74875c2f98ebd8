#!/usr/bin/env bash
# Display service benchmark: full-screen 1920x1080 capture+encode (PNG, JPEG
# q80) through the driver and HTTP, side by side with kbinani/screenshot +
# the standard library encoders, ImageMagick import and scrot; the pointer
# move/location round trip; a 100-step input batch. Medians, one run.
#   scripts/bench/display.sh            (DISPLAY_BENCH_ROUNDS=25 by default)
set -euo pipefail
cd "$(dirname "$0")/../.."
for tool in Xvfb openbox xterm import scrot xdotool; do
	command -v "$tool" >/dev/null || { echo "display bench needs $tool (apt-get install xvfb openbox xterm imagemagick scrot xdotool)" >&2; exit 3; }
done
echo "# $(date -u +%FT%TZ) $(nproc) cores; go test -run '^\$' -bench DisplayReport -benchtime 1x ./display/x11/"
go test -count=1 -run '^$' -bench DisplayReport -benchtime 1x ./display/x11/ 2>&1 |
	grep -v -E '^(goos|goarch|pkg|cpu|PASS|ok|BenchmarkDisplayReport|XGB)' | grep -v 'bench_test.go' | sed -e 's/^    //'

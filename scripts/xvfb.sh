#!/usr/bin/env bash
# Starts (or stops) a virtual X desktop for the display service and its tests:
# Xvfb, the openbox window manager and a real X client (xterm).
#
#   scripts/xvfb.sh [start] [:N]      start if not running; prints DISPLAY=:N
#   scripts/xvfb.sh stop [:N]         stop what start started
#   scripts/xvfb.sh status [:N]       exit 0 when the display answers
#
# Idempotent: start on a display that already answers only makes sure openbox
# and one xterm run on it. Environment:
#   XVFB_SCREEN    WxHxD of the screen (default 1920x1080x24)
#   XVFB_MONITORS  optional space-separated WxH+X+Y list: splits the screen
#                  into RandR monitors (what Xinerama clients see as heads)
#   XVFB_XTERM     0 to skip the xterm
#   XVFB_STATE     state dir (default /tmp/deckhand-xvfb)
set -euo pipefail

cmd=start
case "${1:-}" in
start | stop | status) cmd=$1; shift ;;
esac
disp="${1:-:99}"
[[ "$disp" == :* ]] || disp=":$disp"
num="${disp#:}"
num="${num%%.*}"
state="${XVFB_STATE:-/tmp/deckhand-xvfb}/$num"
screen="${XVFB_SCREEN:-1920x1080x24}"

answers() { DISPLAY="$disp" xdpyinfo >/dev/null 2>&1 || DISPLAY="$disp" xdotool getdisplaygeometry >/dev/null 2>&1; }
alive() { [[ -f "$state/$1.pid" ]] && kill -0 "$(cat "$state/$1.pid")" 2>/dev/null; }

stop_one() {
	if alive "$1"; then
		kill "$(cat "$state/$1.pid")" 2>/dev/null || true
		for _ in $(seq 50); do alive "$1" || break; sleep 0.1; done
		alive "$1" && kill -9 "$(cat "$state/$1.pid")" 2>/dev/null || true
	fi
	rm -f "$state/$1.pid"
}

case "$cmd" in
status)
	answers
	exit $?
	;;
stop)
	stop_one xterm
	stop_one openbox
	stop_one xvfb
	rm -rf "$state"
	exit 0
	;;
esac

command -v Xvfb >/dev/null || { echo "xvfb.sh: Xvfb is not installed (apt-get install xvfb)" >&2; exit 3; }
mkdir -p "$state"

if ! answers; then
	if [[ -e "/tmp/.X${num}-lock" ]] && ! kill -0 "$(tr -d ' ' <"/tmp/.X${num}-lock" 2>/dev/null)" 2>/dev/null; then
		rm -f "/tmp/.X${num}-lock" "/tmp/.X11-unix/X${num}" # left by a killed server
	fi
	# -noreset: without it the server resets when its last client leaves, and
	# a client connecting in that moment (openbox, right after the readiness
	# probe) fails
	setsid Xvfb "$disp" -screen 0 "$screen" -nolisten tcp -noreset -ac +extension XTEST +extension RANDR \
		>"$state/xvfb.log" 2>&1 </dev/null &
	echo $! >"$state/xvfb.pid"
	for _ in $(seq 100); do answers && break; sleep 0.1; done
	answers || { echo "xvfb.sh: Xvfb did not come up on $disp; see $state/xvfb.log" >&2; exit 1; }
fi


if ! alive openbox && command -v openbox >/dev/null; then
	DISPLAY="$disp" setsid openbox --sm-disable >"$state/openbox.log" 2>&1 </dev/null &
	echo $! >"$state/openbox.pid"
	# wait until the window manager owns the screen (EWMH check window set)
	for _ in $(seq 50); do
		DISPLAY="$disp" xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q 'window id' && break
		sleep 0.1
	done
	alive openbox || { echo "xvfb.sh: openbox did not start: $(cat "$state/openbox.log")" >&2; exit 1; }
fi

if [[ -n "${XVFB_MONITORS:-}" ]]; then
	command -v xrandr >/dev/null || { echo "xvfb.sh: XVFB_MONITORS needs xrandr (apt-get install x11-xserver-utils)" >&2; exit 3; }
	# the first monitor takes over the output's automatic one ("screen"); it
	# is set last (setting it first crashes Xvfb 21)
	# the window manager's start can reset the monitor list: set, check, retry
	for _try in 1 2 3 4 5 6 7 8 9 10; do
		out=$(DISPLAY="$disp" xrandr --listmonitors | awk 'NR == 2 {print $NF}')
		mons=($XVFB_MONITORS)
		for ((i = ${#mons[@]} - 1; i >= 0; i--)); do
			m=${mons[$i]}
			# WxH+X+Y -> W/mmwxH/mmh+X+Y (about 96 dpi)
			w=${m%%x*}; rest=${m#*x}; h=${rest%%+*}; xy=${rest#*+}
			target=none
			((i == 0)) && target=$out
			DISPLAY="$disp" xrandr --setmonitor "deckhand-$i" "$w/$((w * 254 / 960))x$h/$((h * 254 / 960))+$xy" "$target" >/dev/null
		done
		sleep 0.2
		[[ "$(DISPLAY="$disp" xrandr --listmonitors | head -1)" == "Monitors: ${#mons[@]}" ]] && break
	done
	[[ "$(DISPLAY="$disp" xrandr --listmonitors | head -1)" == "Monitors: ${#mons[@]}" ]] ||
		{ echo "xvfb.sh: could not set the monitors $XVFB_MONITORS" >&2; exit 1; }
fi

if [[ "${XVFB_XTERM:-1}" != 0 ]] && ! alive xterm && command -v xterm >/dev/null; then
	DISPLAY="$disp" LC_ALL=C.UTF-8 setsid xterm -u8 -geometry 100x30+40+40 -title deckhand-xterm \
		>"$state/xterm.log" 2>&1 </dev/null &
	echo $! >"$state/xterm.pid"
	for _ in $(seq 50); do
		DISPLAY="$disp" xdotool search --name deckhand-xterm >/dev/null 2>&1 && break
		sleep 0.1
	done
fi

echo "DISPLAY=$disp"

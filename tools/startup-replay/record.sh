#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Records a real application start-up as a file-level start-up trace
# (configs/startup/traces/README.md), for the start-up suites' replays.
#
# usage: record.sh [--x11] NAME OUT.trace -- COMMAND [ARGS...]
#   e.g. record.sh --x11 xterm configs/startup/traces/xterm.trace -- /usr/bin/xterm -e /bin/true
#        record.sh --x11 lowriter configs/startup/traces/lowriter.trace -- /bin/bash "$PWD/tools/startup-replay/lowriter-up.sh"
#   (a script as COMMAND: name its interpreter, which the closure then holds)
#
# Needs root, strace, perf (linux-perf), python3, losetup, mkfs.ext4; with
# --x11, Xvfb (package xvfb): the command then runs against an Xvfb on
# display :99 started here (from the host's root, so the server's own file
# reads are not in the trace).
#
# 1. The command's file closure: every path a warm run under strace names
#    (and the targets of its symbolic links) is copied onto an ext4 image
#    of its own, loop-mounted (direct I/O, noatime), with /proc and /dev
#    bound in; the command runs chrooted there, so a cold run reads only
#    its own files and the trace names only them.
# 2. Timed runs: warm (after a warm-up), cold (after drop_caches), warm
#    traced and cold traced, the traced ones under
#      perf record -k CLOCK_REALTIME -e major-faults -c 1 -d -- \
#        strace -f -ttt -T -y -- chroot ROOT COMMAND
#    (strace: the system calls with paths; perf: each major fault's
#    address and the mappings, to tell its file and offset).
# 3. convert.py turns the cold traced run into the trace; think times are
#    its gaps scaled by warm / warm traced (the tracers' slowdown).
set -euo pipefail

x11=0
[ "${1:-}" = --x11 ] && { x11=1; shift; }
[ $# -ge 4 ] && [ "$3" = -- ] || { sed -n '6,8p' "$0" | sed 's/^# //'; exit 2; }
name=$1 out=$2
shift 3
here=$(dirname "$(readlink -f "$0")")
[ "$(id -u)" = 0 ] || { echo "record.sh: needs root (chroot, losetup, drop_caches)"; exit 1; }
for t in strace perf python3 losetup mkfs.ext4; do
	command -v "$t" > /dev/null || { echo "record.sh: needs $t"; exit 1; }
done

work=/var/tmp/startup-record-$name
root=$work/root
mkdir -p "$work"
loop="" xpid=""
cleanup() {
	for m in "$root/tmp/.X11-unix" "$root/dev" "$root/proc" "$root"; do
		mountpoint -q "$m" 2>/dev/null && umount -R "$m"
	done
	[ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
	[ -n "$xpid" ] && kill "$xpid" 2>/dev/null
	true
}
trap cleanup EXIT

if [ $x11 = 1 ]; then
	command -v Xvfb > /dev/null || { echo "record.sh: --x11 needs Xvfb (apt-get install xvfb)"; exit 1; }
	# -noreset: no server reset (refusing connections) when the last client goes.
	Xvfb :99 -nolisten tcp -noreset > "$work/xvfb.log" 2>&1 &
	xpid=$!
	export DISPLAY=:99
	for _ in $(seq 50); do [ -S /tmp/.X11-unix/X99 ] && break; sleep 0.1; done
fi

echo "== closure of: $*"
strace -f -qq -e trace=%file,%process -o "$work/closure.txt" "$@" > /dev/null 2>&1 || true
# The paths the run named, and the ELF interpreter (the kernel opens it).
{ grep -o '"/[^"]*"' "$work/closure.txt" | tr -d '"'; echo /lib64/ld-linux-x86-64.so.2; } |
	sort -u | grep -v -E '^/(proc|dev|sys|run|tmp)(/|$)' > "$work/paths.txt" || true
bytes=$(while read -r p; do if [ -f "$p" ]; then stat -L -c %s "$p"; fi; done < "$work/paths.txt" |
	awk '{ s += $1 } END { print s + 0 }')
size_mb=$(( bytes * 2 / 1048576 + 256 ))

echo "== image: ${size_mb} MiB ext4 for $(wc -l < "$work/paths.txt") paths ($((bytes / 1048576)) MiB)"
rm -f "$work/app.img"
truncate -s "${size_mb}M" "$work/app.img"
mkfs.ext4 -q -F "$work/app.img"
loop=$(losetup --direct-io=on -f --show "$work/app.img")
mkdir -p "$root"
mount -o noatime "$loop" "$root"
# Copies path $1 into the image as a link (in its real folder) if it is
# one, then each link it leads through, then the file it resolves to.
copy_chain() { # path
	local p=$1 d t i
	for i in $(seq 16); do
		d=$(readlink -f "$(dirname "$p")")
		cp -a --parents "$d/$(basename "$p")" "$root/" 2>/dev/null || true
		[ -L "$d/$(basename "$p")" ] || return 0
		t=$(readlink "$d/$(basename "$p")")
		case $t in /*) p=$t ;; *) p=$d/$t ;; esac
	done
}
# usrmerge: /bin, /lib, ... are links into /usr.
for l in /bin /sbin /lib /lib32 /lib64 /libx32; do [ -L "$l" ] && cp -a "$l" "$root/"; done
while read -r p; do
	[ -e "$p" ] || continue
	if [ -d "$p" ] && [ ! -L "$p" ]; then
		mkdir -p "$root$(readlink -f "$p")"
	else
		copy_chain "$p"
	fi
done < "$work/paths.txt"
mkdir -p "$root/proc" "$root/dev" "$root/tmp/.X11-unix"
chmod 1777 "$root/tmp"
mount --bind /proc "$root/proc"
mount --rbind /dev "$root/dev"
[ $x11 = 1 ] && mount --bind /tmp/.X11-unix "$root/tmp/.X11-unix"
sync

# One run of the command in the image; prints its wall time (s).
timed() { # [tracer args...] -- (the command follows)
	local t0 t1
	t0=$EPOCHREALTIME
	"$@" > /dev/null 2>&1 || true
	t1=$EPOCHREALTIME
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
	# Let the X server drop the last run's windows before the next looks for its own.
	sleep 1
}
cold() { sync; echo 3 > /proc/sys/vm/drop_caches; sleep 1; }
cmd=(chroot "$root" "$@")
trace=(perf record -q -k CLOCK_REALTIME -e major-faults -c 1 -d -o "$work/faults.data" --
	strace -f -ttt -T -y -qq -o "$work/strace.txt")

"${cmd[@]}" > "$work/run.log" 2>&1 ||
	{ echo "record.sh: the command fails in the image: $(tail -3 "$work/run.log")"; exit 1; }
sleep 1
warm=$(timed "${cmd[@]}")
cold; cold_s=$(timed "${cmd[@]}")
timed "${trace[@]}" "${cmd[@]}" > /dev/null
warm_traced=$(timed "${trace[@]}" "${cmd[@]}")
cold; cold_traced=$(timed "${trace[@]}" "${cmd[@]}")
echo "== warm ${warm}s, cold ${cold_s}s; traced: warm ${warm_traced}s, cold ${cold_traced}s"

perf script -i "$work/faults.data" -F comm,pid,tid,time,addr --show-mmap-events \
	> "$work/faults.txt" 2>/dev/null
scale=$(awk -v a="$warm" -v b="$warm_traced" 'BEGIN { s = b > 0 ? a / b : 1; printf "%.4f", (s > 1 ? 1 : s) }')
python3 "$here/convert.py" --strace "$work/strace.txt" --faults "$work/faults.txt" \
	--root "$root" --out "$out" --scale "$scale" \
	--header "app=$name" \
	--header "command=$*$([ $x11 = 1 ] && echo ' (DISPLAY: an Xvfb outside the image)')" \
	--header "kernel=$(uname -r)" \
	--header "fs=ext4 on a loop device (direct I/O) holding the command's file closure, mounted noatime, the command chrooted in it" \
	--header "host_disk=$(findmnt -n -o SOURCE --target "$work") ($(findmnt -n -o FSTYPE --target "$work"))" \
	--header "date=$(date -Iseconds)" \
	--header "cold_s=$cold_s (untraced, after drop_caches)" \
	--header "warm_s=$warm (untraced, after a warm-up)" \
	--header "cold_traced_s=$cold_traced" \
	--header "warm_traced_s=$warm_traced" \
	--header "method=strace -f -ttt -T -y and perf record -k CLOCK_REALTIME -e major-faults -d, cold; tools/startup-replay/record.sh"

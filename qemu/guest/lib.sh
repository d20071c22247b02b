# SPDX-License-Identifier: GPL-2.0
# Shared guest helpers, sourced by init, bench.sh and tests.sh.
# /run/out/job.env (written by xtask) says which modules to load and how to
# make the null_blk device.

say() { echo "IRONLIFT: $*"; }

# Kernel name of a /dev path: /dev/nvme0n1 -> nvme0n1.
devname() { basename "$1"; }

# Schedulers a device offers, one per line, without brackets.
schedulers_of() {
	tr -d '[]' < "/sys/block/$(devname "$1")/queue/scheduler" | tr ' ' '\n' | sed '/^$/d'
}

# The scheduler in use on a device.
current_sched() {
	sed -n 's/.*\[\(.*\)\].*/\1/p' "/sys/block/$(devname "$1")/queue/scheduler"
}

# Select a scheduler; fails unless it is then the one in use.
set_sched() {
	echo "$2" > "/sys/block/$(devname "$1")/queue/scheduler" 2>/dev/null || return 1
	[ "$(current_sched "$1")" = "$2" ]
}

# Creates null_blk device nullb<index> through configfs. Settings come from
# <prefix>_* variables (NULLB_* for nullb0, NULLB1_* for nullb1, ...).
make_nullb() {
	local idx=${1:-0} pre=${2:-NULLB}
	local d=/sys/kernel/config/nullb/nullb$idx
	local size="${pre}_SIZE_MB" mem="${pre}_MEMORY_BACKED" irq="${pre}_IRQMODE"
	local cns="${pre}_COMPLETION_NSEC" qd="${pre}_HW_QUEUE_DEPTH" sq="${pre}_SUBMIT_QUEUES"
	[ -d /sys/kernel/config/nullb ] || { say "no null_blk configfs"; return 1; }
	mkdir -p "$d" || return 1
	echo "${!size:-1024}" > "$d/size"
	echo "${!mem:-0}" > "$d/memory_backed"
	echo "${!irq:-1}" > "$d/irqmode"
	echo "${!cns:-10000}" > "$d/completion_nsec"
	echo "${!qd:-64}" > "$d/hw_queue_depth"
	echo "${!sq:-1}" > "$d/submit_queues"
	echo 512 > "$d/blocksize"
	echo 2 > "$d/queue_mode"
	echo 1 > "$d/power" || return 1
	local i
	for i in $(seq 50); do [ -b "/dev/nullb$idx" ] && return 0; sleep 0.1; done
	say "nullb$idx did not appear"
	return 1
}

# nullb0, then each extra device NULLB_EXTRA names by index (job.env gives
# their NULLB<i>_* settings; configs/devices/guest.toml describes them).
make_nullbs() {
	make_nullb 0 NULLB || return 1
	local i
	for i in $NULLB_EXTRA; do
		make_nullb "$i" "NULLB$i" || return 1
		say "nullb$i: $(nullb_describe "$i")"
	done
}

# One line describing a null_blk device as configfs holds it.
nullb_describe() {
	local d=/sys/kernel/config/nullb/nullb$1 a out=""
	for a in size memory_backed irqmode completion_nsec hw_queue_depth; do
		out="$out $a=$(cat "$d/$a")"
	done
	echo "${out# }"
}

setup_guest() {
	[ -f /run/out/job.env ] && . /run/out/job.env
	# The report says which clock the guest measured with.
	cat /sys/devices/system/clocksource/clocksource0/current_clocksource \
		>/run/out/clocksource 2>/dev/null
	local m
	: >/run/out/modules.txt
	for m in $MODULES; do
		if insmod "$m"; then
			say "loaded $(basename "$m")"
			# Where its code lies, for --count-insns to name its functions.
			local name
			name=$(basename "$m" .ko)
			echo "$name $(cat "/sys/module/$name/sections/.text" 2>/dev/null)" \
				>>/run/out/modules.txt
		else
			say "insmod $m failed"
			return 1
		fi
	done
	make_nullbs || return 1
	local dev
	for dev in $DEVICES; do
		local i
		for i in $(seq 50); do [ -b "$dev" ] && break; sleep 0.1; done
		[ -b "$dev" ] || { say "device $dev missing"; return 1; }
	done
	say "devices: $DEVICES"
	say "schedulers on $(devname "${DEVICES%% *}"): $(schedulers_of "${DEVICES%% *}" | tr '\n' ' ')"
	return 0
}

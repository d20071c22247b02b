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

# Creates null_blk device nullb0 through configfs from NULLB_* settings.
make_nullb() {
	local d=/sys/kernel/config/nullb/nullb0
	[ -d /sys/kernel/config/nullb ] || { say "no null_blk configfs"; return 1; }
	mkdir -p "$d" || return 1
	echo "${NULLB_SIZE_MB:-1024}" > "$d/size"
	echo "${NULLB_MEMORY_BACKED:-0}" > "$d/memory_backed"
	echo "${NULLB_IRQMODE:-1}" > "$d/irqmode"
	echo "${NULLB_COMPLETION_NSEC:-10000}" > "$d/completion_nsec"
	echo "${NULLB_HW_QUEUE_DEPTH:-64}" > "$d/hw_queue_depth"
	echo "${NULLB_SUBMIT_QUEUES:-1}" > "$d/submit_queues"
	echo 512 > "$d/blocksize"
	echo 2 > "$d/queue_mode"
	echo 1 > "$d/power" || return 1
	local i
	for i in $(seq 50); do [ -b /dev/nullb0 ] && return 0; sleep 0.1; done
	say "nullb0 did not appear"
	return 1
}

setup_guest() {
	[ -f /run/out/job.env ] && . /run/out/job.env
	local m
	for m in $MODULES; do
		if insmod "$m"; then
			say "loaded $(basename "$m")"
		else
			say "insmod $m failed"
			return 1
		fi
	done
	make_nullb || return 1
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

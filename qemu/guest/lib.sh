# SPDX-License-Identifier: GPL-2.0
# Shared guest helpers, sourced by init, the suites' runners and tests.sh.
# $OUT/job.env (written by xtask) says which modules to load and which
# null_blk devices to make, and how.
#
# OUT is the job's folder: in the guest, /run/out, where init mounts the
# host's results folder over 9p. `cargo xtask host-bench` runs a suite's
# runner (fio.sh) on the host itself, against the host's kernel and disk,
# with IRONLIFT_OUT naming the results folder; there only run_plan and the
# scheduler helpers are used: setup_guest (modules, null_blk devices,
# init's host_path) and the emulated disks' links are the guest's alone.
OUT=${IRONLIFT_OUT:-/run/out}

say() { echo "IRONLIFT: $*"; }

# Kernel name of a /dev path into REPLY: /dev/nvme0n1 -> nvme0n1, and an
# emulated disk's link /dev/ironlift/h7200 -> the sdX or vdX it points to.
# Only a link costs an exec: on the debug kernel under TCG an exec takes
# a good part of a second, and the tests select schedulers thousands of
# times.
devname_r() {
	if [ -L "$1" ]; then
		REPLY=$(readlink -f "$1")
		REPLY=${REPLY##*/}
	else
		REPLY=${1##*/}
	fi
}
devname() { devname_r "$1"; echo "$REPLY"; }

# Sleeps $1 seconds without an exec: a read that times out on a pipe
# nobody writes to (opened read-write, so it never sees end of file).
nap() {
	[ -n "${NAP_FD:-}" ] || exec {NAP_FD}<> <(:)
	read -rt "$1" -u "$NAP_FD"
	return 0
}

# Links /dev/ironlift/<id> to every disk whose ATA model or virtio serial
# is ironlift-<id>: the emulated disks of configs/devices/guest.toml, whose
# sdX names depend on the order the guest probes its AHCI controllers in.
link_tagged_disks() {
	local b tag
	mkdir -p /dev/ironlift
	for b in /sys/block/*; do
		tag=$(cat "$b/device/model" "$b/serial" 2>/dev/null | grep -o 'ironlift-[A-Za-z0-9-]*' | head -1)
		[ -n "$tag" ] && ln -sfn "/dev/$(basename "$b")" "/dev/ironlift/${tag#ironlift-}"
	done
	return 0
}

# Waits up to 5 s for each block device given (linking the emulated ones).
wait_devices() {
	local dev i
	for dev in "$@"; do
		for i in $(seq 50); do
			case "$dev" in /dev/ironlift/*) link_tagged_disks ;; esac
			[ -b "$dev" ] && break
			sleep 0.1
		done
		[ -b "$dev" ] || { say "device $dev missing"; return 1; }
	done
}

# Schedulers a device offers, one per line, without brackets.
schedulers_of() {
	local -a l
	local s
	devname_r "$1"
	read -ra l < "/sys/block/$REPLY/queue/scheduler" || return 1
	for s in "${l[@]}"; do
		s=${s#\[}
		echo "${s%\]}"
	done
}

# The scheduler in use on a device into REPLY (empty when none is marked).
current_sched_r() {
	local l
	devname_r "$1"
	read -r l < "/sys/block/$REPLY/queue/scheduler" || l=""
	case $l in
	*\[*\]*) l=${l#*\[}; REPLY=${l%%\]*} ;;
	*) REPLY="" ;;
	esac
}

# The scheduler in use on a device.
current_sched() { current_sched_r "$1"; echo "$REPLY"; }

# Select a scheduler; fails unless it is then the one in use.
set_sched() {
	devname_r "$1"
	echo "$2" > "/sys/block/$REPLY/queue/scheduler" 2>/dev/null || return 1
	current_sched_r "$1"
	[ "$REPLY" = "$2" ]
}

# Writes the tunables of a scheduler entry, "elevator:name=value[:name=value]"
# (xtask/src/suite/sched.rs), into the elevator's iosched folder, in order;
# a plain name has none. On a write that fails, prints the elevator, the
# tunable and the error (as the write reported it) and fails.
write_tunables() { # iosched-folder entry
	local dir=$1 elv=${2%%:*} tun name val err
	[ "$2" = "$elv" ] && return 0
	local IFS=:
	for tun in ${2#*:}; do
		name=${tun%%=*} val=${tun#*=}
		if [ ! -e "$dir/$name" ]; then
			echo "$elv has no tunable $name (it has: $(ls "$dir" 2>/dev/null | tr '\n' ' '))"
			return 1
		fi
		if ! err=$( { printf '%s\n' "$val" > "$dir/$name"; } 2>&1 ); then
			echo "$elv: setting tunable $name=$val failed: ${err##*: }"
			return 1
		fi
	done
}

# Selects a scheduler entry afresh: none first, then the elevator, so that
# its tunables start from their defaults whatever ran before, then its
# tunables (write_tunables). Prints why and fails when any step does.
select_sched() { # device entry
	local dev=$1 elv=${2%%:*}
	if ! set_sched "$dev" none; then
		echo "cannot select none on $(devname "$dev")"
		return 1
	fi
	if ! set_sched "$dev" "$elv"; then
		echo "scheduler $elv not offered by $(devname "$dev") (offers: $(schedulers_of "$dev" | tr '\n' ' '))"
		return 1
	fi
	write_tunables "/sys/block/$(devname "$dev")/queue/iosched" "$2"
}

# Creates null_blk device nullb<index> through configfs, as the
# NULLB<index>_* settings in job.env say (configs/devices/guest.toml).
make_nullb() {
	local idx=$1 a v
	local d=/sys/kernel/config/nullb/nullb$idx
	[ -d /sys/kernel/config/nullb ] || { say "no null_blk configfs"; return 1; }
	for a in SIZE_MB MEMORY_BACKED IRQMODE COMPLETION_NSEC HW_QUEUE_DEPTH; do
		v="NULLB${idx}_$a"
		[ -n "${!v:-}" ] || { say "job.env has no $v"; return 1; }
	done
	mkdir -p "$d" || return 1
	v="NULLB${idx}_SIZE_MB"; echo "${!v}" > "$d/size"
	v="NULLB${idx}_MEMORY_BACKED"; echo "${!v}" > "$d/memory_backed"
	v="NULLB${idx}_IRQMODE"; echo "${!v}" > "$d/irqmode"
	v="NULLB${idx}_COMPLETION_NSEC"; echo "${!v}" > "$d/completion_nsec"
	v="NULLB${idx}_HW_QUEUE_DEPTH"; echo "${!v}" > "$d/hw_queue_depth"
	echo 1 > "$d/submit_queues"
	echo 512 > "$d/blocksize"
	echo 2 > "$d/queue_mode"
	echo 1 > "$d/power" || return 1
	local i
	for i in $(seq 50); do [ -b "/dev/nullb$idx" ] && return 0; sleep 0.1; done
	say "nullb$idx did not appear"
	return 1
}

# Each null_blk device NULLB_DEVICES names by index.
make_nullbs() {
	local i
	for i in $NULLB_DEVICES; do
		make_nullb "$i" || return 1
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
	[ -f "$OUT/job.env" ] && . "$OUT/job.env"
	# The report says which clock the guest measured with.
	cat /sys/devices/system/clocksource/clocksource0/current_clocksource \
		>"$OUT/clocksource" 2>/dev/null
	local m
	# The modules may lie under the host's /tmp or /run (init's host_path).
	for m in $MODULES ${SELFTEST_MODULE:-}; do
		host_path "$(dirname "$m")" || return 1
	done
	# The blktests tree xtask built and the kernel's installed modules,
	# in the cache like ours.
	for m in ${BLKTESTS_DIR:-} ${KERNEL_MODULES:-}; do
		host_path "$m" || return 1
	done
	: >"$OUT/modules.txt"
	for m in $MODULES; do
		if insmod "$m"; then
			say "loaded $(basename "$m")"
			# Where its code lies, for --count-insns to name its functions.
			local name
			name=$(basename "$m" .ko)
			echo "$name $(cat "/sys/module/$name/sections/.text" 2>/dev/null)" \
				>>"$OUT/modules.txt"
		else
			say "insmod $m failed"
			return 1
		fi
	done
	make_nullbs || return 1
	# shellcheck disable=SC2086
	wait_devices $DEVICES ${MODEL_DISKS:-} || return 1
	say "devices: $DEVICES"
	say "schedulers on $(devname "${DEVICES%% *}"): $(schedulers_of "${DEVICES%% *}" | tr '\n' ' ')"
	return 0
}

# Runs a suite's plan, $OUT/plan.tsv (written by xtask), one run per
# line in its (interleaved) order. Each line:
#   id <TAB> device path <TAB> scheduler <TAB> case <TAB> case arguments
# For each run: "$prepare device" first if given, once per device (a device
# it fails on fails its runs); the scheduler entry selected afresh with its
# tunables (select_sched; a failure fails the run with its reason); then
# "$run_one id device scheduler case arguments", which writes
# $OUT/runs/<id>.json (and what else the suite keeps), or <id>.err
# saying what went wrong.
run_plan() { # label run-function [prepare-function]
	local label=$1 run_one=$2 prepare=${3:-} plan="$OUT/plan.tsv"
	local total n=0 id dev sched case args why
	local -A prepared=()
	mkdir -p "$OUT/runs"
	total=$(grep -c . "$plan")
	while IFS=$'\t' read -r id dev sched case args; do
		[ -n "$id" ] || continue
		n=$((n + 1))
		if [ -n "$prepare" ]; then
			if [ -z "${prepared[$dev]:-}" ]; then
				if "$prepare" "$dev"; then
					prepared[$dev]=ok
				else
					say "preparing $dev failed; its runs fail"
					prepared[$dev]=failed
				fi
			fi
			if [ "${prepared[$dev]}" != ok ]; then
				echo "preparing $(devname "$dev") for the suite failed (see the console)" > "$OUT/runs/$id.err"
				continue
			fi
		fi
		say "run $n/$total: $(devname "$dev") $sched $case"
		if ! why=$(select_sched "$dev" "$sched"); then
			say "run $n: $why"
			echo "$why" > "$OUT/runs/$id.err"
			continue
		fi
		"$run_one" "$id" "$dev" "$sched" "$case" "$args"
	done < "$plan"
	say "$label plan finished: $n runs"
}

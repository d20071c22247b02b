#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The in-guest test suite. Prints KTAP (version 1) to /run/out/ktap.txt and
# the console; xtask parses it. Each top-level test is a subtest with one
# case per device (or device x scheduler).
#
# job.env gives DEVICES (block device paths), SCHEDULERS (every scheduler
# that must be offered), TESTS (which top-level tests to run, default all),
# SLOW_DEV (the slow, shallow null_blk device) and FAIRNESS_SCHEDULERS (the
# schedulers the fairness test judges: bfq, and rust-bfq once it is built).
. "$(dirname "$(readlink -f "$0")")/lib.sh"
[ -f /run/out/job.env ] && . /run/out/job.env

KTAP=/run/out/ktap.txt
: > "$KTAP"
out() { echo "$*" | tee -a "$KTAP"; }
fio_q() { fio --minimal --output=/tmp/fio.out "$@" < /dev/null > /tmp/fio.log 2>&1; }

ALL_TESTS="policy_selftest select_every_scheduler write_verify switch_under_io fairness kmemleak"
TESTS=${TESTS:-$ALL_TESTS}

# --- policy_selftest: the policy crate's checks, run inside the kernel by
# ironlift_selftest.ko, whose KTAP (in the kernel log) becomes our subtests.
# The module refuses to load when a check fails.
policy_selftest() {
	if [ -z "$SELFTEST_MODULE" ]; then
		out "    1..0 # SKIP no ironlift_selftest module"
		return
	fi
	local mark="ironlift-selftest-$RANDOM"
	echo "$mark" > /dev/kmsg
	local rc=0
	insmod "$SELFTEST_MODULE" 2>/tmp/insmod.err || rc=$?
	# The module's KTAP lines become our subtests; its other messages
	# become diagnostics.
	dmesg | sed -n "/$mark/,\$p" | sed -n 's/.*ironlift_selftest: //p' |
		while IFS= read -r l; do
			case "$l" in
			"KTAP version"*|1..*|"ok "*|"not ok "*|"#"*) out "    $l" ;;
			*) out "    # $l" ;;
			esac
		done
	if [ $rc = 0 ]; then
		rmmod ironlift_selftest || out "    # rmmod ironlift_selftest failed"
	else
		out "    # insmod failed ($rc): $(cat /tmp/insmod.err)"
		out "    not ok 999 insmod"
	fi
}

# --- select_every_scheduler: each scheduler can be selected on each device.
select_every_scheduler() {
	local n=0 dev s fails
	out "    1..$(echo $DEVICES | wc -w)"
	for dev in $DEVICES; do
		n=$((n + 1)); fails=""
		for s in $SCHEDULERS; do
			set_sched "$dev" "$s" || fails="$fails $s"
		done
		if [ -z "$fails" ]; then
			out "    ok $n $(devname "$dev")"
		else
			out "    # $(devname "$dev") offers: $(schedulers_of "$dev" | tr '\n' ' ')"
			out "    not ok $n $(devname "$dev") # could not select:$fails"
		fi
	done
}

# --- write_verify: fio writes then reads back with crc32c, per scheduler.
write_verify() {
	local n=0 dev s
	out "    1..$(( $(echo $DEVICES | wc -w) * $(echo $SCHEDULERS | wc -w) ))"
	for dev in $DEVICES; do
		for s in $SCHEDULERS; do
			n=$((n + 1))
			if ! set_sched "$dev" "$s"; then
				out "    not ok $n $(devname "$dev")_$s # cannot select $s"
				continue
			fi
			if fio_q --name=verify --filename="$dev" --direct=1 --ioengine=libaio \
				--rw=randwrite --bs=4k --iodepth=16 --size=8M --offset=$((n * 8))M \
				--verify=crc32c --do_verify=1 --verify_fatal=1 --randrepeat=0; then
				out "    ok $n $(devname "$dev")_$s"
			else
				out "    # $(tail -2 /tmp/fio.log | tr '\n' ' ')"
				out "    not ok $n $(devname "$dev")_$s # fio verify failed"
			fi
		done
	done
}

# --- switch_under_io: switch schedulers every 0.2 s for 10 s while fio
# runs mixed I/O (blktests block/005); fio must see no error.
switch_under_io() {
	local n=0 dev
	out "    1..$(echo $DEVICES | wc -w)"
	for dev in $DEVICES; do
		n=$((n + 1))
		local before after switches=0 failed=0
		before=$(dmesg | grep -ci 'i/o error')
		fio_q --name=switch --filename="$dev" --direct=1 --ioengine=libaio \
			--rw=randrw --bs=4k --iodepth=16 --numjobs=2 --size=64M \
			--time_based --runtime="${SWITCH_SECS:-10}" &
		local fio_pid=$!
		while kill -0 $fio_pid 2>/dev/null; do
			for s in $SCHEDULERS; do
				kill -0 $fio_pid 2>/dev/null || break
				set_sched "$dev" "$s" && switches=$((switches + 1))
				sleep 0.2
			done
		done
		wait $fio_pid || failed=1
		after=$(dmesg | grep -ci 'i/o error')
		if [ $failed = 0 ] && [ "$after" = "$before" ] && [ $switches -gt 0 ]; then
			out "    # $(devname "$dev"): $switches switches"
			out "    ok $n $(devname "$dev")"
		else
			out "    # $(devname "$dev"): fio failed=$failed, $switches switches, new I/O errors: $((after - before)); $(tail -2 /tmp/fio.log | tr '\n' ' ')"
			out "    not ok $n $(devname "$dev")"
		fi
	done
}

# --- fairness: two sequential readers (dd, direct I/O, 16 KiB) on the slow
# device, started together, one under `ionice -c2 -n4` and one under
# `ionice -c2 -n0`. BFQ maps a best-effort level to the weight
# (IOPRIO_NR_LEVELS - level) * BFQ_WEIGHT_CONVERSION_COEFF (bfq_ioprio_to_weight
# in block/bfq-wf2q.c): 40 and 80, so the level-0 reader is owed twice the
# bytes. Bytes are read from dd (SIGUSR1) at the end of a warm-up and
# FAIR_SECS later; ok when level-0 bytes / level-4 bytes is within 15 % of 2.
# FAIRNESS_CONTROL schedulers (no weights) are measured the same way and
# only reported, to show what the test tells apart.
FAIR_SECS=${FAIR_SECS:-20}
FAIR_WARMUP=${FAIR_WARMUP:-3}
FAIRNESS_SCHEDULERS=${FAIRNESS_SCHEDULERS:-bfq}
FAIRNESS_CONTROL=${FAIRNESS_CONTROL-mq-deadline}

# Bytes a running dd has copied: SIGUSR1 makes it print a "... copied" line.
dd_bytes() { # pid stderr-file
	local before after i
	before=$(grep -c ' copied' "$2")
	kill -USR1 "$1" 2>/dev/null || return 1
	for i in $(seq 200); do
		after=$(grep -c ' copied' "$2")
		[ "$after" -gt "$before" ] && break
		sleep 0.05
	done
	[ "$after" -gt "$before" ] || return 1
	grep ' copied' "$2" | tail -1 | cut -d' ' -f1
}

# Sets FAIR_HI and FAIR_LO (bytes of the level-0 and level-4 readers over
# FAIR_SECS), or FAIR_ERR.
fair_measure() { # scheduler
	local dev=$SLOW_DEV p_lo p_hi lo0 hi0 lo1 hi1
	FAIR_HI=""; FAIR_LO=""; FAIR_ERR=""
	if ! set_sched "$dev" "$1"; then
		FAIR_ERR="cannot select $1 (offered: $(schedulers_of "$dev" | tr '\n' ' '))"
		return 1
	fi
	# Half a device apart: 20 s at 16 KiB per ms stays well inside each half.
	local half=$(( $(blockdev --getsize64 "$dev") / 2 / 16384 ))
	ionice -c2 -n4 dd if="$dev" of=/dev/null bs=16k iflag=direct count=$half \
		2> /tmp/fair.lo &
	p_lo=$!
	ionice -c2 -n0 dd if="$dev" of=/dev/null bs=16k iflag=direct count=$half \
		skip=$half 2> /tmp/fair.hi &
	p_hi=$!
	sleep "$FAIR_WARMUP"
	if lo0=$(dd_bytes $p_lo /tmp/fair.lo) && hi0=$(dd_bytes $p_hi /tmp/fair.hi); then
		sleep "$FAIR_SECS"
		if lo1=$(dd_bytes $p_lo /tmp/fair.lo) && hi1=$(dd_bytes $p_hi /tmp/fair.hi); then
			FAIR_LO=$((lo1 - lo0)); FAIR_HI=$((hi1 - hi0))
		fi
	fi
	kill $p_lo $p_hi 2>/dev/null
	wait $p_lo $p_hi 2>/dev/null
	if [ -z "$FAIR_LO" ]; then
		FAIR_ERR="a reader stopped early: $(tail -1 /tmp/fair.lo) / $(tail -1 /tmp/fair.hi)"
		return 1
	fi
	if [ "$FAIR_LO" -le 0 ]; then
		FAIR_ERR="the level-4 reader read nothing in ${FAIR_SECS}s (level 0: $FAIR_HI bytes)"
		return 1
	fi
}

fair_line() { # scheduler
	awk -v s="$1" -v h="$FAIR_HI" -v l="$FAIR_LO" -v t="$FAIR_SECS" 'BEGIN {
		printf "%s: level 0 (weight 80) %.1f MB, level 4 (weight 40) %.1f MB in %d s (%.2f MB/s together): ratio %.3f (want 2, +-15 %%: 1.70..2.30)",
			s, h / 1e6, l / 1e6, t, (h + l) / 1e6 / t, h / l }'
}

fairness() {
	local n=0 s
	if [ -z "$SLOW_DEV" ] || [ ! -b "$SLOW_DEV" ]; then
		out "    1..1"
		out "    not ok 1 slow_device # no slow device (SLOW_DEV='$SLOW_DEV')"
		return
	fi
	out "    # $(devname "$SLOW_DEV"): $(nullb_describe "${SLOW_DEV#/dev/nullb}" 2>/dev/null)"
	out "    1..$(echo $FAIRNESS_SCHEDULERS | wc -w)"
	for s in $FAIRNESS_CONTROL; do
		if fair_measure "$s"; then
			out "    # control, not judged: $(fair_line "$s")"
		else
			out "    # control $s: $FAIR_ERR"
		fi
	done
	for s in $FAIRNESS_SCHEDULERS; do
		n=$((n + 1))
		if ! fair_measure "$s"; then
			out "    not ok $n $s # $FAIR_ERR"
			continue
		fi
		out "    # $(fair_line "$s")"
		if awk -v h="$FAIR_HI" -v l="$FAIR_LO" 'BEGIN { r = h / l; exit !(r >= 1.7 && r <= 2.3) }'; then
			out "    ok $n $s"
		else
			out "    not ok $n $s # ratio outside 1.70..2.30"
		fi
	done
}

# --- kmemleak: on a kernel with kmemleak, nothing the tests did leaked.
# Boot-time reports are cleared before the first test; a leak must survive
# two scans (kmemleak reports only objects older than 5 s).
KMEMLEAK=/sys/kernel/debug/kmemleak
[ -e $KMEMLEAK ] && echo clear > $KMEMLEAK
kmemleak() {
	if [ ! -e $KMEMLEAK ]; then
		echo "kernel without kmemleak" > /tmp/skip
		out "    1..0"
		return
	fi
	out "    1..1"
	echo scan > $KMEMLEAK; sleep 6; echo scan > $KMEMLEAK
	local n
	n=$(grep -c "unreferenced object" $KMEMLEAK)
	if [ "$n" = 0 ]; then
		out "    ok 1 no_leaks"
	else
		head -20 $KMEMLEAK | while IFS= read -r l; do out "    # $l"; done
		out "    not ok 1 no_leaks # $n unreferenced objects"
	fi
}

out "KTAP version 1"
out "1..$(echo $TESTS | wc -w)"
i=0
for t in $TESTS; do
	i=$((i + 1))
	say "test $i: $t"
	start=$(wc -l < "$KTAP")
	rm -f /tmp/skip
	out "    KTAP version 1"
	out "    # Subtest: $t"
	"$t"
	if tail -n +$((start + 1)) "$KTAP" | grep -q "^    not ok"; then
		out "not ok $i $t"
	elif [ -s /tmp/skip ]; then
		out "ok $i $t # SKIP $(cat /tmp/skip)"
	else
		out "ok $i $t"
	fi
done

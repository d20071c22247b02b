#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The in-guest test suite. Prints KTAP (version 1) to /run/out/ktap.txt and
# the console; xtask parses it. Each top-level test is a subtest with one
# case per device (or device x scheduler).
#
# job.env gives DEVICES (block device paths), SCHEDULERS (every scheduler
# that must be offered) and TESTS (which top-level tests to run, default all).
. "$(dirname "$(readlink -f "$0")")/lib.sh"
[ -f /run/out/job.env ] && . /run/out/job.env

KTAP=/run/out/ktap.txt
: > "$KTAP"
out() { echo "$*" | tee -a "$KTAP"; }
fio_q() { fio --minimal --output=/tmp/fio.out "$@" < /dev/null > /tmp/fio.log 2>&1; }

ALL_TESTS="policy_selftest select_every_scheduler write_verify switch_under_io kmemleak"
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

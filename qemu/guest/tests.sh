#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The in-guest test suite. Prints KTAP (version 1) to /run/out/ktap.txt and
# the console; xtask parses it. Each top-level test is a subtest with one
# case per device (or device x scheduler).
#
# job.env gives DEVICES (block device paths), SCHEDULERS (every scheduler
# that must be offered), TESTS (which top-level tests to run, default all),
# SLOW_DEV (the slow, shallow null_blk device), STARVE_DEV (read_starvation's
# device) and FAIRNESS_SCHEDULERS (the schedulers the fairness test judges:
# rust-bfq once it is built; C bfq is measured beside it as the reference)
# and NARROW_SCHEDULERS (tested on the first device only: scheds_on).
# The emulated-disk tests (EMULATED_TESTS in tests_emulated.sh, not in the
# default list) take
# EMULATED_DEVS (one disk of each single-disk emulated device) and
# RAID_DEVS (the four hdd-raptor disks).
# The devices are configs/devices/guest.toml's; setup_guest (lib.sh) made
# the null_blk ones.
. "$(dirname "$(readlink -f "$0")")/lib.sh"
[ -f /run/out/job.env ] && . /run/out/job.env

KTAP=/run/out/ktap.txt
: > "$KTAP"
out() { echo "$*" | tee -a "$KTAP"; }
fio_q() { fio --minimal --output=/tmp/fio.out "$@" < /dev/null > /tmp/fio.log 2>&1; }
# The emulated disks' tests (EMULATED_TESTS), in a file of their own.
. "$(dirname "$(readlink -f "$0")")/tests_emulated.sh"
# The old schedulers' tunables test (historical_tunables), in a file of its own.
. "$(dirname "$(readlink -f "$0")")/tests_historical.sh"
# The fault tests (FAULT_TESTS), in a file of their own.
. "$(dirname "$(readlink -f "$0")")/tests_faults.sh"

ALL_TESTS="policy_selftest select_every_scheduler write_verify switch_under_io rmmod_in_use tunables_reject_bad_input historical_tunables nr_requests_under_io read_starvation fairness bfq_tunables short_lived_procs kmemleak"
TESTS=${TESTS:-$ALL_TESTS}

# --- policy_selftest: the policy crate's checks, run inside the kernel by
# ironlift_selftest.ko, whose KTAP (in the kernel log) becomes our subtests.
# The module refuses to load when a check fails.
policy_selftest() {
	if [ -z "$SELFTEST_MODULE" ] || [ ! -f "$SELFTEST_MODULE" ]; then
		out "    1..1"
		out "    not ok 1 module # no ironlift_selftest module (SELFTEST_MODULE='$SELFTEST_MODULE'): the modules build did not make it"
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

# The schedulers a per-device test runs on device $1: every one on the
# first device; on the others, all but NARROW_SCHEDULERS; with OURS_ONLY,
# only the Rust elevators (job.env: how the debug kernel's run cuts the
# matrix).
scheds_on() {
	local s
	for s in $SCHEDULERS; do
		if [ "${OURS_ONLY:-0}" = 1 ]; then
			case $s in rust-*) ;; *) continue ;; esac
		fi
		if [ "$1" != "${DEVICES%% *}" ]; then
			case " ${NARROW_SCHEDULERS:-} " in *" $s "*) continue ;; esac
		fi
		echo "$s"
	done
}

# Cases of a test over every device and its schedulers (scheds_on).
device_sched_cases() {
	local dev n=0
	for dev in $DEVICES; do n=$((n + $(scheds_on "$dev" | wc -l))); done
	echo $n
}

# --- select_every_scheduler: each scheduler can be selected on each device.
select_every_scheduler() {
	local n=0 dev s fails
	out "    1..$(echo $DEVICES | wc -w)"
	for dev in $DEVICES; do
		n=$((n + 1)); fails=""
		for s in $(scheds_on "$dev"); do
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
	out "    1..$(device_sched_cases)"
	for dev in $DEVICES; do
		for s in $(scheds_on "$dev"); do
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
			for s in $(scheds_on "$dev"); do
				kill -0 $fio_pid 2>/dev/null || break
				set_sched "$dev" "$s" && switches=$((switches + 1))
				nap 0.2
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

# --- Tests of the rust-deadline elevator module. They use the first device
# (null_blk) unless said otherwise, and skip when the module is not built.
RD=rust-deadline

rd_module() {
	local m
	for m in $MODULES; do
		case "$m" in */rust_deadline.ko) echo "$m"; return 0 ;; esac
	done
	return 1
}

rd_available() {
	case " $SCHEDULERS " in *" $RD "*) rd_module > /dev/null ;; *) return 1 ;; esac
}

# Short write-then-verify on $1 at offset $2 MiB: the queue works.
quick_verify() {
	fio_q --name=quick --filename="$1" --direct=1 --ioengine=libaio \
		--rw=randwrite --bs=4k --iodepth=8 --size=4M --offset="$2"M \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --randrepeat=0
}

# --- rmmod_in_use: the module cannot be removed while a queue uses
# rust-deadline and the queue keeps working; once every queue switched away
# it can, and loading it again works.
rmmod_in_use() {
	if ! rd_available; then
		echo "rust_deadline not built" > /tmp/skip
		out "    1..0"
		return
	fi
	local dev=${DEVICES%% *} m d ok
	m=$(rd_module)
	out "    1..5"
	if set_sched "$dev" "$RD" && ! rmmod rust_deadline 2>/tmp/rmmod.err; then
		out "    # refused: $(tr '\n' ' ' < /tmp/rmmod.err)"
		out "    ok 1 rmmod_refused_while_in_use"
	else
		out "    not ok 1 rmmod_refused_while_in_use"
		insmod "$m" 2>/dev/null
	fi
	if [ "$(current_sched "$dev")" = "$RD" ] && quick_verify "$dev" 0; then
		out "    ok 2 queue_works_after_refused_rmmod"
	else
		out "    not ok 2 queue_works_after_refused_rmmod # scheduler $(current_sched "$dev")"
	fi
	ok=1
	for d in $DEVICES; do set_sched "$d" none || ok=0; done
	if [ $ok = 1 ] && rmmod rust_deadline 2>/tmp/rmmod.err && ! schedulers_of "$dev" | grep -qx "$RD"; then
		out "    ok 3 rmmod_after_switching_away"
	else
		out "    # $(tr '\n' ' ' < /tmp/rmmod.err)"
		out "    not ok 3 rmmod_after_switching_away"
	fi
	if insmod "$m" 2>/tmp/insmod.err && set_sched "$dev" "$RD"; then
		out "    ok 4 insmod_again_and_select"
	else
		out "    # $(tr '\n' ' ' < /tmp/insmod.err)"
		out "    not ok 4 insmod_again_and_select"
	fi
	if quick_verify "$dev" 8; then
		out "    ok 5 io_after_reload"
	else
		out "    not ok 5 io_after_reload"
	fi
}

# Garbage, negative and overflowing values every tunable must reject.
bad_values="abc 12abc 0x 1.5 -1 2147483648 99999999999999999999"

# Scheduler $2 attached to queue $1 from none: its tunables' names in
# ATT_NAMES, and " name=value" for each, then the queue's async_depth where
# the queue keeps one, in ATT_DEFAULTS. Fails when $2 cannot be selected.
attached_defaults() { # device scheduler
	local q t v
	q=/sys/block/$(devname "$1")/queue
	set_sched "$1" none
	set_sched "$1" "$2" || return 1
	ATT_NAMES=$(ls "$q/iosched" | sort | tr '\n' ' ')
	ATT_DEFAULTS=""
	for t in $ATT_NAMES; do read -r v < "$q/iosched/$t"; ATT_DEFAULTS="$ATT_DEFAULTS $t=$v"; done
	if [ -e "$q/async_depth" ]; then read -r v < "$q/async_depth"; ATT_DEFAULTS="$ATT_DEFAULTS queue/async_depth=$v"; fi
}

# The first subtest of a tunables test: select the C scheduler and the Rust
# one on queue $1 in turn; the Rust one must list the same tunables with the
# same values, and leave the queue's async_depth (a kernel that keeps it
# there, 7.3) where the C one does when attached. Prints the plan (one
# subtest per tunable more) and subtest 1; sets $names to the Rust
# scheduler's tunables. Fails (returns 1, having printed why) when either
# cannot be selected.
same_tunables_as() { # device C-scheduler Rust-scheduler
	local dev=$1 c=$2 rust=$3 c_names c_defaults defaults
	attached_defaults "$dev" "$c" || { out "    1..1"; out "    not ok 1 select_${c//-/_}"; return 1; }
	c_names=$ATT_NAMES c_defaults=$ATT_DEFAULTS
	attached_defaults "$dev" "$rust" || { out "    1..1"; out "    not ok 1 select_${rust//-/_}"; return 1; }
	names=$ATT_NAMES defaults=$ATT_DEFAULTS
	out "    1..$(( $(echo $names | wc -w) + 1 ))"
	if [ "$names" = "$c_names" ] && [ "$defaults" = "$c_defaults" ]; then
		out "    #$defaults"
		out "    ok 1 same_names_and_defaults_as_${c//-/_}"
	else
		out "    # $c:$c_defaults"
		out "    # $rust:$defaults"
		out "    not ok 1 same_names_and_defaults_as_${c//-/_}"
	fi
}

# Subtest $1 on tunable file $2: every value after the third argument, and
# an empty line, is refused with EINVAL and leaves the value as it was; the
# valid value $3 is taken; the old value is put back.
tunable_case() { # n file good bad...
	local n=$1 f=$2 good=$3 before v now err fails=""
	shift 3
	# Builtins only (read, echo): thousands of writes, and an exec costs a
	# good part of a second on the debug kernel under TCG.
	read -r before < "$f"
	for v in "$@" ""; do
		if echo "$v" > "$f" 2>/tmp/tun.err; then
			fails="$fails accepted:'$v'"
		else
			read -r err < /tmp/tun.err
			case $err in
			*"Invalid argument"*) ;;
			*) fails="$fails errno:'$v':$err" ;;
			esac
		fi
		read -r now < "$f"
		if [ "$now" != "$before" ]; then
			fails="$fails changed:'$v'->$now"
			echo "$before" > "$f"
		fi
	done
	if ! echo "$good" > "$f" 2>/tmp/tun.err || { read -r now < "$f"; [ "$now" != "$good" ]; }; then
		read -r now < "$f"
		fails="$fails rejected_valid:'$good'->$now"
	fi
	echo "$before" > "$f"
	read -r now < "$f"
	if [ -z "$fails" ] && [ "$now" = "$before" ]; then
		out "    ok $n ${f##*/}"
	else
		out "    not ok $n ${f##*/} #$fails"
	fi
}

# --- tunables_reject_bad_input: every rust-deadline tunable has
# mq-deadline's name and default, rejects garbage, negative and
# out-of-range writes with EINVAL keeping its value, and accepts a valid one.
tunables_reject_bad_input() {
	if ! rd_available; then
		echo "rust_deadline not built" > /tmp/skip
		out "    1..0"
		return
	fi
	local dev=${DEVICES%% *} q n=1 t names nr f extra good
	q=/sys/block/$(devname "$dev")/queue
	same_tunables_as "$dev" mq-deadline "$RD" || return
	nr=$(cat "$q/nr_requests")
	for t in $names; do
		n=$((n + 1))
		f=$q/iosched/$t
		case $t in
		front_merges) extra="2"; good=0 ;;
		async_depth) extra="0 $((nr + 1))"; good=$((nr / 2)) ;;
		fifo_batch) extra="0"; good=8 ;;
		*) extra=""; good=$(( $(< "$f") + 7 )) ;;
		esac
		tunable_case $n "$f" "$good" $bad_values $extra
	done
}

# --- nr_requests_under_io: nr_requests changes every 0.3 s while fio runs
# (depth_updated under I/O); fio sees no error, the queue verifies
# afterwards, and where the scheduler has an async_depth of its own
# (rust-deadline on 6.12) it follows nr_requests (mq-deadline resets it on
# a change). Run on the Rust elevators that keep depth limits
# (DEPTH_LIMITED, the policies whose SchedPolicy::DEPTH_LIMITS is not
# empty): the others have none, so a depth change takes them through the
# module core's path these two take too, and the block layer's, which is
# the same under any elevator.
DEPTH_LIMITED="rust-deadline rust-bfq"
nr_scheds_on() { # device
	local s
	for s in $(scheds_on "$1"); do
		case " $DEPTH_LIMITED " in *" $s "*) echo "$s" ;; esac
	done
}
nr_requests_under_io() {
	local n=0 dev s cases=0
	for dev in $DEVICES; do
		cases=$((cases + $(nr_scheds_on "$dev" | wc -l)))
	done
	if [ $cases = 0 ]; then
		echo "no Rust elevator built" > /tmp/skip
		out "    1..0"
		return
	fi
	out "    1..$cases"
	for dev in $DEVICES; do
		for s in $(nr_scheds_on "$dev"); do
			n=$((n + 1))
			nr_requests_case $n "$dev" "$s"
		done
	done
}

nr_requests_case() { # n device scheduler
	local n=$1 dev=$2 s=$3
	local q=/sys/block/$(devname "$dev")/queue orig changes=0 bad=0 failed=0 before after
	if ! set_sched "$dev" "$s"; then
		out "    not ok $n $(devname "$dev")_$s # cannot select $s"
		return
	fi
	orig=$(cat "$q/nr_requests")
	before=$(dmesg | grep -ci 'i/o error')
	fio_q --name=nr --filename="$dev" --direct=1 --ioengine=libaio \
		--rw=randrw --bs=4k --iodepth=32 --numjobs=2 --size=64M \
		--time_based --runtime="${NR_SECS:-3}" &
	local fio_pid=$! v ad
	while kill -0 $fio_pid 2>/dev/null; do
		for v in 4 32 1024 16 256 2048 8 "$orig"; do
			kill -0 $fio_pid 2>/dev/null || break
			if echo "$v" > "$q/nr_requests" 2>/dev/null; then
				changes=$((changes + 1))
				# depth_updated must have seen the new depth.
				if [ -e "$q/iosched/async_depth" ] &&
					{ read -r ad < "$q/iosched/async_depth"; [ "$ad" != "$v" ]; }; then
					bad=$((bad + 1))
				fi
			fi
			nap 0.3
		done
	done
	wait $fio_pid || failed=1
	echo "$orig" > "$q/nr_requests"
	after=$(dmesg | grep -ci 'i/o error')
	if [ $failed = 0 ] && [ $bad = 0 ] && [ $changes -gt 0 ] &&
		[ "$after" = "$before" ] && quick_verify "$dev" 16; then
		out "    # $(devname "$dev") $s: $changes nr_requests changes"
		out "    ok $n $(devname "$dev")_$s"
	else
		out "    # $(devname "$dev") $s: fio failed=$failed, $changes changes, $bad async_depth mismatches, new I/O errors: $((after - before)); $(tail -2 /tmp/fio.log | tr '\n' ' ')"
		out "    not ok $n $(devname "$dev")_$s"
	fi
}

# --- read_starvation: a slow null_blk device (STARVE_DEV: 4 ms per
# request, 2 at a time) with a deep write queue (nr_requests and async_depth
# 256; 192 writes in flight, so the reader always finds a tag); one
# synchronous reader runs beside the write flood, each fio job on its own CPU
# (so the reader reaps its completions promptly). Times are in the device's
# measured time per completion t_c, which grows with the host's load as the
# latencies do. A FIFO makes every read wait behind the write queue, about
# 192 * t_c; under rust-deadline (read_expire 100 ms, fifo_batch 16) reads
# are preferred and an expired read waits at most one write batch and the
# requests in flight: read_expire + (fifo_batch + 2 * hw_depth) * t_c, about
# 155 ms on a quiet host. Judged: the reader's 99th percentile completion
# latency stays under half the FIFO's wait (96 * t_c, about 350 ms), which
# a scheduler that starves reads cannot meet and TCG's timing noise does not
# reach (p99 125-227 ms measured, the tight bound 160-173 ms). The tight
# bound and mq-deadline's figures under the same load are printed beside it.
# The negative control, in the same run: rust-noop, a FIFO, must miss the
# bound (its reads wait behind the whole write queue), or the bound cannot
# tell a scheduler that prefers reads from one that starves them.
STARVE_CONTROL=${STARVE_CONTROL:-rust-noop}
read_starvation() {
	if ! rd_available; then
		echo "rust_deadline not built" > /tmp/skip
		out "    1..0"
		return
	fi
	local dev=$STARVE_DEV s n=0 name
	if [ -z "$dev" ] || [ ! -b "$dev" ]; then
		out "    1..1"
		out "    not ok 1 starve_device # no device (STARVE_DEV='$dev')"
		return
	fi
	out "    1..2"
	local expire=100 batch=16 wdepth=192 depth q judged
	depth=$(cat "/sys/kernel/config/nullb/$(devname "$dev")/hw_queue_depth")
	q=/sys/block/$(devname "$dev")/queue
	for s in "$RD" mq-deadline "$STARVE_CONTROL"; do
		case $s in
		"$RD") n=1; name=$s ;;
		"$STARVE_CONTROL") n=2; name=control_${s}_starves ;;
		*) name=$s ;;
		esac
		if ! set_sched $dev "$s"; then
			[ "$s" = mq-deadline ] || out "    not ok $n $name # cannot select $s"
			continue
		fi
		echo 256 > $q/nr_requests
		if [ "$s" != "$STARVE_CONTROL" ]; then
			# mq-deadline 6.12 sets async_depth from the old nr_requests on a
			# change; 7.3 scales the queue's. Give both deadlines the same
			# write depth: the elevator's (6.12) or the queue's (7.3).
			if [ -e $q/iosched/async_depth ]; then
				echo 256 > $q/iosched/async_depth
			else
				echo 256 > $q/async_depth
			fi
			echo $expire > $q/iosched/read_expire
			echo $batch > $q/iosched/fifo_batch
		fi
		fio --output-format=json --output=/tmp/starve.json \
			--filename=$dev --direct=1 --ioengine=libaio --bs=4k \
			--time_based --runtime="${STARVE_SECS:-10}" --group_reporting=0 \
			--name=writer --rw=randwrite --iodepth=$wdepth --cpus_allowed=0 \
			--name=reader --rw=randread --iodepth=1 --cpus_allowed=1 < /dev/null > /tmp/starve.log 2>&1
		local p50 p90 p99 p999 max rios wios
		p50=$(jq '.jobs[] | select(.jobname=="reader") | .read.clat_ns.percentile["50.000000"] / 1000000 | floor' /tmp/starve.json 2>/dev/null)
		p90=$(jq '.jobs[] | select(.jobname=="reader") | .read.clat_ns.percentile["90.000000"] / 1000000 | floor' /tmp/starve.json 2>/dev/null)
		p99=$(jq '.jobs[] | select(.jobname=="reader") | .read.clat_ns.percentile["99.000000"] / 1000000 | floor' /tmp/starve.json 2>/dev/null)
		p999=$(jq '.jobs[] | select(.jobname=="reader") | .read.clat_ns.percentile["99.900000"] / 1000000 | floor' /tmp/starve.json 2>/dev/null)
		max=$(jq '.jobs[] | select(.jobname=="reader") | .read.clat_ns.max / 1000000 | floor' /tmp/starve.json 2>/dev/null)
		rios=$(jq '.jobs[] | select(.jobname=="reader") | .read.total_ios' /tmp/starve.json 2>/dev/null)
		wios=$(jq '.jobs[] | select(.jobname=="writer") | .write.total_ios' /tmp/starve.json 2>/dev/null)
		local ms bound
		ms=$(jq '.jobs[] | select(.jobname=="writer") | .job_runtime' /tmp/starve.json 2>/dev/null)
		bound=$(awk -v e=$expire -v b=$batch -v d=$depth -v ms="${ms:-0}" -v n=$(( ${rios:-0} + ${wios:-0} )) \
			'BEGIN { if (n > 0) printf "%d", e + (b + 2 * d) * ms / n; else print 0 }')
		judged=$(awk -v w=$wdepth -v ms="${ms:-0}" -v n=$(( ${rios:-0} + ${wios:-0} )) \
			'BEGIN { if (n > 0) printf "%d", w / 2 * ms / n; else print 0 }')
		out "    # $s: reader clat p50 ${p50:-?} p90 ${p90:-?} p99 ${p99:-?} p99.9 ${p999:-?} max ${max:-?} ms over ${rios:-?} reads beside ${wios:-?} writes in ${ms:-?} ms; read_expire + (fifo_batch + 2 * hw_depth) * t_c = $bound ms; judged: p99 <= $wdepth / 2 * t_c = $judged ms"
		if [ "$s" = mq-deadline ]; then
			: # the diagnostic line above, for comparison only
		elif [ -z "$p99" ] || [ "${rios:-0}" -le 0 ] || [ "${wios:-0}" -le 0 ] || [ "$judged" -le 0 ]; then
			out "    # $(tail -3 /tmp/starve.log | tr '\n' ' ')"
			out "    not ok $n $name # no measurement"
		elif [ "$s" = "$RD" ] && [ "$p99" -le "$judged" ]; then
			out "    ok $n $name"
		elif [ "$s" = "$RD" ]; then
			out "    not ok $n $name # reads waited as behind a FIFO's write queue"
		elif [ "$p99" -gt "$judged" ]; then
			out "    ok $n $name"
		else
			out "    not ok $n $name # a FIFO met the bound: it cannot tell starved reads from served ones"
		fi
	done
	set_sched "$dev" none
}

# --- fairness: two sequential readers (fio, direct I/O, 16 KiB, libaio
# iodepth 8, so each alone keeps the device busy) on the slow device,
# started together, one under `ionice -c2 -n4` and one under
# `ionice -c2 -n0`. BFQ maps a best-effort level to the weight
# (IOPRIO_NR_LEVELS - level) * BFQ_WEIGHT_CONVERSION_COEFF (bfq_ioprio_to_weight
# in block/bfq-wf2q.c): 40 and 80, so the level-0 reader is owed twice the
# bytes. Each fio counts bytes over FAIR_SECS after a FAIR_WARMUP ramp;
# ok when level-0 bytes / level-4 bytes is within 15 % of 2. Each line
# also gives nr_requests and the device's reads over the run (requests,
# their mean size, bios merged): how much the scheduler merged decides
# the throughput here, as null_blk takes 2 ms per request of any size.
# (With one request in flight per reader, as dd gives, BFQ does not
# reach 1:2 on this device: it injects the other reader's request into the
# second device slot while the in-service reader thinks, as it is built to.)
# FAIRNESS_SCHEDULERS (job.env: ours, rust-bfq once built) are judged in
# the band. FAIRNESS_CONTROL (mq-deadline, which has no weights) is the
# negative control, judged the other way: it must land outside the band in
# the same boot, or the band cannot tell weights from none.
# FAIRNESS_REFERENCE (C bfq) is measured the same way and only reported: it
# measured 1.64 to 2.31 here, so judging it would judge the host.
# The debug kernel judges no ratio (FAIR_DEBUG_SKIP): its readers run a
# few seconds under our weighted schedulers, for the sanitizers to see the
# weighted queues' paths; with no ratio to judge, the reference and the
# control are left to the base kernel (unless FULL_MATRIX).
if [ "${KERNEL_FLAVOR:-}" = debug ]; then
	FAIR_SECS=${FAIR_SECS:-5}
	FAIR_WARMUP=${FAIR_WARMUP:-1}
	if [ "${FULL_MATRIX:-0}" != 1 ]; then
		FAIRNESS_CONTROL=""
		FAIRNESS_REFERENCE=""
	fi
fi
FAIR_SECS=${FAIR_SECS:-20}
FAIR_WARMUP=${FAIR_WARMUP:-5}
FAIRNESS_CONTROL=${FAIRNESS_CONTROL-mq-deadline}
FAIRNESS_REFERENCE=${FAIRNESS_REFERENCE-bfq}

# One fairness reader: ionice level $1, device $2, from byte $3, $4 bytes,
# fio's JSON to $5.
fair_reader() {
	ionice -c2 -n"$1" fio --name=reader-$1 --filename="$2" --rw=read --bs=16k \
		--direct=1 --ioengine=libaio --iodepth=8 --offset="$3" --size="$4" \
		--time_based --ramp_time="$FAIR_WARMUP" --runtime="$FAIR_SECS" \
		--output-format=json --output="$5" < /dev/null > "$5.log" 2>&1
}

# Sets FAIR_HI and FAIR_LO (bytes of the level-0 and level-4 readers over
# FAIR_SECS) and FAIR_SKEW_MS (how far apart they finished), or FAIR_ERR.
fair_measure() { # scheduler
	local dev=$SLOW_DEV p_lo p_hi rc=0
	FAIR_HI=""; FAIR_LO=""; FAIR_ERR=""; FAIR_SKEW_MS=""
	if ! set_sched "$dev" "$1"; then
		FAIR_ERR="cannot select $1 (offered: $(schedulers_of "$dev" | tr '\n' ' '))"
		return 1
	fi
	local half=$(( $(blockdev --getsize64 "$dev") / 2 ))
	local stat=/sys/block/$(devname "$dev")/stat st0
	rm -f /tmp/fair.lo /tmp/fair.hi
	st0=$(cat "$stat")
	fair_reader 4 "$dev" 0 "$half" /tmp/fair.lo &
	p_lo=$!
	fair_reader 0 "$dev" "$half" "$half" /tmp/fair.hi &
	p_hi=$!
	wait $p_lo || rc=$?
	wait $p_hi || rc=$?
	# Reads completed and merged over the whole run (ramp included): how
	# large the requests the scheduler sent were.
	FAIR_REQS=$(echo "$st0 $(cat "$stat")" | awk -v nr="$(cat "${stat%/stat}/queue/nr_requests")" '{ n = NF / 2; printf "nr_requests %d, %d requests of %.1f KiB on average, %d bios merged", nr, $(n + 1) - $1, ($(n + 3) - $3) / 2 / (($(n + 1) - $1) > 0 ? $(n + 1) - $1 : 1), $(n + 2) - $2 }')
	FAIR_LO=$(jq '.jobs[0].read.io_bytes' /tmp/fair.lo 2>/dev/null)
	FAIR_HI=$(jq '.jobs[0].read.io_bytes' /tmp/fair.hi 2>/dev/null)
	if [ $rc != 0 ] || [ -z "$FAIR_LO" ] || [ -z "$FAIR_HI" ] || [ "$FAIR_LO" = null ] || [ "$FAIR_HI" = null ]; then
		FAIR_ERR="a reader failed (rc $rc): $(tail -2 /tmp/fair.lo.log | tr '\n' ' ') / $(tail -2 /tmp/fair.hi.log | tr '\n' ' ')"
		return 1
	fi
	if [ "$FAIR_LO" -le 0 ]; then
		FAIR_ERR="the level-4 reader read nothing in ${FAIR_SECS}s (level 0: $FAIR_HI bytes)"
		return 1
	fi
	local t_lo t_hi
	t_lo=$(jq '.timestamp_ms' /tmp/fair.lo); t_hi=$(jq '.timestamp_ms' /tmp/fair.hi)
	FAIR_SKEW_MS=$(( t_lo > t_hi ? t_lo - t_hi : t_hi - t_lo ))
}

fair_line() { # scheduler
	awk -v s="$1" -v h="$FAIR_HI" -v l="$FAIR_LO" -v t="$FAIR_SECS" -v k="$FAIR_SKEW_MS" -v r="$FAIR_REQS" 'BEGIN {
		printf "%s: level 0 (weight 80) %.1f MB, level 4 (weight 40) %.1f MB in %d s (%.2f MB/s together; readers finished %d ms apart; %s): ratio %.3f (want 2, +-15 %%: 1.70..2.30)",
			s, h / 1e6, l / 1e6, t, (h + l) / 1e6 / t, k, r, h / l }'
}

# One line of /run/out/fairness.tsv per measurement, for xtask's results
# and report: scheduler, attempt (1, or 2 for the retry), role (judged,
# control or reference), level-0 bytes, level-4 bytes, seconds, skew ms, and the
# device's request counts as fair_measure describes them.
FAIR_TSV=/run/out/fairness.tsv
fair_record() { # scheduler attempt role
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$FAIR_HI" "$FAIR_LO" \
		"$FAIR_SECS" "$FAIR_SKEW_MS" "$FAIR_REQS" >> "$FAIR_TSV"
}

fair_in_band() {
	awk -v h="$FAIR_HI" -v l="$FAIR_LO" 'BEGIN { r = h / l; exit !(r >= 1.7 && r <= 2.3) }'
}

fair_ratio() {
	awk -v h="$FAIR_HI" -v l="$FAIR_LO" 'BEGIN { printf "%.3f", h / l }'
}

# Under KASAN and lockdep the CPU, not the scheduler, decides who gets the
# device (C bfq measured 1.699 there): the I/O runs for the sanitizers,
# the ratios are judged on the base kernel.
FAIR_DEBUG_SKIP="ratio judged on the base kernel only"

fairness() {
	local n=0 s first
	if [ -z "$SLOW_DEV" ] || [ ! -b "$SLOW_DEV" ]; then
		out "    1..1"
		out "    not ok 1 slow_device # no slow device (SLOW_DEV='$SLOW_DEV')"
		return
	fi
	if [ -z "$FAIRNESS_SCHEDULERS" ]; then
		echo "no weighted scheduler of ours built" > /tmp/skip
		out "    1..0"
		return
	fi
	local qd=/sys/block/$(devname "$SLOW_DEV")/queue
	out "    # $(devname "$SLOW_DEV"): $(nullb_describe "${SLOW_DEV#/dev/nullb}" 2>/dev/null) max_sectors_kb=$(cat $qd/max_sectors_kb)"
	out "    1..$(echo $FAIRNESS_SCHEDULERS $FAIRNESS_CONTROL | wc -w)"
	for s in $FAIRNESS_REFERENCE; do
		if fair_measure "$s"; then
			fair_record "$s" 1 reference
			out "    # reference, not judged: $(fair_line "$s")"
		else
			out "    # reference $s: $FAIR_ERR"
		fi
	done
	for s in $FAIRNESS_SCHEDULERS; do
		n=$((n + 1))
		if ! fair_measure "$s"; then
			out "    not ok $n $s # $FAIR_ERR"
			continue
		fi
		fair_record "$s" 1 judged
		out "    # $(fair_line "$s")"
		first=""
		# Once more if outside the band: a host busy with something else
		# slows the TCG guest, the readers' think time outgrows the idle
		# slice and both BFQs drift towards 1:1 (rust-bfq 1.685 and C bfq
		# 1.756 in one such run, 1.85-2.03 and 1.99-2.10 otherwise). A
		# scheduler that misses the band twice fails; both lines are kept,
		# and a pass on the second attempt says so.
		if [ "$KERNEL_FLAVOR" != debug ] && ! fair_in_band; then
			first=$(fair_ratio)
			out "    # outside 1.70..2.30: measuring again"
			if ! fair_measure "$s"; then
				out "    not ok $n $s # $FAIR_ERR"
				continue
			fi
			fair_record "$s" 2 judged
			out "    # $(fair_line "$s")"
		fi
		if [ "$KERNEL_FLAVOR" = debug ]; then
			out "    ok $n $s # SKIP $FAIR_DEBUG_SKIP"
		elif fair_in_band && [ -n "$first" ]; then
			out "    ok $n $s # retried: ratio $first, then $(fair_ratio)"
		elif fair_in_band; then
			out "    ok $n $s"
		else
			out "    not ok $n $s # ratio outside 1.70..2.30"
		fi
	done
	# The negative control, measured after the judged ones, in the same
	# boot: no weights, so it must miss the band.
	for s in $FAIRNESS_CONTROL; do
		n=$((n + 1))
		if ! fair_measure "$s"; then
			out "    not ok $n control_$s # $FAIR_ERR"
			continue
		fi
		fair_record "$s" 1 control
		out "    # negative control: $(fair_line "$s")"
		if [ "$KERNEL_FLAVOR" = debug ]; then
			out "    ok $n control_$s # SKIP $FAIR_DEBUG_SKIP"
		elif fair_in_band; then
			out "    not ok $n control_$s # a scheduler without weights landed in 1.70..2.30: the band tells nothing apart"
		else
			out "    ok $n control_$s"
		fi
	done
}

# --- Tests of the rust-bfq elevator module; they skip when it is not built.
RB=rust-bfq

rb_available() {
	case " $SCHEDULERS " in *" $RB "*) return 0 ;; *) return 1 ;; esac
}

# --- bfq_tunables: rust-bfq lists C bfq's tunables with C bfq's defaults;
# malformed or out-of-range writes fail with EINVAL and keep the value (C
# bfq clamps out-of-range values instead); a valid write takes.
bfq_tunables() {
	if ! rb_available; then
		echo "rust_bfq not built" > /tmp/skip
		out "    1..0"
		return
	fi
	local dev=${DEVICES%% *} q n=1 t names f extra good bad
	q=/sys/block/$(devname "$dev")/queue
	same_tunables_as "$dev" bfq "$RB" || return
	for t in $names; do
		n=$((n + 1))
		f=$q/iosched/$t
		case $t in
		low_latency|strict_guarantees) extra="2"; good=$((1 - $(< "$f"))) ;;
		fifo_expire_sync|fifo_expire_async|back_seek_penalty|timeout_sync) extra="0"; good=$(( $(< "$f") + 7 )) ;;
		slice_idle_us) extra="4294967296"; good=$(( $(< "$f") + 7 )) ;;
		*) extra=""; good=$(( $(< "$f") + 7 )) ;;
		esac
		bad=$bad_values
		# 2^31 µs is in slice_idle_us's range (0 to UINT_MAX, as in C bfq).
		[ "$t" = slice_idle_us ] && bad=${bad/2147483648/}
		tunable_case $n "$f" "$good" $bad $extra
	done
	set_sched "$dev" none
}

# --- short_lived_procs: many short-lived processes doing I/O in waves on
# the slow device (so requests queue and processes exit with I/O still in
# the scheduler): PROCS_WAVES waves of PROCS_PER_WAVE processes, each one
# dd of 16 × 4 KiB direct reads or writes, beside one long-lived reader.
# Every process must succeed, the scheduler must keep its issuer slots
# straight (more processes than rust-bfq has slots, so slots are reused),
# and I/O must still work afterwards. Run on every elevator that keeps
# state per process (PER_PROCESS), and on bfq as the reference. With
# OURS_ONLY (the debug kernel), 100 processes on ours: what the sanitizers
# look at is each process's way in and out of the scheduler.
PER_PROCESS="rust-bfq rust-as rust-cfq"
short_lived_procs() {
	local scheds="" s ref=bfq
	[ "${OURS_ONLY:-0}" = 1 ] && ref=""
	for s in $PER_PROCESS; do
		case " $SCHEDULERS " in *" $s "*) scheds="$scheds $s" ;; esac
	done
	if [ -z "$scheds" ]; then
		echo "none of $PER_PROCESS built" > /tmp/skip
		out "    1..0"
		return
	fi
	# 600 processes; 100 with OURS_ONLY.
	local dev=$SLOW_DEV waves=${PROCS_WAVES:-12} per=${PROCS_PER_WAVE:-50} n=0
	[ "${OURS_ONLY:-0}" = 1 ] && waves=${PROCS_WAVES:-2}
	out "    1..$(echo $ref $scheds | wc -w)"
	for s in $ref $scheds; do
		n=$((n + 1))
		if ! set_sched "$dev" "$s"; then
			out "    not ok $n $s # cannot select"
			continue
		fi
		local errs_before t0 w i pids failed=0 started=0
		errs_before=$(dmesg | grep -ci 'i/o error')
		t0=$EPOCHREALTIME
		fio --name=bg --filename="$dev" --rw=read --bs=64k --direct=1 \
			--ioengine=libaio --iodepth=2 --offset=1024M --size=512M \
			--time_based --runtime=600 < /dev/null > /tmp/bg.log 2>&1 &
		local bg=$!
		for w in $(seq "$waves"); do
			pids=""
			for i in $(seq "$per"); do
				local off=$(( (w * per + i) * 64 ))
				if [ $((i % 2)) = 0 ]; then
					dd if="$dev" of=/dev/null bs=4k count=16 iflag=direct skip=$off status=none &
				else
					dd if=/dev/zero of="$dev" bs=4k count=16 oflag=direct seek=$off status=none &
				fi
				pids="$pids $!"
				started=$((started + 1))
			done
			for i in $pids; do wait "$i" || failed=$((failed + 1)); done
		done
		kill -INT $bg 2>/dev/null
		wait $bg
		local bg_rc=$?
		local secs errs
		secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
		errs=$(( $(dmesg | grep -ci 'i/o error') - errs_before ))
		out "    # $s: $started processes in $waves waves, $failed failed, ${secs}s, background reader rc $bg_rc, new I/O errors: $errs"
		if [ $failed = 0 ] && [ $errs = 0 ] && quick_verify "$dev" 1900; then
			out "    ok $n $s"
		else
			out "    not ok $n $s"
		fi
	done
	set_sched "$dev" none
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
	say "test $i/$(echo $TESTS | wc -w): $t"
	start=$(wc -l < "$KTAP")
	rm -f /tmp/skip
	out "    KTAP version 1"
	out "    # Subtest: $t"
	t0=$(date +%s)
	"$t"
	# How long each test takes, for planning what runs where.
	out "    # $t took $(( $(date +%s) - t0 )) s"
	if tail -n +$((start + 1)) "$KTAP" | grep -q "^    not ok"; then
		out "not ok $i $t"
	elif [ -s /tmp/skip ]; then
		out "ok $i $t # SKIP $(cat /tmp/skip)"
	else
		out "ok $i $t"
	fi
done

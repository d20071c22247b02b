# SPDX-License-Identifier: GPL-2.0
# The fault tests, sourced by tests.sh, whose `out`, `scheds_on`,
# `quick_verify` and SCHEDULERS/DEVICES/NARROW_SCHEDULERS they use. Each
# injects faults of one kind under I/O whose data fio verifies (write_verify's
# job: random 4 KiB writes read back with crc32c), on every Rust elevator,
# with mq-deadline and bfq as the references. Each case's diagnostic line
# gives the faults injected, the blocks written and verified, the I/O
# errors fio saw and the blocks that read back wrong ("bad": lost or
# corrupted); a bad block, an unexpected I/O error or a kernel report on
# the console fails it.
#
# FAULTS_LONG=1 (job.env; `cargo xtask test --faults`) runs each test
# longer, every scheduler on the debug kernel too; otherwise each case
# takes a few seconds and the debug kernel leaves out NARROW_SCHEDULERS.
# SOAK_MINUTES (job.env; `cargo xtask test --soak M`) is fault_soak's
# length; HOTPLUG_DEVS (NAME=PATH ...) the disks fault_hot_remove may ask
# xtask to unplug.

FAULT_TESTS="fault_requeue fault_timeout fault_hw_queues fault_switchers fault_cpu_hotplug fault_alloc fault_hot_remove"

# The fault tests' own null_blk device: memory backed (what fio writes
# reads back), made and removed by each test, so that its faults and
# queue count never reach the other tests' devices.
FAULT_NULLB=nullb7
FAULT_DEV=/dev/$FAULT_NULLB
FAULT_CFG=/sys/kernel/config/nullb/$FAULT_NULLB

# A length (seconds, rounds, processes): $1 normally, $2 with FAULTS_LONG.
fault_len() {
	if [ "${FAULTS_LONG:-0}" = 1 ]; then echo "$2"; else echo "$1"; fi
}

# The schedulers a fault test runs on: the C references mq-deadline and bfq,
# then every Rust elevator. On the debug kernel, without FAULTS_LONG or
# FULL_MATRIX (`--full-matrix`), only the Rust elevators: what the debug
# kernel adds concerns our code, and the base kernel runs the references
# beside every elevator; and with "narrow" ($1), only those not in
# NARROW_SCHEDULERS (rust-deadline and rust-bfq).
fault_scheds() { # [narrow]
	local s
	for s in mq-deadline bfq $(echo $SCHEDULERS | tr ' ' '\n' | grep '^rust-'); do
		case " $SCHEDULERS " in *" $s "*) ;; *) continue ;; esac
		if [ "${FAULTS_LONG:-0}" != 1 ] && [ "${FULL_MATRIX:-0}" != 1 ] &&
			[ "${KERNEL_FLAVOR:-}" = debug ]; then
			case $s in rust-*) ;; *) continue ;; esac
			if [ "${1:-}" = narrow ]; then
				case " ${NARROW_SCHEDULERS:-} " in *" $s "*) continue ;; esac
			fi
		fi
		echo "$s"
	done
}

# Makes the fault device with $1 submit queues (default 1); fails, saying
# why in /tmp/fault.err, when null_blk's configfs is missing or the device
# does not appear.
fault_dev_make() {
	local i
	fault_dev_remove
	if ! mkdir "$FAULT_CFG" 2>/tmp/fault.err; then
		echo "cannot make $FAULT_CFG: $(cat /tmp/fault.err)" > /tmp/fault.err
		return 1
	fi
	echo 256 > "$FAULT_CFG/size"
	echo 1 > "$FAULT_CFG/memory_backed"
	echo 1 > "$FAULT_CFG/irqmode"
	echo 10000 > "$FAULT_CFG/completion_nsec"
	echo 64 > "$FAULT_CFG/hw_queue_depth"
	echo "${1:-1}" > "$FAULT_CFG/submit_queues"
	echo 512 > "$FAULT_CFG/blocksize"
	echo 2 > "$FAULT_CFG/queue_mode"
	echo 1 > "$FAULT_CFG/power"
	for i in $(seq 50); do [ -b "$FAULT_DEV" ] && return 0; sleep 0.1; done
	echo "$FAULT_DEV did not appear" > /tmp/fault.err
	return 1
}

fault_dev_remove() {
	[ -d "$FAULT_CFG" ] || return 0
	echo 0 > "$FAULT_CFG/power" 2>/dev/null
	rmdir "$FAULT_CFG" 2>/dev/null
}

# Selects scheduler $2 on the fault device, or fails case $1.
fault_select() { # n scheduler
	set_sched "$FAULT_DEV" "$2" && return 0
	out "    not ok $1 $2 # cannot select $2"
	return 1
}

# A test's plan, having made the fault device with $2 submit queues
# (default 1); a failing case when it cannot be made.
fault_plan() { # cases [submit_queues]
	if ! fault_dev_make "${2:-1}"; then
		out "    1..1"
		out "    not ok 1 fault_device # $(cat /tmp/fault.err)"
		return 1
	fi
	out "    1..$1"
}

# fault_fio NAME DEV OFFSET_MB SIZE_MB [fio options]: random 4 KiB writes at
# depth 16, then their read-back with crc32c; I/O errors (EIO, 5, and
# ETIMEDOUT, 110, as a timed-out request gives: by number, as fio knows only
# some errors by name) and bad blocks are counted, not fatal (fio leaves a
# write that failed out of its verification). Sets F_WRITES (writes done),
# F_VERIFIED (blocks read back), F_ERRS (I/O errors fio saw), F_BAD (blocks that read back
# wrong: fio's verify failures) and F_OK (0 unless fio itself failed or
# gave no figures).
fault_fio() {
	local name=$1 dev=$2 off=$3 size=$4 rc=0
	shift 4
	rm -f /tmp/ffio.json
	fio --name="$name" --filename="$dev" --direct=1 --ioengine=libaio \
		--rw=randwrite --bs=4k --iodepth=16 --size="${size}M" --offset="${off}M" \
		--verify=crc32c --do_verify=1 --randrepeat=0 --verify_state_save=0 \
		--continue_on_error=all --ignore_error=5,110:5,110 \
		--output-format=json --output=/tmp/ffio.json "$@" < /dev/null > /tmp/ffio.log 2>&1 || rc=$?
	F_WRITES=$(jq '[.jobs[].write.total_ios] | add' /tmp/ffio.json 2>/dev/null)
	F_VERIFIED=$(jq '[.jobs[].read.total_ios] | add' /tmp/ffio.json 2>/dev/null)
	F_ERRS=$(jq '[.jobs[].total_err] | add' /tmp/ffio.json 2>/dev/null)
	F_BAD=$(grep -cE 'verify: bad|verify failed' /tmp/ffio.log)
	F_OK=0
	case "$F_WRITES$F_VERIFIED$F_ERRS" in *[!0-9]* | "") F_OK=1 ;; esac
	[ $rc = 0 ] || [ "${F_ERRS:-0}" != 0 ] || F_OK=1
}

# Adds the last fault_fio's figures to the running totals T_*.
fault_totals_reset() { T_WRITES=0; T_VERIFIED=0; T_ERRS=0; T_BAD=0; T_FIOFAIL=0; }
fault_totals_add() {
	T_WRITES=$((T_WRITES + ${F_WRITES:-0}))
	T_VERIFIED=$((T_VERIFIED + ${F_VERIFIED:-0}))
	T_ERRS=$((T_ERRS + ${F_ERRS:-0}))
	T_BAD=$((T_BAD + F_BAD))
	[ "$F_OK" = 0 ] || T_FIOFAIL=$((T_FIOFAIL + 1))
}

# fault_fio_for's rounds: MiB each, and how many before they cycle.
fault_round_mb() { fault_len 4 16; }
FAULT_ROUNDS=12

# Rounds of fault_fio on DEV (fault_round_mb each, cycling through
# FAULT_ROUNDS rounds' space from $3 MiB) until $2 seconds have passed, at
# least one, or until /tmp/fault.stop exists when $2 is 0; running totals
# in T_*.
fault_fio_for() { # dev secs from_mb [fio options]
	local dev=$1 secs=$2 from=$3 t_end round=0 mb
	shift 3
	mb=$(fault_round_mb)
	t_end=$(( $(date +%s) + secs ))
	fault_totals_reset
	while :; do
		fault_fio "round$round" "$dev" $((from + (round % FAULT_ROUNDS) * mb)) "$mb" "$@"
		fault_totals_add
		round=$((round + 1))
		if [ "$secs" = 0 ]; then
			[ ! -e /tmp/fault.stop ] || break
		else
			[ "$(date +%s)" -lt "$t_end" ] || break
		fi
	done
}

fault_totals_line() {
	echo "$T_WRITES writes, $T_VERIFIED blocks verified, $T_ERRS I/O errors, $T_BAD bad blocks"
}

# Whether the verified I/O (T_*) was clean: fio ran and verified, no bad
# block, and no more I/O errors than $1 (default 0).
fault_io_clean() { # [errors allowed]
	[ $T_BAD = 0 ] && [ $T_ERRS -le "${1:-0}" ] && [ $T_FIOFAIL = 0 ] && [ $T_VERIFIED -gt 0 ]
}

# Case $1 ($2): ok when the command after them succeeds, else not ok with
# what $3 says went wrong and the end of fio's log.
fault_case() { # n label wrong command...
	local n=$1 label=$2 wrong=$3
	shift 3
	if "$@"; then
		out "    ok $n $label"
	else
		out "    # wrong:${wrong:- see the figures}; $(tail -3 /tmp/ffio.log | tr '\n' ' ')"
		out "    not ok $n $label"
	fi
}

# fault_fio_for in the background (fault_bg_start DEV SECS FROM [fio
# options]; SECS 0: until fault_bg_wait) and its totals in T_* once it is
# done (fault_bg_wait).
fault_bg_start() {
	rm -f /tmp/fault.stop /tmp/fault.totals
	(fault_fio_for "$@"; fault_totals_export) &
	FAULT_BG=$!
}
fault_bg_wait() {
	# A builtin, not touch: in fault_alloc an exec can fail, and a stop
	# file not made leaves the loop running for ever.
	: > /tmp/fault.stop
	wait $FAULT_BG
	rm -f /tmp/fault.stop
	fault_totals_reset
	T_FIOFAIL=1
	# shellcheck disable=SC1091
	[ -s /tmp/fault.totals ] && . /tmp/fault.totals
	rm -f /tmp/fault.totals
}
fault_totals_export() {
	echo "T_WRITES=$T_WRITES T_VERIFIED=$T_VERIFIED T_ERRS=$T_ERRS T_BAD=$T_BAD T_FIOFAIL=$T_FIOFAIL" > /tmp/fault.totals
}

# A fault attribute group of null_blk's configfs (requeue_inject,
# timeout_inject): a fault on $2 % of the requests, at most $3 times,
# without a message per fault (verbose 0).
fault_attr_set() { # group probability times
	local g=$FAULT_CFG/$1
	echo 0 > "$g/verbose"
	echo 1 > "$g/interval"
	echo "$3" > "$g/times"
	echo "$2" > "$g/probability"
}

# How many of $2 allowed faults group $1 injected (times counts down).
fault_attr_used() { # group times
	echo $(( $2 - $(cat "$FAULT_CFG/$1/times") ))
}

fault_attr_off() {
	echo 0 > "$FAULT_CFG/$1/probability"
}

fault_needs_injection() {
	if [ ! -d "$FAULT_CFG/requeue_inject" ]; then
		echo "kernel without null_blk fault injection (CONFIG_BLK_DEV_NULL_BLK_FAULT_INJECTION)" > /tmp/skip
		out "    1..0"
		fault_dev_remove
		return 1
	fi
}

# --- fault_requeue: null_blk requeues 30 % of the requests it is given
# (alternately through the BUSY return and blk_mq_requeue_request, as
# blktests does), so requests go back through the scheduler's insert and
# dispatch; every write must succeed and read back.
fault_requeue() {
	local scheds n=0 s times=1000000 used
	scheds=$(fault_scheds narrow)
	fault_plan "$(echo $scheds | wc -w)" || return
	fault_needs_injection || return
	for s in $scheds; do
		n=$((n + 1))
		fault_select $n "$s" || continue
		fault_attr_set requeue_inject 30 $times
		fault_fio_for "$FAULT_DEV" "$(fault_len 1 30)" 0
		used=$(fault_attr_used requeue_inject $times)
		fault_attr_off requeue_inject
		out "    # $s: $used requeues injected; $(fault_totals_line)"
		fault_case $n "$s" "" eval '[ "$used" -gt 0 ] && fault_io_clean'
	done
	fault_dev_remove
}

# --- fault_timeout: null_blk drops requests (a fake timeout: the request
# is never completed until blk-mq's timeout handler does it, with
# BLK_STS_TIMEOUT), io_timeout 1 s, beside 10 % requeues. A timed-out write
# fails; fio leaves it out of its verification. Every other write must read
# back, and fio must see no more errors than timeouts were injected (a
# timed-out request ends as one I/O error for each bio in it: merging is off
# on the queue, nomerges 2, so that each request is one of fio's).
fault_timeout() {
	local scheds n=0 s times used requeues q
	scheds=$(fault_scheds narrow)
	fault_plan "$(echo $scheds | wc -w)" || return
	fault_needs_injection || return
	q=/sys/block/$FAULT_NULLB/queue
	echo 1000 > "$q/io_timeout"
	echo 2 > "$q/nomerges"
	times=$(fault_len 6 40)
	for s in $scheds; do
		n=$((n + 1))
		fault_select $n "$s" || continue
		fault_attr_set timeout_inject 2 "$times"
		fault_attr_set requeue_inject 10 1000000
		fault_fio_for "$FAULT_DEV" "$(fault_len 1 30)" 0
		used=$(fault_attr_used timeout_inject "$times")
		requeues=$(fault_attr_used requeue_inject 1000000)
		fault_attr_off timeout_inject
		fault_attr_off requeue_inject
		out "    # $s: $used timeouts and $requeues requeues injected; $(fault_totals_line)"
		fault_case $n "$s" "" eval '[ "$used" -gt 0 ] && fault_io_clean "$used" &&
			quick_verify "$FAULT_DEV" 200' 
	done
	fault_dev_remove
}

# --- fault_hw_queues: null_blk's submit_queues (the queue's nr_hw_queues)
# goes 1 -> 2 -> 1 ... while the scheduler is switched between the case's
# scheduler and the next one in the list, beside verified I/O.
# blk_mq_update_nr_hw_queues takes the elevator off the queue and puts it
# back on its new hardware queues each time.
fault_hw_queues() {
	local scheds n=0 s next changes switches fio_pid secs
	scheds=$(fault_scheds narrow)
	fault_plan "$(echo $scheds | wc -w)" || return
	secs=$(fault_len 1 30)
	for s in $scheds; do
		n=$((n + 1))
		next=$(echo $scheds $scheds | tr ' ' '\n' | grep -A1 -x -m1 -- "$s" | tail -1)
		fault_select $n "$s" || continue
		changes=0 switches=0
		fault_bg_start "$FAULT_DEV" "$secs" 0
		fio_pid=$FAULT_BG
		local qn=2 el=$next
		while kill -0 $fio_pid 2>/dev/null; do
			echo $qn > "$FAULT_CFG/submit_queues" 2>/dev/null && changes=$((changes + 1))
			qn=$((3 - qn))
			set_sched "$FAULT_DEV" "$el" && switches=$((switches + 1))
			[ "$el" = "$s" ] && el=$next || el=$s
			sleep 0.1
		done
		fault_bg_wait
		echo 1 > "$FAULT_CFG/submit_queues"
		out "    # $s (with $next): $changes submit_queues changes, $switches switches; $(fault_totals_line)"
		fault_case $n "$s" "" eval '[ $changes -gt 0 ] && [ $switches -gt 0 ] && fault_io_clean'
	done
	fault_dev_remove
}

# --- fault_switchers: 8 processes each select a random scheduler of the
# set on one queue as fast as they can, beside verified I/O: elevator
# switches racing each other and the I/O. One case per device: the fault
# device, and with FAULTS_LONG every device of DEVICES too.
fault_switchers() {
	local scheds devs n=0 dev secs
	scheds=$(fault_scheds narrow)
	devs=$FAULT_DEV
	[ "${FAULTS_LONG:-0}" = 1 ] && devs="$devs $DEVICES"
	fault_plan "$(echo $devs | wc -w)" || return
	secs=$(fault_len 3 60)
	for dev in $devs; do
		n=$((n + 1))
		local i pids="" fio_pid switches=0 tried=0 off=0
		[ "$dev" = "$FAULT_DEV" ] || off=256
		rm -f /tmp/switcher.*
		fault_bg_start "$dev" "$secs" $off
		fio_pid=$FAULT_BG
		for i in $(seq 8); do
			fault_switcher "$dev" "$fio_pid" "$scheds" > "/tmp/switcher.$i" &
			pids="$pids $!"
		done
		for i in $pids; do wait "$i"; done
		fault_bg_wait
		for i in $(seq 8); do
			read -r a b < "/tmp/switcher.$i"
			tried=$((tried + ${a:-0})); switches=$((switches + ${b:-0}))
		done
		out "    # $(devname "$dev"): 8 switchers, $switches of $tried switches took; $(fault_totals_line)"
		fault_case $n "$(devname "$dev")" "" eval '[ $switches -gt 0 ] && fault_io_clean &&
			set_sched "$dev" none'
	done
	fault_dev_remove
}

# One switcher: random schedulers of $3 on $1 while process $2 lives;
# prints the writes tried and the ones that took (a write can fail with
# EBUSY-like errors while another switch holds the queue).
fault_switcher() { # dev pid scheds
	local f=/sys/block/$(devname "$1")/queue/scheduler tried=0 took=0 s
	local -a all=($3)
	while kill -0 "$2" 2>/dev/null; do
		s=${all[RANDOM % ${#all[@]}]}
		tried=$((tried + 1))
		echo "$s" > "$f" 2>/dev/null && took=$((took + 1))
	done
	echo "$tried $took"
}

# --- fault_cpu_hotplug: CPU 1 goes offline and online again and again
# beside verified I/O on the fault device with a hardware queue per CPU:
# blk-mq drains the offlined CPU's hardware queue, requests in the
# scheduler included, and maps its software queue elsewhere.
fault_cpu_hotplug() {
	local scheds n=0 s cycles fio_pid secs cpu=/sys/devices/system/cpu/cpu1/online
	scheds=$(fault_scheds narrow)
	if [ ! -w $cpu ]; then
		echo "CPU 1 cannot go offline (no $cpu: one CPU, or no CONFIG_HOTPLUG_CPU)" > /tmp/skip
		out "    1..0"
		return
	fi
	fault_plan "$(echo $scheds | wc -w)" 2 || return
	secs=$(fault_len 1 30)
	for s in $scheds; do
		n=$((n + 1))
		fault_select $n "$s" || continue
		cycles=0
		local failed=0
		fault_bg_start "$FAULT_DEV" "$secs" 0
		fio_pid=$FAULT_BG
		while kill -0 $fio_pid 2>/dev/null; do
			echo 0 > $cpu || failed=$((failed + 1))
			sleep 0.2
			echo 1 > $cpu || failed=$((failed + 1))
			cycles=$((cycles + 1))
			sleep 0.2
		done
		fault_bg_wait
		[ "$(cat $cpu)" = 1 ] || echo 1 > $cpu
		out "    # $s: CPU 1 offline and online $cycles times ($failed refused); $(fault_totals_line)"
		fault_case $n "$s" "" eval '[ $cycles -gt 0 ] && [ $failed = 0 ] && fault_io_clean'
	done
	fault_dev_remove
}

# --- fault_alloc: allocations fail (failslab and fail_page_alloc, GFP_KERNEL
# ones included) in three places, beside verified I/O on the fault device:
# - the switch (elevator init): the Nth allocation of the process's write
#   to queue/scheduler fails (fail-nth), for N = 1, 1 + step, ... until the
#   write makes fewer than N. The write either takes (the failure was
#   absorbed) or fails; a failed switch leaves the old scheduler, or none
#   when the old one was already torn down (6.12's elevator_switch falls
#   back to none, saying so), never the new one half set;
# - sysfs writes: the same for a write of each tunable's own value, which
#   must keep that value whether it fails or not;
# - I/O context creation: short-lived processes reading the device, each
#   with a fifth of its allocations failing (make-it-fail; subshells that
#   exec nothing, see fault_alloc_case), so the
#   scheduler meets processes whose io_context or icq could not be made;
#   a process may fail, the kernel may not.
# The I/O must verify throughout and the device after; kmemleak, the last
# test, finds what a failure path leaked.
FAILSLAB=/sys/kernel/debug/failslab
FAILPAGE=/sys/kernel/debug/fail_page_alloc
# Where the failing processes read: past fault_fio_for's FAULT_ROUNDS rounds (48 MiB,
# 192 with FAULTS_LONG) on the 256 MiB fault device.
FAULT_PROC_MB=224
fault_alloc() {
	local scheds n=0 s prev
	if [ ! -d $FAILSLAB ] || [ ! -d $FAILPAGE ] || [ ! -e /proc/thread-self/fail-nth ]; then
		echo "kernel without failslab and fail_page_alloc in debugfs (CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC: the debug kernel's)" > /tmp/skip
		out "    1..0"
		return
	fi
	# One line of names: the first case's old scheduler is the last name.
	scheds=$(echo $(fault_scheds))
	fault_plan "$(echo $scheds | wc -w)" || return
	# The memory-backed null_blk allocates a sector's page at its first
	# write, in the context of whichever process dispatches the request:
	# a process with failing allocations that runs the queue may dispatch
	# fio's write, and null_blk then fails it with ENOSPC. Every page
	# fio's rounds write is therefore allocated here first.
	dd if=/dev/zero of="$FAULT_DEV" bs=1M count=$((FAULT_ROUNDS * $(fault_round_mb))) \
		oflag=direct status=none
	local a
	for a in $FAILSLAB $FAILPAGE; do
		echo 0 > $a/verbose
		echo N > $a/ignore-gfp-wait
		echo 0 > $a/probability
		echo 1 > $a/interval
		echo -1 > $a/times
		echo Y > $a/task-filter
	done
	echo N > $FAILPAGE/ignore-gfp-highmem
	echo 0 > $FAILPAGE/min-order
	prev=${scheds##* }
	for s in $scheds; do
		n=$((n + 1))
		fault_alloc_case $n "$s" "$prev"
		prev=$s
	done
	for a in $FAILSLAB $FAILPAGE; do
		echo 0 > $a/probability
		echo N > $a/task-filter
	done
	fault_dev_remove
}

# The Nth allocation of this shell's next command fails (fail-nth, for this
# thread only); fault_nth_left then gives how many of the N were left (0:
# the fault was injected) and stops it. The read fd is opened first and
# the write fd is held open, so neither counts as an allocation.
fault_nth_arm() {
	exec {FNTH_R}</proc/thread-self/fail-nth
	echo "$1" >&"$FNTH_W"
}
fault_nth_left() {
	local left
	read -r left <&"$FNTH_R"
	echo 0 >&"$FNTH_W"
	exec {FNTH_R}<&-
	FNTH_LEFT=$left
}

fault_alloc_case() { # n scheduler old-scheduler
	local n=$1 s=$2 old=$3 q fio_pid nth rc=1 cur="" step bad=""
	local points=0 took=0 absorbed=0 kept=0 fellback=0
	q=/sys/block/$FAULT_NULLB/queue
	step=$(fault_len 4 1)
	exec {FNTH_W}>/proc/thread-self/fail-nth
	fault_bg_start "$FAULT_DEV" 0 0
	# Each phase's seconds, for the line below.
	local t_sw=$SECONDS t_tun t_procs
	# The switch.
	nth=1
	while [ $nth -lt 5000 ]; do
		if ! set_sched "$FAULT_DEV" "$old"; then
			bad="$bad cannot_reselect_${old}_is_$(current_sched "$FAULT_DEV")"
			break
		fi
		fault_nth_arm $nth
		echo "$s" > $q/scheduler 2>/dev/null
		rc=$?
		fault_nth_left
		current_sched_r "$FAULT_DEV"; cur=$REPLY
		[ "$FNTH_LEFT" = 0 ] || break
		points=$nth
		if [ $rc = 0 ]; then
			absorbed=$((absorbed + 1))
			[ "$cur" = "$s" ] || bad="$bad took_but_is_$cur@$nth"
		elif [ "$cur" = "$old" ]; then
			kept=$((kept + 1))
		elif [ "$cur" = none ]; then
			fellback=$((fellback + 1))
		else
			bad="$bad failed_but_is_$cur@$nth"
		fi
		nth=$((nth + step))
	done
	if [ $rc = 0 ] && [ "$cur" = "$s" ]; then took=1; fi
	t_sw=$((SECONDS - t_sw)); t_tun=$SECONDS
	# Sysfs writes: each tunable's own value.
	local f v now wpoints=0 wfailed=0 ro=0
	set_sched "$FAULT_DEV" "$s" || bad="$bad cannot_select_$s"
	for f in $q/iosched/*; do
		[ -e "$f" ] || continue
		read -r v < "$f"
		# One that refuses its own value unprovoked is read-only.
		if ! echo "$v" > "$f" 2>/dev/null; then
			ro=$((ro + 1))
			continue
		fi
		nth=1
		while [ $nth -lt 500 ]; do
			fault_nth_arm $nth
			echo "$v" > "$f" 2>/dev/null
			rc=$?
			fault_nth_left
			[ "$FNTH_LEFT" = 0 ] || break
			wpoints=$((wpoints + 1))
			[ $rc = 0 ] || wfailed=$((wfailed + 1))
			read -r now < "$f"
			[ "$now" = "$v" ] || bad="$bad ${f##*/}_changed_to_$now@$nth"
			nth=$((nth + step))
		done
		[ $rc = 0 ] || bad="$bad ${f##*/}_refused_without_fault"
	done
	exec {FNTH_W}>&-
	t_tun=$((SECONDS - t_tun)); t_procs=$SECONDS
	# Processes whose allocations fail: subshells of this shell that read
	# the device with bash's own `read`, so that nothing but the read runs
	# with failing allocations. An exec would: its path walk and loader
	# read the guest's root, the host's over 9p, and a 9p request whose
	# allocation failed left every later exec failing (EINVAL) in every
	# process. They share one descriptor, set by dd at FAULT_PROC_MB past
	# fio's rounds, where a direct write has just put bytes without NULs
	# (`read -N` skips NULs); each reads the next 8 KiB, and with read-ahead
	# off each read is requests of its own, made with the process's new
	# io_context.
	local procs i pfailed=0 pids ra rfd
	procs=$(fault_len 40 400)
	read -r ra < $q/read_ahead_kb
	echo 0 > $q/read_ahead_kb
	yes | dd of="$FAULT_DEV" bs=1M seek=$FAULT_PROC_MB count=$(( procs / 128 + 1 )) \
		iflag=fullblock oflag=direct status=none
	exec {rfd}<"$FAULT_DEV"
	dd bs=1M skip=$FAULT_PROC_MB count=0 status=none <&$rfd
	for a in $FAILSLAB $FAILPAGE; do echo 20 > $a/probability; done
	for i in $(seq "$procs"); do
		( echo 1 > /proc/self/make-it-fail && read -r -N 8192 _ <&$rfd ) 2>/dev/null &
		pids="$pids $!"
		if [ $((i % 8)) = 0 ]; then
			for a in $pids; do wait "$a" || pfailed=$((pfailed + 1)); done
			pids=""
		fi
	done
	for a in $pids; do wait "$a" || pfailed=$((pfailed + 1)); done
	for a in $FAILSLAB $FAILPAGE; do echo 0 > $a/probability; done
	exec {rfd}<&-
	echo "$ra" > $q/read_ahead_kb
	t_procs=$((SECONDS - t_procs))
	fault_bg_wait
	out "    # $s (from $old): switch: $points allocation points tried (every ${step}th), $absorbed absorbed, $kept failed keeping $old, $fellback failed falling back to none, then $( [ $took = 1 ] && echo took || echo 'did not take'); tunables: $wpoints write points, $wfailed failed ($ro read-only ones left out); $procs processes with failing allocations, $pfailed failed; $(fault_totals_line); ${t_sw}s switching, ${t_tun}s writing tunables, ${t_procs}s in processes"
	fault_case $n "$s" "$bad" eval '[ -z "$bad" ] && [ $took = 1 ] && [ $points -gt 0 ] &&
		fault_io_clean && quick_verify "$FAULT_DEV" 200'
}

# Asks the host to run a monitor command for this guest (xtask's monitor
# thread: "del NAME" unplugs the disk configs/devices/guest.toml calls NAME,
# "add NAME" plugs it back with its drive) and waits up to 60 s for the
# answer; fails, with the host's answer in /tmp/monitor.err, unless it is ok.
MONITOR_SEQ=0
monitor_ask() {
	local d=/run/out/monitor i
	MONITOR_SEQ=$((MONITOR_SEQ + 1))
	mkdir -p $d
	echo "$*" > "$d/$MONITOR_SEQ.tmp" && mv "$d/$MONITOR_SEQ.tmp" "$d/$MONITOR_SEQ.req"
	for i in $(seq 600); do
		if [ -s "$d/$MONITOR_SEQ.resp" ]; then
			[ "$(head -1 "$d/$MONITOR_SEQ.resp")" = ok ] && return 0
			cat "$d/$MONITOR_SEQ.resp" > /tmp/monitor.err
			return 1
		fi
		sleep 0.1
	done
	echo "no answer from the host's monitor thread in 60 s" > /tmp/monitor.err
	return 1
}

# Where kernel thread $1 waits: its stack, one line.
kthread_stack() { # comm
	local p c
	for p in /proc/[0-9]*; do
		read -r c < "$p/comm" 2>/dev/null || continue
		[ "$c" = "$1" ] || continue
		tr '\n' ' ' < "$p/stack"
		return
	done
	echo "no $1 thread"
}

# Waits up to $2 seconds (of the wall clock: an exec of sleep can take half
# a second on the debug kernel) until block device $1 exists (or, with
# "gone", until it does not).
wait_block() { # name secs [gone]
	local end=$((SECONDS + $2))
	while [ $SECONDS -lt $end ]; do
		if [ "${3:-}" = gone ]; then [ -e "/sys/block/$1" ] || return 0
		else [ -b "/dev/$1" ] && return 0; fi
		sleep 0.1
	done
	return 1
}

# --- fault_hot_remove: a disk is removed through QEMU's monitor
# (device_del: an ACPI hot-unplug the guest acts on) while fio keeps
# requests queued in its scheduler, then added back (drive_add,
# device_add). Beside it, verified I/O runs on the fault device. The guest
# must stay up, the removed disk's fio must end (with errors) rather than
# hang, no other device may see an I/O error, the disk must come back under
# its name, take the scheduler again and verify. HOTPLUG_DEVS (job.env:
# name=path of each disk xtask can unplug) names the disks. With
# FAULTS_LONG, one case per disk and scheduler; otherwise one per disk, the
# disks taking the Rust elevators in turn.
fault_hot_remove() {
	local scheds n=0 s e name path cases=0 turn=0
	if [ -z "${HOTPLUG_DEVS:-}" ]; then
		echo "no disk QEMU can unplug (HOTPLUG_DEVS empty: the monitor is xtask's)" > /tmp/skip
		out "    1..0"
		return
	fi
	if [ -z "$(ls /sys/bus/pci/slots 2>/dev/null)" ]; then
		echo "no hotplug PCI slots (CONFIG_HOTPLUG_PCI_ACPI)" > /tmp/skip
		out "    1..0"
		return
	fi
	scheds=$(fault_scheds narrow)
	local -a rust=($(echo $scheds | tr ' ' '\n' | grep '^rust-'))
	[ ${#rust[@]} -gt 0 ] || rust=($scheds)
	if [ "${FAULTS_LONG:-0}" = 1 ]; then
		cases=$(( $(echo $HOTPLUG_DEVS | wc -w) * $(echo $scheds | wc -w) ))
	else
		cases=$(echo $HOTPLUG_DEVS | wc -w)
	fi
	fault_plan $cases || return
	for e in $HOTPLUG_DEVS; do
		name=${e%%=*}; path=${e#*=}
		if [ "${FAULTS_LONG:-0}" != 1 ]; then
			n=$((n + 1))
			hot_remove_case $n "$name" "$path" "${rust[turn % ${#rust[@]}]}"
			turn=$((turn + 1))
			continue
		fi
		for s in $scheds; do
			n=$((n + 1))
			hot_remove_case $n "$name" "$path" "$s"
		done
	done
	fault_dev_remove
}

# How long (wall-clock seconds) a hot-plug step may take before the case
# calls it hung: a hang detector, not a timing check (the debug kernel
# under TCG on a loaded host is slow at every step). The case reports the
# seconds each step took.
HOTPLUG_WAIT=300

hot_remove_case() { # n name path scheduler
	local n=$1 name=$2 path=$3 s=$4 dev bad="" fio_pid errs_before errs_other i
	dev=$(devname "$path")
	if ! set_sched "$path" "$s"; then
		out "    not ok $n ${name}_$s # cannot select $s on $dev"
		return
	fi
	errs_before=$(dmesg | grep -i 'i/o error' | grep -vc " $dev")
	fault_bg_start "$FAULT_DEV" 0 0
	# allow_file_create=0: a time-based job reopens its file when a pass
	# ends, and once the disk is gone fio would make /dev/$dev a regular
	# file, where devtmpfs then cannot put the disk's node back.
	fio --name=doomed --filename="$path" --direct=1 --ioengine=libaio --rw=randrw \
		--bs=4k --iodepth=32 --numjobs=2 --size=256M --time_based --runtime=120 \
		--allow_file_create=0 < /dev/null > /tmp/doomed.log 2>&1 &
	fio_pid=$!
	sleep 1
	local t0=$EPOCHREALTIME gone_s="" back_s=""
	if ! monitor_ask del "$name"; then
		bad="$bad del:$(tr '\n' ' ' < /tmp/monitor.err)"
	elif ! wait_block "$dev" $HOTPLUG_WAIT gone; then
		bad="$bad still_there_after_${HOTPLUG_WAIT}s"
	else
		gone_s=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	fi
	# The removed disk's fio ends on its own, with errors.
	local end=$((SECONDS + HOTPLUG_WAIT))
	while [ $SECONDS -lt $end ] && kill -0 $fio_pid 2>/dev/null; do sleep 0.1; done
	if kill -0 $fio_pid 2>/dev/null; then
		bad="$bad fio_on_removed_disk_still_running_${HOTPLUG_WAIT}s_later"
		kill -9 $fio_pid 2>/dev/null
	fi
	wait $fio_pid 2>/dev/null
	if [ -e "/dev/$dev" ] && [ ! -b "/dev/$dev" ]; then
		bad="$bad /dev/${dev}_made_a_$(stat -c %F "/dev/$dev" | tr ' ' _)"
		rm -f "/dev/$dev"
	fi
	t0=$EPOCHREALTIME
	if ! monitor_ask add "$name"; then
		bad="$bad add:$(tr '\n' ' ' < /tmp/monitor.err)"
	elif ! wait_block "$dev" $HOTPLUG_WAIT; then
		bad="$bad not_back_as_${dev}_after_${HOTPLUG_WAIT}s(/sys/block: $(ls /sys/block | tr '\n' ' ');"
		bad="$bad $dev: $(cat /sys/block/$dev/dev 2>&1); /dev/$dev: $(ls -l /dev/$dev 2>&1);"
		bad="$bad kdevtmpfs: $(kthread_stack kdevtmpfs))"
	else
		back_s=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
		set_sched "$path" "$s" || bad="$bad cannot_select_${s}_again"
		quick_verify "$path" 64 || bad="$bad no_verified_io_after_readding"
	fi
	fault_bg_wait
	errs_other=$(( $(dmesg | grep -i 'i/o error' | grep -vc " $dev") - errs_before ))
	out "    # $dev $s: gone ${gone_s:-?} s after device_del, back ${back_s:-?} s after device_add; removed disk's fio: $(grep -o 'err=[ 0-9]*' /tmp/doomed.log | head -1 | grep . || tail -1 /tmp/doomed.log); I/O errors elsewhere: $errs_other; fault device: $(fault_totals_line)"
	fault_case $n "${name}_$s" "$bad" eval '[ -z "$bad" ] && [ $errs_other = 0 ] && fault_io_clean'
}

# --- fault_soak (not in the default list; `cargo xtask test --soak M`):
# SOAK_MINUTES of verified mixed random reads and writes on the fault
# device, while one process switches its scheduler (every elevator)
# every 0.5 s, one writes its tunables (each one's own value, which must
# take or find the tunable gone with a switch, and bad values, which every
# rust-* elevator must refuse), one changes nr_requests, and waves of
# short-lived processes do direct I/O beside it. One case.
#
# The switcher and the tunable writer take turns on /tmp/soak.lock, so
# that the writer knows which elevator its bad values reach: the C
# references clamp out-of-range numbers into their bounds rather than
# refusing them (mq-deadline's STORE_FUNCTION takes -1 as its minimum),
# which is counted apart and fails nothing.
fault_soak() {
	local mins=${SOAK_MINUTES:-30} scheds fio_pid pids="" p
	# Every elevator, the C references included, on either kernel: the
	# switcher's whole point is the transitions between them.
	scheds=$(FULL_MATRIX=1 fault_scheds)
	fault_plan 1 || return
	rm -f /tmp/soak.*
	fault_bg_start "$FAULT_DEV" $((mins * 60)) 0 --rw=randrw
	fio_pid=$FAULT_BG
	soak_switcher "$fio_pid" "$scheds" > /tmp/soak.switch &
	pids="$pids $!"
	soak_tunables "$fio_pid" > /tmp/soak.tunables &
	pids="$pids $!"
	soak_procs "$fio_pid" > /tmp/soak.procs &
	pids="$pids $!"
	for p in $pids; do wait "$p"; done
	fault_bg_wait
	local sw tun procs
	sw=$(cat /tmp/soak.switch); tun=$(cat /tmp/soak.tunables); procs=$(cat /tmp/soak.procs)
	out "    # $mins min over $(echo $scheds | wc -w) schedulers: $sw; $tun; $procs; $(fault_totals_line)"
	fault_case 1 soak "" eval 'grep -q ", 0 bad\$" /tmp/soak.tunables &&
		grep -q " 0 failed" /tmp/soak.procs && fault_io_clean &&
		set_sched "$FAULT_DEV" none && quick_verify "$FAULT_DEV" 200'
	fault_dev_remove
}

soak_switcher() { # pid scheds
	local -a all=($2)
	local n=0 took=0 lk
	exec {lk}> /tmp/soak.lock
	while kill -0 "$1" 2>/dev/null; do
		n=$((n + 1))
		flock "$lk"
		set_sched "$FAULT_DEV" "${all[RANDOM % ${#all[@]}]}" && took=$((took + 1))
		flock -u "$lk"
		sleep 0.5
	done
	exec {lk}>&-
	echo "$took of $n switches took"
}

soak_tunables() { # pid
	local q=/sys/block/$FAULT_NULLB/queue good=0 refused=0 clamped=0 bad=0 f v b nr s lk
	exec {lk}> /tmp/soak.lock
	while kill -0 "$1" 2>/dev/null; do
		for f in $q/iosched/*; do
			[ -e "$f" ] || continue
			v=$(cat "$f" 2>/dev/null) || continue
			# A read-only one refuses every write.
			echo "$v" > "$f" 2>/dev/null && good=$((good + 1))
			# No switch until the bad values are written: they reach s.
			flock "$lk"
			s=$(current_sched "$FAULT_DEV")
			for b in abc -1 99999999999999999999; do
				if ! echo "$b" > "$f" 2>/dev/null; then
					refused=$((refused + 1))
				elif [ "${s#rust-}" = "$s" ]; then
					clamped=$((clamped + 1))
				else
					bad=$((bad + 1))
					echo "soak: $s: $f took '$b'" > /dev/kmsg
				fi
			done
			flock -u "$lk"
		done
		for nr in 8 64 256; do echo $nr > $q/nr_requests 2>/dev/null; sleep 0.1; done
		sleep 0.3
	done
	exec {lk}>&-
	echo "tunables: $good good writes took, $refused bad ones refused, $clamped taken by a C reference, $bad bad"
}

soak_procs() { # pid
	local started=0 failed=0 i pids
	while kill -0 "$1" 2>/dev/null; do
		pids=""
		for i in $(seq 16); do
			if [ $((i % 2)) = 0 ]; then
				dd if="$FAULT_DEV" of=/dev/null bs=4k count=16 iflag=direct skip=$((51200 + RANDOM % 896 * 16)) status=none &
			else
				dd if=/dev/zero of="$FAULT_DEV" bs=4k count=16 oflag=direct seek=$((51200 + RANDOM % 896 * 16)) status=none &
			fi
			pids="$pids $!"
			started=$((started + 1))
		done
		for i in $pids; do wait "$i" || failed=$((failed + 1)); done
		sleep 0.5
	done
	echo "$started short-lived processes, $failed failed"
}

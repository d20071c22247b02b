#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The "startup" suite (xtask/src/suite/startup/): application start-up
# time under background I/O.
#
# On each device of the plan: ext4, the applications' files and one large
# file per greedy reader and writer. The applications (STARTUP_APPS,
# name=kind or name=replay:/trace) are the tar stand-in (STARTUP_FILES small
# files in STARTUP_DIRS directories, read whole with tar) and recorded
# start-ups replayed by STARTUP_REPLAY (tools/startup-replay, which lays
# out their files under replay/<name>). The background loads
# (STARTUP_LOADS, names; `-` is a suite's one implicit load) each have
# STARTUP_LOAD_<i>_READERS readers and _WRITERS writers with their fio
# arguments, and _SYNC_S: seconds between the syncs run while writers write.
# job.env gives every STARTUP_* setting (configs/suites/startup*.toml and
# the suite's timing). Each plan line is one run:
#   select the scheduler, set nr_requests (unless STARTUP_NR_REQUESTS is 0:
#   the device's default), drop caches, start the load's readers and
#   writers (one fio process, each job wrapping round its own file), wait
#   until they do I/O and STARTUP_RAMP_S more, drop caches again, then time
#   the application's start-up cold, then stop the load, sync, drop caches
#   and time the same start-up with the device to itself (the floor).
# Plan lines (plan.tsv): id <TAB> device <TAB> scheduler <TAB> startup <TAB> app <TAB> load
# Results: /run/out/runs/<id>.json (the start-up), <id>.readers.json (fio's
# JSON for the readers, and the writers as a second group), <id>.replay.json
# and <id>.alone.json (a replay's own lines, loaded and alone), or <id>.err
# saying what went wrong.
. "$(dirname "$(readlink -f "$0")")/lib.sh"
[ -f /run/out/job.env ] && . /run/out/job.env

for v in STARTUP_APPS STARTUP_LOADS STARTUP_READER_MB \
	STARTUP_NR_REQUESTS STARTUP_RAMP_S STARTUP_CAP_S; do
	[ -n "${!v:-}" ] || { say "job.env has no $v"; exit 1; }
done

# The loads: index by name, and the most readers and writers of any (the
# files to make).
declare -A LOAD_INDEX=()
MAX_READERS=0 MAX_WRITERS=0
i=0
for l in $STARTUP_LOADS; do
	LOAD_INDEX[$l]=$i
	for v in READERS READER_FIO WRITERS SYNC_S; do
		v=STARTUP_LOAD_${i}_$v
		[ -n "${!v:-}" ] || { say "job.env has no $v"; exit 1; }
	done
	r=STARTUP_LOAD_${i}_READERS w=STARTUP_LOAD_${i}_WRITERS
	[ "${!r}" -gt $MAX_READERS ] && MAX_READERS=${!r}
	[ "${!w}" -gt $MAX_WRITERS ] && MAX_WRITERS=${!w}
	i=$((i + 1))
done

# The applications: kind and trace by name.
declare -A APP_KIND=() APP_TRACE=() APP_FILES=() APP_BYTES=()
for a in $STARTUP_APPS; do
	name=${a%%=*} spec=${a#*=}
	APP_KIND[$name]=${spec%%:*}
	[ "$spec" != "${spec#*:}" ] && APP_TRACE[$name]=${spec#*:}
	case ${APP_KIND[$name]} in
	tar) for v in STARTUP_FILES STARTUP_DIRS STARTUP_FILE_KB_MIN STARTUP_FILE_KB_MAX; do
		[ -n "${!v:-}" ] || { say "job.env has no $v"; exit 1; }
	done ;;
	replay) [ -x "${STARTUP_REPLAY:-}" ] || { say "job.env has no STARTUP_REPLAY"; exit 1; } ;;
	*) say "application $name: unknown kind ${APP_KIND[$name]}"; exit 1 ;;
	esac
done

# Sectors read from a device so far (/sys/block/<dev>/stat, field 3).
sectors_read() { awk '{ print $3 }' "/sys/block/$(devname "$1")/stat"; }

# Loads the tools the start-up runs (from the 9p root, not the device under
# test), so that its timing covers the application's reads only.
load_tools() { # app
	tar --version > /dev/null; cat --version > /dev/null
	timeout --version > /dev/null
	[ -n "${APP_TRACE[$1]:-}" ] && "$STARTUP_REPLAY" info "${APP_TRACE[$1]}" > /dev/null
	true
}

# The start-up of application $2 on mountpoint $1, within STARTUP_CAP_S
# (rc 124 beyond); sets APP_S to its time in seconds. The tar stand-in is
# timed from outside (its folder read whole); a replay times itself (first
# operation to last task done) and its line goes to file $3. The loaded
# and the alone start-up must be the same command to compare.
time_app() { # mountpoint app replay-output
	local t0 t1 rc=0
	if [ "${APP_KIND[$2]}" = tar ]; then
		t0=$EPOCHREALTIME
		timeout "$STARTUP_CAP_S" bash -c 'tar -cf - -C "$1" app | cat > /dev/null' _ "$1" || rc=$?
		t1=$EPOCHREALTIME
		APP_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
		return $rc
	fi
	timeout "$STARTUP_CAP_S" "$STARTUP_REPLAY" run "${APP_TRACE[$2]}" "$1/replay/$2" > "$3" || return $?
	APP_S=$(sed -n 's/.*"startup_s": \([0-9.]*\).*/\1/p' "$3")
	[ -n "$APP_S" ]
}

# Where a device's file system is mounted.
mountpoint_of() { echo "/tmp/startup-$(devname "$1")"; }

# Makes the file system and the files on a device.
prepare_device() { # device
	local dev=$1 mnt
	mnt=$(mountpoint_of "$dev")
	# The scheduler does not matter here; none is the quickest.
	set_sched "$dev" none || true
	mkfs.ext4 -q -F -N 4096 -J size=16 -E lazy_itable_init=0,lazy_journal_init=0 \
		"$dev" > /tmp/mkfs.log 2>&1 || { say "mkfs.ext4 $dev failed: $(tail -2 /tmp/mkfs.log)"; return 1; }
	mkdir -p "$mnt"
	# noatime: reading must not write; noinit_itable: nothing in the background.
	mount -t ext4 -o noatime,noinit_itable "$dev" "$mnt" || return 1
	mkdir -p "$mnt/big"
	local app
	for app in "${!APP_KIND[@]}"; do
		if [ "${APP_KIND[$app]}" = tar ]; then
			make_tar_app "$mnt" || return 1
			APP_FILES[$app]=$(find "$mnt/app" -type f | wc -l)
			APP_BYTES[$app]=$(find "$mnt/app" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
		else
			"$STARTUP_REPLAY" prepare "${APP_TRACE[$app]}" "$mnt/replay/$app" > /tmp/prepare.log 2>&1 ||
				{ say "preparing $app failed: $(tail -2 /tmp/prepare.log)"; return 1; }
			# A file trace's files, or a block trace's threads (one file each).
			APP_FILES[$app]=$("$STARTUP_REPLAY" info "${APP_TRACE[$app]}" |
				sed -n 's/.*"\(files\|threads\)": \([0-9]*\).*/\2/p')
		fi
		say "$(devname "$dev"): application $app (${APP_KIND[$app]}): ${APP_FILES[$app]} files"
	done
	local i
	for i in $(seq 0 $((MAX_READERS - 1))); do
		dd if=/dev/zero of="$mnt/big/r.$i" bs=1M count="$STARTUP_READER_MB" \
			oflag=direct status=none || return 1
	done
	for i in $(seq 0 $((MAX_WRITERS - 1))); do
		dd if=/dev/zero of="$mnt/big/w.$i" bs=1M count="$STARTUP_READER_MB" \
			oflag=direct status=none || return 1
	done
	sync
	say "$(devname "$dev"): ext4 with the applications, $MAX_READERS reader and $MAX_WRITERS writer files of $STARTUP_READER_MB MiB"
}

# The tar stand-in's files under mountpoint $1: sizes log-uniform in
# [KB_MIN, KB_MAX] KiB, files spread round-robin over the folders; fixed
# seed, the same set every boot.
make_tar_app() { # mountpoint
	local mnt=$1
	mkdir -p "$mnt/app"
	awk -v n="$STARTUP_FILES" -v d="$STARTUP_DIRS" -v lo="$STARTUP_FILE_KB_MIN" \
		-v hi="$STARTUP_FILE_KB_MAX" 'BEGIN {
		srand(20261130)
		for (i = 0; i < n; i++) {
			kb = exp(log(lo) + rand() * (log(hi) - log(lo)))
			printf "%d d%02d/f%03d\n", int(kb * 1024), i % d, i
		}
	}' > /tmp/appfiles
	local size path
	while read -r size path; do
		mkdir -p "$mnt/app/$(dirname "$path")"
		head -c "$size" /dev/urandom > "$mnt/app/$path" || return 1
	done < /tmp/appfiles
}

# Samples the device's scheduler tags (its driver tags under none) every
# 20 ms until sent TERM, then writes "samples full busy_sum" to file $2:
# how many samples found every tag taken, and the taken tags summed. A
# start-up that must sleep for a tag waits behind every request that holds
# one, whatever the scheduler would dispatch first. Builtins only (no
# process per sample): the guest's CPUs are the workload's too.
tag_sampler() { # device out
	local d f k v depth busy n=0 full=0 sum=0
	d=/sys/kernel/debug/block/$(devname "$1")/hctx0
	# sched_tags is there under none too, empty.
	f=$d/sched_tags
	grep -q '^depth=' "$f" 2>/dev/null || f=$d/tags
	[ -r "$f" ] || return 0
	trap 'echo "$n $full $sum" > "$2"; exit 0' TERM
	[ -p /tmp/tag-tick ] || mkfifo /tmp/tag-tick
	exec 9<> /tmp/tag-tick
	while :; do
		depth='' busy=''
		# The first depth= and busy= are the tag bitmap's (reserved tags follow).
		while IFS='=' read -r k v; do
			case $k in
			depth) [ -n "$depth" ] || depth=$v ;;
			busy) [ -n "$busy" ] || busy=$v ;;
			esac
		done < "$f"
		if [ -n "$busy" ] && [ -n "$depth" ]; then
			n=$((n + 1)) sum=$((sum + busy))
			[ "$busy" -lt "$depth" ] || full=$((full + 1))
		fi
		read -r -t 0.02 -u 9 _ || true
	done
}

# Starts load $2's fio (readers, then writers as a second group) on
# mountpoint $1, its output to $3.*; sets LOAD_PID, and SYNC_PID to the
# periodic syncs' loop when the load has writers and a sync interval.
start_load() { # mountpoint load out-base
	local mnt=$1 i=${LOAD_INDEX[$2]} out=$3 runtime=$((STARTUP_CAP_S + 120))
	local readers=STARTUP_LOAD_${i}_READERS rfio=STARTUP_LOAD_${i}_READER_FIO
	local writers=STARTUP_LOAD_${i}_WRITERS wfio=STARTUP_LOAD_${i}_WRITER_FIO
	local sync_s=STARTUP_LOAD_${i}_SYNC_S
	local wargs=()
	if [ "${!writers}" -gt 0 ]; then
		# shellcheck disable=SC2206
		wargs=(--name=writer --new_group --numjobs="${!writers}"
			--filename_format="$mnt/big/w.\$jobnum" --size="${STARTUP_READER_MB}M"
			${!wfio} --time_based --runtime=$runtime)
	fi
	# shellcheck disable=SC2086
	fio --output-format=json --output="$out.readers.json" --group_reporting \
		--name=reader --numjobs="${!readers}" --filename_format="$mnt/big/r.\$jobnum" \
		--size="${STARTUP_READER_MB}M" ${!rfio} --time_based --runtime=$runtime \
		"${wargs[@]}" < /dev/null > "$out.readers.log" 2>&1 &
	LOAD_PID=$! SYNC_PID=''
	if [ "${!writers}" -gt 0 ] && [ "${!sync_s}" -gt 0 ]; then
		(while :; do sync & sleep "${!sync_s}"; done) &
		SYNC_PID=$!
	fi
}

# Stops start_load's periodic syncs, if any.
stop_syncs() {
	[ -n "$SYNC_PID" ] || return 0
	kill "$SYNC_PID" 2>/dev/null
	wait "$SYNC_PID" 2>/dev/null
	SYNC_PID=''
}

# One run, the scheduler selected; writes runs/<id>.json or runs/<id>.err.
startup_run() { # id device scheduler app load
	local id=$1 dev=$2 sched=$3 app=$4 load=$5 r=/run/out/runs/$1 mnt
	mnt=$(mountpoint_of "$dev")
	if [ -z "${LOAD_INDEX[$load]:-}" ]; then
		echo "no load $load in job.env (STARTUP_LOADS: $STARTUP_LOADS)" > "$r.err"
		return
	fi
	# Switching elevators resets nr_requests; set it for every scheduler alike
	# (without one, nr_requests is the device's depth and cannot grow), or
	# leave the default the switch gave (STARTUP_NR_REQUESTS=0).
	if [ "$sched" != none ] && [ "$STARTUP_NR_REQUESTS" != 0 ] &&
		! echo "$STARTUP_NR_REQUESTS" > "/sys/block/$(devname "$dev")/queue/nr_requests"; then
		echo "cannot set nr_requests=$STARTUP_NR_REQUESTS under $sched" > "$r.err"
		return
	fi
	sync
	echo 3 > /proc/sys/vm/drop_caches
	local s0 fio_pid i
	s0=$(sectors_read "$dev")
	start_load "$mnt" "$load" "$r"
	fio_pid=$LOAD_PID
	# The head start counts from the readers' first I/O (fio itself takes a
	# while to start under TCG).
	for i in $(seq 300); do
		[ "$(sectors_read "$dev")" -gt "$s0" ] && break
		kill -0 $fio_pid 2>/dev/null || break
		sleep 0.1
	done
	sleep "$STARTUP_RAMP_S"
	if ! kill -0 $fio_pid 2>/dev/null; then
		echo "the readers stopped before the start-up: $(tail -3 "$r.readers.log" | tr '\n' ' ')" > "$r.err"
		stop_syncs
		return
	fi
	echo 3 > /proc/sys/vm/drop_caches
	load_tools "$app"
	local w0 w1 rc=0 loaded_s nr
	nr=$(cat "/sys/block/$(devname "$dev")/queue/nr_requests")
	w0=$(sectors_read "$dev")
	tag_sampler "$dev" "$r.tags" &
	local sampler_pid=$!
	time_app "$mnt" "$app" "$r.replay.json" || rc=$?
	loaded_s=$APP_S
	w1=$(sectors_read "$dev")
	kill -TERM $sampler_pid 2>/dev/null
	wait $sampler_pid 2>/dev/null
	local tags=(0 0 0)
	[ -s "$r.tags" ] && read -r -a tags < "$r.tags"
	local alive=1
	kill -0 $fio_pid 2>/dev/null || alive=0
	kill -INT $fio_pid 2>/dev/null
	wait $fio_pid
	local fio_rc=$?
	stop_syncs
	# The same start-up with the device to itself: the floor no scheduler
	# can beat, against which the loaded start-up is a slowdown. Measured
	# after, not before: timed just before the readers started, it once
	# made mq-deadline's loaded start-up 30 % slower (3.4 s against 2.5 s,
	# 4 repeats each; BFQ's no slower), which later tries did not repeat.
	local alone_s=0
	if [ $rc = 0 ] && [ $alive = 1 ]; then
		sync
		echo 3 > /proc/sys/vm/drop_caches
		load_tools "$app"
		if ! time_app "$mnt" "$app" "$r.alone.json"; then
			echo "the start-up of $app with no readers failed or took longer than ${STARTUP_CAP_S}s under $sched" > "$r.err"
			return
		fi
		alone_s=$APP_S
	fi
	if [ $rc = 124 ]; then
		echo "start-up took longer than ${STARTUP_CAP_S}s under $sched" > "$r.err"
	elif [ $rc != 0 ]; then
		echo "the start-up of $app failed (rc $rc): $(tail -c 300 "$r.replay.json" 2>/dev/null)" > "$r.err"
	elif [ $alive = 0 ]; then
		echo "the readers stopped during the start-up (fio rc $fio_rc): $(tail -3 "$r.readers.log" | tr '\n' ' ')" > "$r.err"
	else
		local bytes=${APP_BYTES[$app]:-}
		[ -n "$bytes" ] || bytes=$(sed -n 's/^{[^[]*"bytes": \([0-9]*\).*/\1/p' "$r.replay.json")
		printf '{"startup_s": %s, "alone_s": %s, "app_files": %s, "app_bytes": %s, "window_read_bytes": %s, "nr_requests": %s, "tag_samples": %s, "tags_full_samples": %s, "tags_busy_sum": %s}\n' \
			"$loaded_s" "$alone_s" "${APP_FILES[$app]}" "${bytes:-0}" $(( (w1 - w0) * 512 )) "$nr" \
			"${tags[0]}" "${tags[1]}" "${tags[2]}" > "$r.json"
	fi
}

# A run, and what it gave on the console; $5 is "app<TAB>load".
startup_run_and_say() { # id device scheduler case app-and-load
	local app=${5%%$'\t'*} load=${5#*$'\t'}
	startup_run "$1" "$2" "$3" "$app" "$load"
	if [ -f "/run/out/runs/$1.json" ]; then
		say "  $app ($load): $(cat "/run/out/runs/$1.json")"
	else
		say "  $app ($load) failed: $(cat "/run/out/runs/$1.err")"
	fi
}

run_plan startup startup_run_and_say prepare_device
for mnt in /tmp/startup-*; do
	[ -d "$mnt" ] && umount "$mnt" 2>/dev/null
done

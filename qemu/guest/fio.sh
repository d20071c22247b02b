#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# fio and jobs suites (xtask/src/suite/fio/, jobs/): each plan line is one fio run,
#   id <TAB> device path <TAB> scheduler <TAB> workload <TAB> fio arguments
# Results: $OUT/runs/<id>.json (fio's JSON), <id>.counters (the guest's
# counters over the run), or <id>.err saying what went wrong.
. "$(dirname "$(readlink -f "$0")")/lib.sh"
[ -f "$OUT/job.env" ] && . "$OUT/job.env"

# Counters of the whole guest that a run changes, one "name value" per line:
# context switches on every CPU (/proc/stat ctxt), workers and idle
# included. xtask divides their change over a run by fio's I/O count.
# (6.12's debugfs no longer counts hardware queue runs: hctx*/run is gone.)
counters() {
	awk '$1 == "ctxt" { print "ctx_switches", $2 }' /proc/stat
}

# With INSN_COUNT set (qemu-bench --count-insns), QEMU runs the insn_count
# plugin: writing a name into $OUT/insn.trigger makes it save the
# kernel instruction counts since the last call under that name (relative
# to $OUT; "discard" saves nothing) and start again from zero. It
# removes the trigger when done.
insn_phase() {
	[ -n "${INSN_COUNT:-}" ] || return 0
	echo "$1" >"$OUT/insn.trigger.tmp" &&
		mv "$OUT/insn.trigger.tmp" "$OUT/insn.trigger" || return 1
	local i=0
	while [ -e "$OUT/insn.trigger" ]; do
		i=$((i + 1))
		if [ "$i" -gt 600 ]; then
			say "the insn_count plugin did not answer within 30 s"
			rm -f "$OUT/insn.trigger"
			return 1
		fi
		sleep 0.05
	done
}

# One fio run, the scheduler selected.
fio_run() { # id device scheduler workload fio-arguments
	local id=$1 dev=$2 args=$5
	# With PERF set (qemu-bench --profile: the perf xtask checked), perf
	# samples every CPU while fio runs. Under TCG only the cpu-clock event exists; it cannot fire
	# while interrupts are off, so time in spin_lock_irqsave() sections is
	# charged to the _raw_spin_unlock_irqrestore() that ends them.
	local prof=""
	[ -n "${PERF:-}" ] && prof="$PERF record -q -e cpu-clock -a -g -F 999 -o /tmp/perf.data --"
	counters > "$OUT/runs/$id.before"
	insn_phase discard
	# shellcheck disable=SC2086
	if ! $prof fio --output-format=json --output="$OUT/runs/$id.json.tmp" \
		--filename="$dev" $args < /dev/null > "$OUT/runs/$id.log" 2>&1; then
		echo "fio failed: $(tail -3 "$OUT/runs/$id.log" | tr '\n' ' ')" > "$OUT/runs/$id.err"
		rm -f "$OUT/runs/$id.before"
		return
	fi
	insn_phase "runs/$id.insns"
	# The change of each counter over the run.
	counters | awk 'NR == FNR { a[$1] = $2; next } ($1 in a) { print $1, $2 - a[$1] }' \
		"$OUT/runs/$id.before" - > "$OUT/runs/$id.counters"
	rm -f "$OUT/runs/$id.before"
	if [ -n "$prof" ]; then
		"$PERF" report -i /tmp/perf.data --no-children --sort sym --stdio \
			> "$OUT/runs/$id.perf.txt" 2> "$OUT/runs/$id.perf.err" ||
			echo "perf report failed: $(tail -2 "$OUT/runs/$id.perf.err")" >> "$OUT/runs/$id.perf.txt"
		rm -f /tmp/perf.data
	fi
	mv "$OUT/runs/$id.json.tmp" "$OUT/runs/$id.json"
}

run_plan bench fio_run

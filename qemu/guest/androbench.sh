#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The androbench suite (xtask/src/suite/androbench/): Androbench's four
# storage tests on files of an ext4 file system.
#
# On each device of the plan, once: ext4, then read.dat
# (ANDROBENCH_READ_MB) and write.dat (ANDROBENCH_WRITE_MB) written in full.
# Each plan line is one run, the scheduler selected:
#   id <TAB> device <TAB> scheduler <TAB> test <TAB> fio arguments
# where @MNT@ in the arguments stands for the device's mount point; the
# caches are dropped, then fio runs. Results: /run/out/runs/<id>.json
# (fio's JSON) or <id>.err saying what went wrong.
. "$(dirname "$(readlink -f "$0")")/lib.sh"
[ -f /run/out/job.env ] && . /run/out/job.env

for v in ANDROBENCH_READ_MB ANDROBENCH_WRITE_MB; do
	[ -n "${!v:-}" ] || { say "job.env has no $v"; exit 1; }
done

mountpoint_of() { echo "/tmp/androbench-$(devname "$1")"; }

# ext4 and the two files on a device.
prepare_device() { # device
	local dev=$1 mnt f mb
	mnt=$(mountpoint_of "$dev")
	set_sched "$dev" none || true
	mkfs.ext4 -q -F -N 4096 -J size=16 -E lazy_itable_init=0,lazy_journal_init=0 "$dev" > /tmp/mkfs.log 2>&1 ||
		{ say "mkfs.ext4 $dev failed: $(tail -2 /tmp/mkfs.log)"; return 1; }
	mkdir -p "$mnt"
	mount -o noatime "$dev" "$mnt" || { say "mounting $dev failed"; return 1; }
	for f in read:$ANDROBENCH_READ_MB write:$ANDROBENCH_WRITE_MB; do
		mb=${f#*:}
		dd if=/dev/urandom of="$mnt/${f%%:*}.dat" bs=1M count="$mb" conv=fsync status=none ||
			{ say "writing $mnt/${f%%:*}.dat failed"; return 1; }
	done
	sync
}

androbench_run() { # id device scheduler test fio-arguments
	local id=$1 dev=$2 args=$5 mnt r=/run/out/runs/$1
	mnt=$(mountpoint_of "$dev")
	sync
	echo 3 > /proc/sys/vm/drop_caches
	# shellcheck disable=SC2086
	if ! fio --output-format=json --output="$r.json.tmp" ${args//@MNT@/$mnt} \
		< /dev/null > "$r.log" 2>&1; then
		echo "fio failed: $(tail -3 "$r.log" | tr '\n' ' ')" > "$r.err"
		return
	fi
	mv "$r.json.tmp" "$r.json"
}

run_plan androbench androbench_run prepare_device

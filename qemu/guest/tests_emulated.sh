# SPDX-License-Identifier: GPL-2.0
# The in-guest tests of the emulated disks, sourced by tests.sh (whose
# `out` and `fio_q` they use): configs/devices/guest.toml's model devices,
# which ironlift-blkserve serves with a model's timing. They take
# EMULATED_DEVS (one disk of each single-disk emulated device) and RAID_DEVS
# (the four hdd-raptor disks) from job.env, and emulated_model_timing its
# jobs from /run/out/model_jobs.tsv. A missing tool or kernel feature
# fails them with the reason: they run only when asked for (`cargo xtask
# test --emulated-devices`).

EMULATED_TESTS="emulated_fs_verify emulated_md_raid5 emulated_model_timing"

# Fails, saying which, unless every command given is on the PATH (the
# guest runs the host's binaries: Debian e2fsprogs, xfsprogs, mdadm).
need_tools() {
	local t missing=""
	for t in "$@"; do command -v "$t" >/dev/null 2>&1 || missing="$missing $t"; done
	[ -z "$missing" ] && return 0
	echo "not on the host:$missing (Debian: e2fsprogs, xfsprogs, mdadm)"
	return 1
}

# Fails, saying so, unless the kernel offers file system $1.
need_fs() {
	grep -qw "$1" /proc/filesystems && return 0
	echo "the kernel has no $1 (configs/kernel/base.config: CONFIG_$(echo "$1" | tr a-z A-Z)_FS)"
	return 1
}

# mkfs $1 on $2, mount it, fio writes and verifies two files there, umount,
# and a read-only check of the file system. Prints why when it fails.
mkfs_verify() { # ext4|xfs device
	local fs=$1 dev=$2 mnt=/tmp/emulated-mnt rc=0
	mkdir -p $mnt
	need_fs "$fs" || return 1
	case $fs in
	ext4) need_tools mkfs.ext4 fsck.ext4 && mkfs.ext4 -q -F "$dev" ;;
	xfs) need_tools mkfs.xfs xfs_repair && mkfs.xfs -q -f "$dev" ;;
	esac > /tmp/mkfs.log 2>&1 || { echo "mkfs: $(tail -2 /tmp/mkfs.log | tr '\n' ' ')"; return 1; }
	mount -t "$fs" "$dev" $mnt 2>/tmp/mount.err || { echo "mount: $(tr '\n' ' ' < /tmp/mount.err)"; return 1; }
	if ! fio_q --name=fsverify --directory=$mnt --direct=1 --ioengine=libaio \
		--rw=randwrite --bs=4k --iodepth=8 --size=4M --nrfiles=2 \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --randrepeat=0; then
		echo "fio verify: $(tail -2 /tmp/fio.log | tr '\n' ' ')"
		rc=1
	fi
	umount $mnt || { echo "umount failed"; return 1; }
	case $fs in
	ext4) fsck.ext4 -n -f "$dev" ;;
	xfs) xfs_repair -n "$dev" ;;
	esac > /tmp/fsck.log 2>&1 || { echo "check: $(tail -2 /tmp/fsck.log | tr '\n' ' ')"; rc=1; }
	return $rc
}

# --- emulated_fs_verify: ext4 and XFS on each emulated disk, each written
# and verified by fio and checked, under the disk's default scheduler.
emulated_fs_verify() {
	local n=0 dev fs why
	out "    1..$(( $(echo $EMULATED_DEVS | wc -w) * 2 ))"
	# shellcheck disable=SC2086
	wait_devices $EMULATED_DEVS > /tmp/wait.log
	for dev in $EMULATED_DEVS; do
		for fs in ext4 xfs; do
			n=$((n + 1))
			if [ ! -b "$dev" ]; then
				out "    not ok $n $(basename "$dev")_$fs # $dev missing"
			elif why=$(mkfs_verify $fs "$dev"); then
				out "    ok $n $(basename "$dev")_$fs"
			else
				out "    # $(devname "$dev") ($(current_sched "$dev")): $why"
				out "    not ok $n $(basename "$dev")_$fs # $why"
			fi
		done
	done
}

# --- emulated_md_raid5: md RAID5 over the four hdd-raptor disks assembles,
# holds an ext4 written and verified by fio, keeps a file's contents with
# one disk failed (reads rebuilt from parity), and stops and assembles
# again. The disks are fresh (zeros), whose parity is already consistent,
# so the array is created --assume-clean instead of resynced.
emulated_md_raid5() {
	local md=/dev/md0 mnt=/tmp/emulated-mnt why="" sum=""
	out "    1..4"
	# shellcheck disable=SC2086
	wait_devices $RAID_DEVS > /tmp/wait.log || why="disks missing: $(cat /tmp/wait.log)"
	[ -z "$why" ] && ! grep -q raid5 /proc/mdstat 2>/dev/null &&
		why="the kernel has no md RAID5 (CONFIG_BLK_DEV_MD, CONFIG_MD_RAID456)"
	[ -z "$why" ] && why=$(need_tools mdadm mkfs.ext4 fsck.ext4)
	if [ -n "$why" ]; then
		for n in 1 2 3 4; do out "    not ok $n raid5_step$n # $why"; done
		return
	fi
	# shellcheck disable=SC2086
	if mdadm --create $md --run --assume-clean --level=5 --raid-devices=4 --chunk=64 \
		$RAID_DEVS > /tmp/mdadm.log 2>&1 && grep -A1 "^md0 : active raid5" /proc/mdstat | grep -q "\[UUUU\]"; then
		out "    ok 1 assembles"
	else
		out "    # $(tr '\n' ' ' < /tmp/mdadm.log) $(tr '\n' ' ' < /proc/mdstat)"
		out "    not ok 1 assembles"
		for n in 2 3 4; do out "    not ok $n raid5_step$n # the array did not assemble"; done
		mdadm --stop $md > /dev/null 2>&1
		return
	fi
	if why=$(mkfs_verify ext4 $md); then
		out "    ok 2 ext4_fio_verify"
	else
		out "    not ok 2 ext4_fio_verify # $why"
	fi
	mkdir -p $mnt
	if mount $md $mnt && head -c 8M /dev/urandom > $mnt/f && sync &&
		sum=$(md5sum < $mnt/f) && umount $mnt && echo 3 > /proc/sys/vm/drop_caches &&
		mdadm $md --fail "${RAID_DEVS##* }" > /tmp/mdadm.log 2>&1 &&
		mount -o ro $md $mnt && [ "$(md5sum < $mnt/f)" = "$sum" ] && umount $mnt; then
		out "    ok 3 reads_with_a_failed_disk"
	else
		umount $mnt 2>/dev/null
		out "    # $(tr '\n' ' ' < /tmp/mdadm.log) $(tr '\n' ' ' < /proc/mdstat)"
		out "    not ok 3 reads_with_a_failed_disk"
	fi
	# shellcheck disable=SC2086
	if mdadm --stop $md > /tmp/mdadm.log 2>&1 &&
		mdadm --assemble --run $md $RAID_DEVS >> /tmp/mdadm.log 2>&1 &&
		grep -q "^md0 : active" /proc/mdstat && mount -o ro $md $mnt &&
		[ "$(md5sum < $mnt/f)" = "$sum" ] && umount $mnt; then
		out "    ok 4 stops_and_assembles_again"
	else
		umount $mnt 2>/dev/null
		out "    # $(tr '\n' ' ' < /tmp/mdadm.log) $(tr '\n' ' ' < /proc/mdstat)"
		out "    not ok 4 stops_and_assembles_again"
	fi
	mdadm --stop $md > /dev/null 2>&1
}

# --- emulated_model_timing: fixed fio jobs on the emulated disks, under
# none, each measured against what ironlift-devmodel predicts for the same
# job on the same export (host side: xtask/src/test.rs TIMING_JOBS). The
# jobs are ones whose device time is long next to the guest's own path
# (a TCG guest spends about 0.5 ms on a request), so the guest measures
# the model rather than itself. Each job has a negative control: the same
# job on another emulated disk, whose model predicts a figure well apart,
# judged against the first disk's model: it must miss the band, or the
# band cannot tell one device's timing from another's. Each line of
# /run/out/model_jobs.tsv:
#   name <TAB> disk <TAB> iops|mb_s <TAB> model's figure <TAB> fio arguments <TAB> control disk

# The figure ($1: iops or mb_s) of fio's terse v3 output in /tmp/fio.out:
# read KiB/s and IOPS are fields 7 and 8, write's 48 and 49; a job does
# one of the two.
model_job_figure() {
	awk -F';' -v m="$1" '{
		bw = $7 + $48; iops = $8 + $49
		printf "%.1f", (m == "iops") ? iops : bw * 1024 / 1e6 }' /tmp/fio.out
}

# Runs fio's arguments $2 on disk $1 under none; the figure $3 in GOT, or
# why not in MODEL_ERR.
model_job_run() {
	GOT=""; MODEL_ERR=""
	wait_devices "$1" > /tmp/wait.log
	if [ ! -b "$1" ] || ! set_sched "$1" none; then
		MODEL_ERR="$1 missing or none not selectable"
		return 1
	fi
	# shellcheck disable=SC2086
	if ! fio_q --filename="$1" $2; then
		MODEL_ERR="fio: $(tail -2 /tmp/fio.log | tr '\n' ' ')"
		return 1
	fi
	GOT=$(model_job_figure "$3")
}

model_in_band() { # measured model
	awk -v g="$1" -v m="$2" 'BEGIN { r = g / m; exit !(r >= 0.85 && r <= 1.15) }'
}

emulated_model_timing() {
	local jobs=/run/out/model_jobs.tsv n=0 name dev metric model args ctl
	if [ ! -s $jobs ]; then
		out "    1..1"
		out "    not ok 1 model_jobs # $jobs missing or empty"
		return
	fi
	out "    1..$(( 2 * $(wc -l < $jobs) ))"
	while IFS=$'\t' read -r name dev metric model args ctl; do
		n=$((n + 1))
		if ! model_job_run "$dev" "$args" "$metric"; then
			out "    not ok $n $name # $MODEL_ERR"
		elif model_in_band "$GOT" "$model"; then
			out "    # $name on $(devname "$dev"): model $model $metric, guest $GOT"
			out "    ok $n $name"
		else
			out "    # $name on $(devname "$dev"): model $model $metric, guest $GOT: outside ±15 %"
			out "    not ok $n $name"
		fi
		n=$((n + 1))
		local cname="control_${name}_on_$(devname "$ctl")"
		if ! model_job_run "$ctl" "$args" "$metric"; then
			out "    not ok $n $cname # $MODEL_ERR"
		elif model_in_band "$GOT" "$model"; then
			out "    # $name on $(devname "$ctl"), judged against $(devname "$dev")'s model $model $metric: guest $GOT, inside ±15 %"
			out "    not ok $n $cname # another device's timing passed as this one's: the band tells nothing apart"
		else
			out "    # $name on $(devname "$ctl"), judged against $(devname "$dev")'s model $model $metric: guest $GOT, outside ±15 % as it must be"
			out "    ok $n $cname"
		fi
	done < $jobs
}

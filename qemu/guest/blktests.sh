#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs upstream blktests (`cargo xtask blktests`): the tree xtask fetched
# and built on the host is copied to the guest's tmpfs (blktests writes
# its config and scratch files beside itself; the root is read-only) and
# its `check` runs there, with every rust-* elevator loaded by
# setup_guest. Its output goes to /run/out/blktests.log as it comes; its
# results folder (on the tmpfs too, as are its tests' scratch files) is
# copied to /run/out/results when it ends. Each test's start is an
# "IRONLIFT: test" line, so that xtask's console scan names the test a
# kernel report came in.
#
# job.env gives BLKTESTS_DIR (the built tree), KERNEL_MODULES (the
# kernel's modules_install root), BLKTESTS_RUN (groups and tests for
# check), BLKTESTS_EXCLUDE, TEST_DEVS and BLKTESTS_TIMEOUT.
. "$(dirname "$(readlink -f "$0")")/lib.sh"
[ -f /run/out/job.env ] && . /run/out/job.env

# blktests' cgroup tests (block/027, throtl) find cgroup2 where it is mounted.
mkdir -p /sys/fs/cgroup
mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null ||
	say "cannot mount cgroup2 (its tests will say not run)"
[ -d "$BLKTESTS_DIR" ] || { say "no blktests tree at $BLKTESTS_DIR"; exit 1; }
# modprobe and modinfo find the kernel's own modules (scsi_debug) where
# xtask installed them; the host's /lib/modules, if any, are another
# kernel's. A host without one gets an overlay on /usr/lib (/lib's
# target) with the guest's tmpfs on top, to make the folder in.
if [ ! -d /lib/modules ]; then
	mkdir -p /tmp/.usr-lib/upper /tmp/.usr-lib/work
	mount -t overlay overlay -o lowerdir=/usr/lib,upperdir=/tmp/.usr-lib/upper,workdir=/tmp/.usr-lib/work /usr/lib &&
		mkdir -p /lib/modules
fi
if ! mount --bind "$KERNEL_MODULES/lib/modules" /lib/modules; then
	say "cannot bind $KERNEL_MODULES/lib/modules on /lib/modules"
	exit 1
fi
rm -rf /tmp/blktests
if ! cp -a "$BLKTESTS_DIR" /tmp/blktests; then
	say "cannot copy $BLKTESTS_DIR to /tmp/blktests"
	exit 1
fi
{
	echo "TEST_DEVS=($TEST_DEVS)"
	echo "TIMEOUT=$BLKTESTS_TIMEOUT"
	echo "EXCLUDE=($BLKTESTS_EXCLUDE)"
	# No syslog in the guest: the kernel log has check's test markers.
	echo "LOGGER_PROG=true"
} > /tmp/blktests/config
cd /tmp/blktests || exit 1
say "blktests: check $BLKTESTS_RUN (TEST_DEVS: $TEST_DEVS; excluded: ${BLKTESTS_EXCLUDE:-none})"
# shellcheck disable=SC2086
./check -o /tmp/blktests/results $BLKTESTS_RUN < /dev/null 2>&1 |
	while IFS= read -r l; do
		echo "$l" >> /run/out/blktests.log
		case "$l" in
		[a-z]*/[0-9][0-9][0-9]*\]) say "blktests: $l" ;;
		[a-z]*/[0-9][0-9][0-9]*) say "test ${l%% *}" ;;
		"    "*) echo "$l" ;;
		*) say "blktests: $l" ;;
		esac
	done
rc=${PIPESTATUS[0]}
cp -a /tmp/blktests/results /run/out/ || say "cannot copy blktests' results folder"
echo "$rc" > /run/out/blktests.rc
say "blktests: check finished (exit $rc)"
exit 0

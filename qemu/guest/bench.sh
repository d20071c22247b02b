#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs the benchmark job: the suite's runner, qemu/guest/<SUITE_KIND>.sh
# for the runner job.env names (fio, startup, androbench; a jobs suite's
# runs are fio.sh's), runs the plan xtask wrote (lib.sh run_plan).
here=$(dirname "$(readlink -f "$0")")
. "$here/lib.sh"
[ -f "$OUT/job.env" ] && . "$OUT/job.env"
case "${SUITE_KIND:-}" in
*/*|"") ;;
*) [ -x "$here/$SUITE_KIND.sh" ] && exec "$here/$SUITE_KIND.sh" ;;
esac
say "no runner for suite kind '${SUITE_KIND:-}'"
exit 1

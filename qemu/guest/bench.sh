#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs the benchmark job: the suite's runner, qemu/guest/<kind>.sh for the
# suite kind job.env names (SUITE_KIND: fio, startup), runs the plan xtask
# wrote (lib.sh run_plan).
here=$(dirname "$(readlink -f "$0")")
. "$here/lib.sh"
[ -f "$OUT/job.env" ] && . "$OUT/job.env"
case "${SUITE_KIND:-}" in
*/*|"") ;;
*) [ -x "$here/$SUITE_KIND.sh" ] && exec "$here/$SUITE_KIND.sh" ;;
esac
say "no runner for suite kind '${SUITE_KIND:-}'"
exit 1

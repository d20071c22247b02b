#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `cargo xtask devices` (xtask/src/calibrate.rs): ironlift-devmodel's fixed
# jobs on the emulated disks, scheduler none. Each plan line is one fio run,
#   id <TAB> disk <TAB> none <TAB> job <TAB> fio arguments
# Results: /run/out/runs/<id>.json (fio's JSON) or <id>.err saying what
# went wrong.
. "$(dirname "$(readlink -f "$0")")/lib.sh"
[ -f /run/out/job.env ] && . /run/out/job.env

devices_run() { # id disk scheduler job fio-arguments
	local id=$1 dev=$2 args=$5
	# shellcheck disable=SC2086
	if ! fio --output-format=json --output="/run/out/runs/$id.json.tmp" \
		--filename="$dev" $args < /dev/null > "/run/out/runs/$id.log" 2>&1; then
		echo "fio failed: $(tail -3 "/run/out/runs/$id.log" | tr '\n' ' ')" > "/run/out/runs/$id.err"
		return
	fi
	mv "/run/out/runs/$id.json.tmp" "/run/out/runs/$id.json"
}

run_plan devices devices_run

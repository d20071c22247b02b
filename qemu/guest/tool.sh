#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The "tool" suites (xtask/src/suite/tool/): a benchmark tool run on a file
# system on the device, or on an md RAID over the device's disks; xtask
# reads the tool's own output.
#
# job.env: TOOL_FS (ext4 or xfs) and TOOL_MKFS (mkfs's options);
# TOOL_RAID_LEVEL and TOOL_RAID_CHUNK_KB (md RAID over every disk of the
# device, made with --assume-clean: no resync runs under the benchmark;
# empty: the file system on the device); TOOL_MEMBERS ('path=disk,disk
# ...': each device's disks, which all get the run's scheduler: md itself
# has none); TOOL_RUNTIME_S (the time-based tools' run time); TOOL_FSBENCH
# (tools/fsbench, built for the host).
# Plan lines: id <TAB> device <TAB> scheduler <TAB> workload <TAB> tool args
# Results: /run/out/runs/<id>.out (the tool's standard output), <id>.log
# (its errors), <id>.elapsed (wall seconds), or <id>.err saying what went
# wrong.
. "$(dirname "$(readlink -f "$0")")/lib.sh"
[ -f /run/out/job.env ] && . /run/out/job.env

for v in TOOL_FS TOOL_RUNTIME_S; do
	[ -n "${!v:-}" ] || { say "job.env has no $v"; exit 1; }
done

declare -A MNT=()
MD_NEXT=10

# Every disk of a device (the device itself unless TOOL_MEMBERS lists it).
members_of() { # device
	local e
	for e in ${TOOL_MEMBERS:-}; do
		[ "${e%%=*}" = "$1" ] && { echo "${e#*=}" | tr ',' ' '; return; }
	done
	echo "$1"
}

# The file system (on an md RAID over the disks, if asked) at /tmp/tool-<dev>.
prepare_device() { # device
	local dev=$1 target=$1 mnt d disks n
	mnt=/tmp/tool-$(devname "$dev")
	disks=$(members_of "$dev")
	for d in $disks; do set_sched "$d" none || true; done
	if [ -n "${TOOL_RAID_LEVEL:-}" ]; then
		n=$(echo "$disks" | wc -w)
		target=/dev/md$MD_NEXT
		MD_NEXT=$((MD_NEXT + 1))
		# shellcheck disable=SC2086
		mdadm --create "$target" --run --assume-clean --level="$TOOL_RAID_LEVEL" \
			--raid-devices="$n" --chunk="$TOOL_RAID_CHUNK_KB" $disks > /tmp/mdadm.log 2>&1 ||
			{ say "mdadm --create over $disks failed: $(tail -2 /tmp/mdadm.log | tr '\n' ' ')"; return 1; }
		say "$target: RAID$TOOL_RAID_LEVEL over $n disks, chunk $TOOL_RAID_CHUNK_KB KiB: $(grep -A1 "^$(basename "$target") :" /proc/mdstat | tail -1)"
	fi
	# shellcheck disable=SC2086
	"mkfs.$TOOL_FS" ${TOOL_MKFS:-} "$target" > /tmp/mkfs.log 2>&1 ||
		{ say "mkfs.$TOOL_FS $target failed: $(tail -2 /tmp/mkfs.log | tr '\n' ' ')"; return 1; }
	mkdir -p "$mnt"
	mount -t "$TOOL_FS" "$target" "$mnt" || return 1
	MNT[$dev]=$mnt
	say "$(devname "$dev"): $TOOL_FS on $target at $mnt"
	prepare_pgbench "$dev" "$mnt"
}

# The pgbench clusters the plan's runs on the device use, one per scale.
# One that cannot be made is removed, so that only its runs fail.
prepare_pgbench() { # device mnt
	local scale t0
	for scale in $(awk -F'\t' -v d="$1" '$2 == d && $5 ~ /^pgbench / { split($5, a, " "); print a[2] }' \
		"$OUT/plan.tsv" | sort -u); do
		t0=$EPOCHREALTIME
		if pgbench_init "$2" "$scale" > /tmp/pgbench-init.out 2>&1; then
			say "$(devname "$1"): pgbench cluster of scale $scale made in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }') s"
		else
			say "$(devname "$1"): making the pgbench cluster of scale $scale failed: $(tail -3 /tmp/pgbench-init.out | tr '\n' ' ')"
			rm -rf "$2/pg-$scale"
		fi
	done
}

# Keeps all but $1 MiB of the guest's available memory in a tmpfs (which,
# without swap, cannot be reclaimed), so that a file of twice $1 MiB is
# twice the memory the page cache has, as bonnie++ wants. Once per size.
pin_memory() { # MiB-to-leave
	local pin=/tmp/tool-pin avail fill
	[ "$(cat $pin.size 2>/dev/null)" = "$1" ] && return 0
	umount $pin 2>/dev/null
	mkdir -p $pin
	avail=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
	fill=$((avail - $1))
	[ "$fill" -gt 0 ] || { echo "$1" > $pin.size; return 0; }
	mount -t tmpfs -o size="${fill}m" tmpfs $pin &&
		dd if=/dev/zero of=$pin/fill bs=1M count="$fill" status=none 2>/dev/null
	echo "$1" > $pin.size
	say "memory: ${fill} MiB held in tmpfs, about $1 MiB left for the page cache" >&2
}

# bonnie++ with a file of twice the memory: `mem` the guest's whole memory,
# or a size in MiB (the rest held, pin_memory); files: -n (in 1024s). No
# per-character tests (-f): under TCG they time the emulated CPU's stdio.
tool_bonnie() { # dir mem|MiB files
	local ram=$2
	if [ "$ram" = mem ]; then
		ram=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
	else
		pin_memory "$ram" || return 1
	fi
	bonnie++ -d "$1" -u 0:0 -q -f -s $((2 * ram)) -r "$ram" -n "$3" -m ironlift
}

tool_dbench() { # dir clients
	dbench -D "$1" -t "$TOOL_RUNTIME_S" "$2"
}

# fs_mark writes its log into the current folder (/tmp).
tool_fs_mark() { # dir fs_mark-arguments...
	local dir=$1
	shift
	fs_mark -d "$dir" "$@"
}

# SQLite inserts (after PTS's pts/sqlite): each copy its own database, an
# indexed table, every insert its own transaction; time -p per copy, the
# copies at once.
tool_sqlite() { # dir copies inserts
	local dir=$1 i rc=0 pids=()
	awk -v n="$3" 'BEGIN {
		print "CREATE TABLE t (a INTEGER, b INTEGER, c VARCHAR(100));"
		print "CREATE INDEX tb ON t (b);"
		srand(1)
		for (i = 0; i < n; i++)
			printf "INSERT INTO t VALUES (%d, %d, \"row %d of the ironlift sqlite workload\");\n", i, int(rand() * 1000000), i
	}' > /tmp/inserts.sql
	for i in $(seq "$2"); do
		{ time -p sqlite3 "$dir/db$i" < /tmp/inserts.sql 2> "/tmp/sqlite.$i.err"; } 2> "/tmp/sqlite.$i.time" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || rc=1; done
	for i in $(seq "$2"); do
		cat "/tmp/sqlite.$i.err" >&2
		[ -s "/tmp/sqlite.$i.err" ] && rc=1
		cat "/tmp/sqlite.$i.time"
	done
	return $rc
}

# The CPU-bound control: gcc -O2 on a generated C file of n functions,
# source and object on the device.
tool_compile() { # dir functions
	awk -v n="$2" 'BEGIN {
		for (i = 0; i < n; i++) {
			printf "double f%d(const double *x, int k) {\n\tdouble s = 0;\n", i
			printf "\tfor (int j = 0; j < k; j++)\n\t\ts += x[j] * %d.5 / (j + %d);\n", i, i + 1
			printf "\treturn s > %d ? s - f%d(x, k / 2) : s;\n}\n", i, (i > 0 ? i - 1 : 0)
		}
	}' > "$1/gen.c" && sync && echo 3 > /proc/sys/vm/drop_caches &&
		{ time -p gcc -O2 -c "$1/gen.c" -o "$1/gen.o"; } 2>&1
}

# PostgreSQL's pgbench, TPC-B-like read-write, as user postgres (the server
# refuses root). Each scale's cluster lives on the device's file system at
# <mnt>/pg-<scale>, made and filled (initdb, pgbench -i -s scale) when the
# device is prepared, before its runs, and kept for them; the server runs
# only during a run.
PG_SOCK=/tmp/pg-sock

pg_bin() {
	local bin
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
	[ -x "$bin/postgres" ] || { echo "no PostgreSQL server (Debian: postgresql)" >&2; return 1; }
	echo "$bin"
}

pg_ctl_as() { # bin cluster start|stop
	if [ "$3" = start ]; then
		runuser -u postgres -- "$1/pg_ctl" -D "$2/data" -l /tmp/pg.log -w \
			-o "-k $PG_SOCK -c listen_addresses=''" start > /dev/null || { cat /tmp/pg.log >&2; return 1; }
	else
		runuser -u postgres -- "$1/pg_ctl" -D "$2/data" -m fast -w stop > /dev/null
	fi
}

# The cluster of a scale, made and filled (untimed, under the scheduler
# `none` that preparing a device sets).
pgbench_init() { # mnt scale
	local bin pg=$1/pg-$2 rc=0
	bin=$(pg_bin) || return 1
	mkdir -p $PG_SOCK && chown postgres $PG_SOCK
	rm -rf "$pg" && mkdir -p "$pg" && chown postgres "$pg" &&
		runuser -u postgres -- "$bin/initdb" -D "$pg/data" -A trust -U postgres > /tmp/initdb.log 2>&1 ||
		{ cat /tmp/initdb.log >&2; return 1; }
	pg_ctl_as "$bin" "$pg" start || return 1
	runuser -u postgres -- "$bin/pgbench" -h $PG_SOCK -i -q -s "$2" postgres > /tmp/pgbench-init.log 2>&1 ||
		{ cat /tmp/pgbench-init.log >&2; rc=1; }
	pg_ctl_as "$bin" "$pg" stop || rc=1
	return $rc
}

tool_pgbench() { # dir scale clients
	local bin pg rc=0
	pg=$(dirname "$1")/pg-$2
	bin=$(pg_bin) || return 1
	[ -d "$pg/data" ] || { echo "no pgbench cluster of scale $2 on the device ($pg)" >&2; return 1; }
	pg_ctl_as "$bin" "$pg" start || return 1
	runuser -u postgres -- "$bin/pgbench" -h $PG_SOCK -c "$3" -j "$3" -T "$TOOL_RUNTIME_S" postgres || rc=1
	pg_ctl_as "$bin" "$pg" stop || rc=1
	return $rc
}

# fio on files in the folder, its arguments from the suite; time-based
# ones run TOOL_RUNTIME_S, the others their whole size (a runtime would cut
# them short).
tool_fio() { # dir fio-arguments...
	local dir=$1 a runtime=()
	shift
	for a in "$@"; do
		[ "$a" = --time_based ] && runtime=(--runtime="$TOOL_RUNTIME_S")
	done
	fio --name=tool --directory="$dir" --output-format=json --group_reporting \
		"${runtime[@]}" "$@"
}

# tools/fsbench's generators.
tool_blogbench() { "$TOOL_FSBENCH" blogbench "$@"; }
tool_compilebench() { "$TOOL_FSBENCH" compilebench "$@"; }

# One run: the scheduler on every disk of the device, a cold cache and an
# empty work folder, the tool, then its files removed.
tool_run() { # id device scheduler workload "tool args..."
	local id=$1 dev=$2 sched=$3 d w t0 t1 rc=0
	local out=/run/out/runs/$id
	for d in $(members_of "$dev"); do
		set_sched "$d" "$sched" ||
			{ echo "scheduler $sched not offered by $(devname "$d")" > "$out.err"; return; }
	done
	w=${MNT[$dev]}/work
	rm -rf "$w" && mkdir -p "$w" && sync && echo 3 > /proc/sys/vm/drop_caches
	# shellcheck disable=SC2086
	set -- $5
	local tool=${1//-/_}
	shift
	t0=$EPOCHREALTIME
	(cd /tmp && "tool_$tool" "$w" "$@") > "$out.out.tmp" 2> "$out.log" || rc=$?
	t1=$EPOCHREALTIME
	if [ $rc != 0 ]; then
		echo "$tool failed (rc $rc): $(tail -3 "$out.log" | tr '\n' ' ')" > "$out.err"
	else
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' > "$out.elapsed"
		mv "$out.out.tmp" "$out.out"
	fi
	rm -rf "$w"
	sync
}

run_plan tool tool_run prepare_device

# SPDX-License-Identifier: GPL-2.0
# The in-guest test of the old schedulers' elevators (historical_tunables),
# sourced by tests.sh, whose `out`, `tunable_case`, `bad_values` and
# SCHEDULERS/DEVICES it uses.

# The schedulers today's kernels lost, as Rust elevators: each line is the
# elevator, its historical name (the elevator alias), and its tunables with
# the defaults of the source it ports ("-": none; "ro": read-only, a value
# the scheduler measures). docs/design/old-schedulers.md.
HISTORICAL="rust-noop noop -
rust-sio sio async_read_expire=4000 async_write_expire=16000 fifo_batch=8 sync_read_expire=500 sync_write_expire=2000 writes_starved=0
rust-vr vr async_expire=5000 fifo_batch=1 rev_penalty=1 sync_expire=500
rust-as anticipatory antic_expire=6 est_time=ro read_batch_expire=500 read_expire=125 write_batch_expire=125 write_expire=250
rust-cfq cfq back_seek_max=16384 back_seek_penalty=2 fifo_expire_async=250 fifo_expire_sync=125 group_idle=8 group_idle_us=8000 low_latency=1 quantum=8 slice_async=40 slice_async_rq=2 slice_async_us=40000 slice_idle=0 slice_idle_us=0 slice_sync=100 slice_sync_us=100000 target_latency=300 target_latency_us=300000"

# The values historical_tunables writes to elevator $1's tunable $2 and
# expects EINVAL for: bad_values, but CFQ's tunables are unsigned 32-bit
# (2^31 is valid there, 2^32 is not), most of them at least 1, and
# low_latency is a flag.
historical_bad() { # elevator tunable
	case $1 in
	rust-cfq) echo "abc 12abc 0x 1.5 -1 4294967296 99999999999999999999" ;;
	*) echo "$bad_values" ;;
	esac
	case $1:$2 in
	rust-cfq:low_latency) echo 2 ;;
	rust-cfq:slice_idle* | rust-cfq:group_idle* | rust-cfq:back_seek_max) ;;
	rust-cfq:*) echo 0 ;;
	esac
}

# --- historical_tunables: each old scheduler's elevator that was built is
# selected by its historical name, lists exactly its source's tunables with
# their defaults, and each tunable rejects bad input with EINVAL keeping its
# value and takes a valid one.
historical_tunables() {
	local dev=${DEVICES%% *} q el alias want n=0 cases=0 got t f v
	q=/sys/block/$(devname "$dev")/queue
	while read -r el alias want; do
		case " $SCHEDULERS " in *" $el "*) ;; *) continue ;; esac
		[ "$want" = - ] && want=""
		cases=$((cases + 1 + $(echo $want | wc -w)))
	done <<< "$HISTORICAL"
	if [ $cases = 0 ]; then
		echo "none of $(echo "$HISTORICAL" | cut -d' ' -f1 | tr '\n' ' ')built" > /tmp/skip
		out "    1..0"
		return
	fi
	out "    1..$cases"
	while read -r el alias want; do
		case " $SCHEDULERS " in *" $el "*) ;; *) continue ;; esac
		[ "$want" = - ] && want=""
		n=$((n + 1))
		if ! echo "$alias" > "$q/scheduler" 2>/dev/null || [ "$(current_sched "$dev")" != "$el" ]; then
			out "    not ok $n ${el}_by_alias_$alias # '$alias' selects '$(current_sched "$dev")'"
			for t in $want; do n=$((n + 1)); out "    not ok $n $el:${t%%=*} # not selected"; done
			continue
		fi
		got=""
		for t in $(ls "$q/iosched" | sort); do
			case " $want " in
			*" $t=ro "*) got="$got $t=ro" ;;
			*) read -r v < "$q/iosched/$t"; got="$got $t=$v" ;;
			esac
		done
		if [ "${got# }" = "$want" ]; then
			out "    ok $n ${el}_by_alias_${alias}_with_the_source_defaults"
		else
			out "    # $el: want '$want', has '${got# }'"
			out "    not ok $n ${el}_by_alias_${alias}_with_the_source_defaults"
		fi
		for t in $want; do
			n=$((n + 1))
			f=$q/iosched/${t%%=*}
			if [ ! -e "$f" ]; then
				out "    not ok $n $el:${t%%=*} # missing"
			elif [ "${t#*=}" = ro ]; then
				if echo 5 > "$f" 2>/tmp/tun.err || ! grep -q "Invalid argument" /tmp/tun.err; then
					out "    not ok $n ${f##*/} # a write to a read-only value was not refused with EINVAL"
				else
					out "    ok $n ${f##*/}_read_only"
				fi
			else
				local good=$(( ${t#*=} + 3 ))
				[ "$el:${t%%=*}" = rust-cfq:low_latency ] && good=0
				# shellcheck disable=SC2046
				tunable_case $n "$f" $good $(historical_bad "$el" "${t%%=*}")
			fi
		done
	done <<< "$HISTORICAL"
}

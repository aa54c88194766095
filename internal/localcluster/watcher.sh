#!/bin/sh
# pgnvme durability watcher: keeps data_durability "preferred" writable
# between applies on the local platform. Written and started by
# terraform-provider-pgnvme (internal/localcluster); it rewrites this file.
#
# Every second it asks each member whether it is in recovery; on the one
# primary it counts the named standbys streaming and, when the primary's
# synchronous_standby_names is not the value for that count, sets it with
# ALTER SYSTEM and reloads. It exits when no member answers for GIVEUP
# seconds in a row, or when PIDFILE no longer holds its PID.
#
# Arguments: PIDFILE PSQL HOST USER GIVEUP STRIDE, then STRIDE arguments per
# member: NAME PORT PROBE LIT0 ... LITk. PROBE is SQL printing
# "in_recovery|count|matches" (count: the named standbys streaming; matches:
# whether synchronous_standby_names is the value for count); LITi is the SQL
# literal to set when i standbys stream. All SQL is rendered by the provider.
set -u
pidfile=$1 psql=$2 host=$3 user=$4 giveup=$5 stride=$6
shift 6
PGCONNECT_TIMEOUT=2 PGAPPNAME=pgnvme-durability PGOPTIONS='-c statement_timeout=5000'
export PGCONNECT_TIMEOUT PGAPPNAME PGOPTIONS

log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) [$$] $*"; }
owned() { [ "$(cat "$pidfile" 2>/dev/null)" = "$$" ]; }
sql() { port=$1; shift; "$psql" -X -A -t -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" -U "$user" -d postgres "$@" 2>&1; }

# check walks the members ($@): sets answered, primaries, and for the first
# primary target_name, target_port, target_lit (empty when it matches).
check() {
	while [ "$#" -ge "$stride" ]; do
		name=$1 port=$2 probe=$3
		if out=$(sql "$port" -c "$probe"); then
			answered=1
			rec=${out%%|*} rest=${out#*|}
			count=${rest%%|*} match=${rest#*|}
			if [ "$rec" = f ]; then
				primaries=$((primaries + 1))
				case $count in
				'' | *[!0-9]*) log "$name: unexpected probe output: $out" ;;
				*)
					if [ "$primaries" -eq 1 ]; then
						target_name=$name target_port=$port target_lit= target_count=$count
						if [ "$match" != t ]; then
							eval "target_lit=\${$((count + 4))}"
						fi
					fi
					;;
				esac
			fi
		fi
		shift "$stride"
	done
}

i=0
until owned; do # the launcher writes the PID file just after the start
	i=$((i + 1))
	if [ "$i" -gt 20 ]; then
		log "$pidfile does not name me: exiting"
		exit 0
	fi
	sleep 0.5 2>/dev/null || sleep 1
done
log "watching (give up after ${giveup}s without an answer)"
last=$(date +%s)
while owned; do
	answered= primaries=0 target_lit= target_name=
	check "$@"
	now=$(date +%s)
	if [ -n "$answered" ]; then
		last=$now
	elif [ $((now - last)) -ge "$giveup" ]; then
		log "no member answered for ${giveup}s: exiting"
		rm -f "$pidfile" 2>/dev/null
		exit 0
	fi
	if [ "$primaries" -gt 1 ]; then
		log "$primaries members run as primaries: changing nothing"
	elif [ -n "$target_lit" ]; then
		if out=$(sql "$target_port" -c "ALTER SYSTEM SET synchronous_standby_names = $target_lit" -c "SELECT pg_reload_conf()"); then
			log "$target_name: $target_count named standbys streaming: synchronous_standby_names = $target_lit"
		else
			log "$target_name: setting synchronous_standby_names failed: $out"
		fi
	fi
	sleep 1
done
log "$pidfile no longer names me: exiting"

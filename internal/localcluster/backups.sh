#!/bin/sh
# pgnvme backup scheduler: a local cluster's scheduled base backups, between applies. Written and started
# by terraform-provider-pgnvme (internal/localcluster); it rewrites this file.
#
# Every TICK seconds it finds the primary (the member not in recovery) and asks DECIDE (backup-decide.py,
# the program EC2 nodes run from pgnvme-backup.timer) whether a backup is due and which kind; it takes
# it on the primary with the primary's pgBackRest configuration, then expires what the retention lets go.
# The pgBackRest command lines are those of the EC2 nodes' backup.sh. It exits when PIDFILE no longer
# holds its PID. Before the backup, after a timeline switch, it verifies the archive with pgBackRest once
# the switch's WAL is archived, and records the verdict in the archive at VERIFY_PATH (as EC2 nodes do).
#
# Arguments: PIDFILE PSQL HOST USER PYTHON DECIDE TICK PGBACKREST STANZA SCHEDULE FULL_EVERY WINDOW_DAYS
# MIN_FULL VERIFY_PATH, then per member NAME PORT PGBACKREST_CONF.
set -u
pidfile=$1 psql=$2 host=$3 user=$4 python=$5 decide=$6 tick=$7 pgbackrest=$8 stanza=$9
shift 9
schedule=$1 full_every=$2 window=$3 min_full=$4 verify_path=$5
shift 5
PGCONNECT_TIMEOUT=2 PGAPPNAME=pgnvme-backups PGOPTIONS='-c statement_timeout=5000'
export PGCONNECT_TIMEOUT PGAPPNAME PGOPTIONS

log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) [$$] $*"; }
owned() { [ "$(cat "$pidfile" 2>/dev/null)" = "$$" ]; }

# primary walks the members ($@) and sets name, port and conf of the first one not in recovery.
primary() {
	name='' port='' conf=''
	while [ "$#" -ge 3 ]; do
		if [ "$("$psql" -X -A -t -q -h "$host" -p "$2" -U "$user" -d postgres -c 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ]; then
			name=$1 port=$2 conf=$3
			return 0
		fi
		shift 3
	done
	return 1
}

backrest() { "$pgbackrest" --config="$conf" --stanza="$stanza" "$@"; }
listing() { backrest --log-level-console=warn --output=json info; }

# verify verifies the archive after a timeline switch of the primary, when DECIDE says it is due, and
# records the verdict in the archive: the steps of the EC2 nodes' backup.sh.
verify() {
	row=$("$psql" -X -A -t -q -h "$host" -p "$port" -U "$user" -d postgres -c \
		"SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int, coalesce(last_archived_wal, ''), current_setting('data_directory') FROM pg_stat_archiver" 2>/dev/null) || return 0
	timeline=${row%%|*} row=${row#*|}
	archived=${row%%|*} datadir=${row#*|}
	due=$({ backrest --log-level-console=off repo-get "$verify_path" 2>/dev/null || true; } |
		"$python" "$decide" verify-due "$timeline" "$archived" "$datadir/pg_wal/archive_status") || {
		log "$name: whether the archive's verification is due could not be decided"
		return 0
	}
	case $due in
	verify*) log "$name: verifying the archive: ${due#* }" ;;
	wait*) log "$name: the archive's verification waits: ${due#* }" && return 0 ;;
	*) return 0 ;;
	esac
	out=$(mktemp) || return 0
	backrest --log-level-console=detail verify >"$out" 2>&1
	verdict=$("$python" "$decide" verdict pgbackrest "$timeline" "$out")
	rm -f "$out"
	log "$name: verification of timeline $timeline: $verdict"
	printf '%s\n' "$verdict" | backrest --log-level-console=warn repo-put "$verify_path" ||
		log "$name: the verification record could not be stored"
}

i=0
until owned; do # the launcher writes the PID file just after the start
	i=$((i + 1))
	if [ "$i" -gt 20 ]; then
		log "$pidfile does not name me: exiting"
		exit 0
	fi
	sleep 0.1
done
log "started: schedule '$schedule', a full backup every $full_every, recovery window $window days, at least $min_full full backups"

while owned; do
	if primary "$@"; then
		verify
		if decision=$(listing | "$python" "$decide" next pgbackrest "$schedule" "$full_every"); then
			action=${decision%% *}
			if [ "$action" != none ]; then
				log "$name: $decision"
				# The retention is the policy's, applied below: the backup's own expire keeps everything.
				if backrest --log-level-console=info --type="$action" --repo1-retention-full=9999999 backup; then
					if keep=$(listing | "$python" "$decide" keep pgbackrest "$window" "$min_full"); then
						log "$name: retention: keep $keep full backups (recovery window $window days, at least $min_full)"
						backrest --log-level-console=info --repo1-retention-full-type=count --repo1-retention-full="$keep" expire ||
							log "$name: expire failed"
					else
						log "$name: the retention could not be decided"
					fi
				else
					log "$name: the $action backup failed"
				fi
			fi
		else
			log "$name: whether a backup is due could not be decided"
		fi
	fi
	sleep "$tick"
done
log "$pidfile no longer names me: exiting"

#!/bin/bash
# pgnvme: the scheduled base backups of cluster {{.Cluster}}. pgnvme-backup.timer runs it every minute on
# every node; only the primary, as its Patroni REST API reports it, goes on. It reads the backup policy
# from Patroni's dynamic configuration (postgresql.pgnvme_backup: schedule, full_every, retention; an apply changes it
# in place), asks backup-decide.py whether a backup is due and which kind (the rule the local platform's
# scheduler runs too), takes it, then expires what the retention lets go with the WAL only it needs.
# Before that, after a timeline switch, it verifies the archive with the archiver's own tool once the
# switch's WAL is archived, and records the verdict in the archive ({{.VerifyPath}}), where a refresh reads it.
set -euo pipefail

PRIMARY_URL={{sh .PrimaryURL}}
CONFIG_URL={{sh .ConfigURL}}
DECIDE=(/usr/bin/python3 {{sh .Scripts.BackupDecide}})
DATA_DIR={{sh .DataDir}}
{{- if .WALG}}
ENV_FILE={{sh .WALGEnv}}
WALG={{sh .WALGBin}}
{{- else}}
# No --log-level-console here: each command sets its own (pgBackRest refuses an option given twice).
PGBACKREST=({{sh .PgBackRestBin}} --config={{sh .PgBackRestConf}} --stanza={{sh .Stanza}})
{{- end}}

log() { printf 'pgnvme-backup: %s\n' "$*"; }

code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10{{range .CurlTLS}} {{sh .}}{{end}} "$PRIMARY_URL" || true)
if [ "$code" != 200 ]; then
  exit 0 # not the primary: the primary takes the backups
fi
# The timeline the primary writes and the last segment its archiver pushed.
read -r timeline archived < <(psql -X -A -t -q -F ' '{{range .PsqlArgs}} {{sh .}}{{end}} -c "SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int, coalesce(last_archived_wal, '') FROM pg_stat_archiver") || true

# verify RECORD VERIFY PUT: the archive's verification after a timeline switch, when one is due
# (backup-decide.py verify-due). RECORD prints the last record, VERIFY runs the tool into a file, PUT
# stores a record read from stdin; the verdict is backup-decide.py's.
verify() {
  local due out verdict
  due=$({ $1 2>/dev/null || true; } | "${DECIDE[@]}" verify-due "$timeline" "$archived" "$DATA_DIR/pg_wal/archive_status") || return 1
  case $due in
  verify*) log "verifying the archive: ${due#* }" ;;
  wait*) log "the archive's verification waits: ${due#* }" && return 0 ;;
  *) return 0 ;;
  esac
  out=$(mktemp)
  $2 "$out" || true
  verdict=$("${DECIDE[@]}" verdict {{if .WALG}}walg{{else}}pgbackrest{{end}} "$timeline" "$out")
  rm -f "$out"
  log "verification of timeline $timeline: $verdict"
  printf '%s\n' "$verdict" | $3
}
config=$(curl -sSf --max-time 10{{range .CurlTLS}} {{sh .}}{{end}} "$CONFIG_URL")
policy=$(printf '%s' "$config" | "${DECIDE[@]}" policy{{range .BackupDefaults}} {{sh .}}{{end}})
IFS=$'\t' read -r schedule full_every window min_full <<<"$policy"
{{- if .WALG}}
set -a
# shellcheck source=/dev/null
. "$ENV_FILE"
set +a
listing() { "$WALG" backup-list --detail --json; }
record() { "$WALG" st cat {{sh .VerifyPath}}; }
# wal-g logs on stderr (the journal); the JSON verdict is its stdout.
run_verify() { "$WALG" wal-verify integrity timeline --json >"$1"; }
put_record() { "$WALG" st put --no-encrypt --no-compress -f --read-stdin {{sh .VerifyPath}}; }
verify record run_verify put_record || log "the archive's verification failed to run"
decision=$(listing | "${DECIDE[@]}" next walg "$schedule" "$full_every")
read -r action why <<<"$decision"
if [ "$action" = none ]; then
  exit 0
fi
log "$action backup ($why)"
full=()
if [ "$action" = full ]; then
  full=(--full)
fi
# A delta is taken against the chain since the newest full backup; at most full_every - 1 of them.
WALG_DELTA_MAX_STEPS=$((full_every - 1)) "$WALG" backup-push "${full[@]}" "$DATA_DIR"
keep=$(listing | "${DECIDE[@]}" keep walg "$window" "$min_full")
log "retention: keep $keep full backups (recovery window $window days, at least $min_full)"
"$WALG" delete retain FULL "$keep" --confirm
{{- else}}
listing() { "${PGBACKREST[@]}" --log-level-console=warn --output=json info; }
record() { "${PGBACKREST[@]}" --log-level-console=off repo-get {{sh .VerifyPath}}; }
run_verify() { "${PGBACKREST[@]}" --log-level-console=detail verify >"$1" 2>&1; }
put_record() { "${PGBACKREST[@]}" --log-level-console=warn repo-put {{sh .VerifyPath}}; }
verify record run_verify put_record || log "the archive's verification failed to run"
decision=$(listing | "${DECIDE[@]}" next pgbackrest "$schedule" "$full_every")
read -r action why <<<"$decision"
if [ "$action" = none ]; then
  exit 0
fi
log "$action backup ($why)"
# stanza-create does nothing when the stanza exists and matches this cluster.
"${PGBACKREST[@]}" --log-level-console=info stanza-create
# The retention is the policy's, applied below: the backup's own expire keeps everything.
"${PGBACKREST[@]}" --log-level-console=info --type="$action" --repo1-retention-full=9999999 backup
keep=$(listing | "${DECIDE[@]}" keep pgbackrest "$window" "$min_full")
log "retention: keep $keep full backups (recovery window $window days, at least $min_full)"
"${PGBACKREST[@]}" --log-level-console=info --repo1-retention-full-type=count --repo1-retention-full="$keep" expire
{{- end}}

#!/bin/bash
# pgnvme: Patroni's bootstrap.post_bootstrap for cluster {{.Cluster}}. Patroni runs it once, as postgres,
# on the node that has just initialised the cluster (initdb), with PostgreSQL running as the primary and
# a connection string as its last argument (unused: the archiver reaches the server over its socket).
{{- if .WALG}}
# It takes the first base backup (wal-g backup-push), so standbys can be seeded from the archive and
# point-in-time recovery starts at once.
{{- else}}
# It creates the pgBackRest stanza, without which every archive-push fails and WAL piles up on the
# instance store{{if .BackupOnCreate}}, then takes the first full backup, so standbys can be seeded from the archive and
# point-in-time recovery starts at once{{end}}.
{{- end}}
#
# It always exits 0. A non-zero exit makes Patroni cancel the initialisation: it stops PostgreSQL, moves
# the data directory aside, removes the initialize key and exits; systemd restarts it and it runs initdb
# again, a loop that never gives the cluster a database and fills the instance store with moved data
# directories, for a problem of the archive only. A failure is logged instead (into Patroni's journal),
# and pgnvme-backup.timer, whose script creates the stanza and takes a full backup while the archive holds none, tries again.
set -uo pipefail

DATA_DIR={{sh .DataDir}}
{{- if .WALG}}
ENV_FILE={{sh .WALGEnv}}
WALG={{sh .WALGBin}}
{{- else}}
PGBACKREST=({{sh .PgBackRestBin}} --config={{sh .PgBackRestConf}} --stanza={{sh .Stanza}} --log-level-console=info)
{{- end}}

log() { printf 'pgnvme-post-bootstrap: %s\n' "$*" >&2; }
{{- if .Source}}

# The cluster was restored from another archive (restore.sh): where the recovery stopped (the last WAL
# record and the last commit replayed, which PostgreSQL reports until it restarts, and Patroni restarts it
# only after this script), added to the planned record ({{.Source.Plan}}), goes to the cluster's own
# archive ({{.Source.RecordPath}}), where a refresh reads it.
record=""
if started=$(cat "$DATA_DIR/pgnvme-restore-started") && record=$(psql -X -A -t -q -v ON_ERROR_STOP=1{{range .PsqlArgs}} {{sh .}}{{end}} \
  -v planned="$(cat {{sh .Source.Plan}})" -v started="$started" <<'SQL'
SELECT (:'planned'::jsonb || jsonb_build_object(
  'reached_lsn', pg_last_wal_replay_lsn()::text,
  'reached_time', pg_last_xact_replay_timestamp(),
  'timeline', ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int,
  'wal_replayed_bytes', pg_wal_lsn_diff(pg_last_wal_replay_lsn(), (:'planned'::jsonb ->> 'backup_lsn_start')::pg_lsn),
  'seconds', round(extract(epoch FROM clock_timestamp()) - :'started'::numeric, 3),
  'finished_at', clock_timestamp()))::text
SQL
); then
  rm -f "$DATA_DIR/pgnvme-restore-started"
  log "restored: $record"
else
  record=""
  log "what the restore reached could not be read: the cluster's restored attribute stays empty"
fi
{{- end}}
{{- if .WALG}}

{{- if .Source}}
if [ -n "$record" ] && ! printf '%s' "$record" | (
  set -a
  # shellcheck source=/dev/null
  . "$ENV_FILE" && set +a && "$WALG" st put --no-encrypt --no-compress -f --read-stdin {{sh .Source.RecordPath}}
); then
  log "the restore's record could not be written to the archive"
fi
{{- end}}
{{- if .BackupOnCreate}}
log "wal-g backup-push $DATA_DIR"
if ! (
  set -a
  # shellcheck source=/dev/null
  . "$ENV_FILE" && set +a && "$WALG" backup-push "$DATA_DIR"
); then
  log "the first backup failed; pgnvme-backup.timer will try again, and standbys are copied from a member until then"
fi
{{- end}}
{{- else}}

# stanza-create does nothing when the stanza exists and matches this cluster.
if ! "${PGBACKREST[@]}" stanza-create; then
  log "stanza-create failed: WAL is not archived until pgnvme-backup.timer creates the stanza"
  exit 0
fi
{{- if .Source}}
if [ -n "$record" ] && ! printf '%s' "$record" | "${PGBACKREST[@]}" repo-put {{sh .Source.RecordPath}}; then
  log "the restore's record could not be written to the archive"
fi
{{- end}}
{{- if .BackupOnCreate}}
log "pgbackrest full backup of $DATA_DIR"
if ! "${PGBACKREST[@]}" --type=full backup; then
  log "the first backup failed; pgnvme-backup.timer will try again, and standbys are copied from a member until then"
fi
{{- end}}
{{- end}}
exit 0

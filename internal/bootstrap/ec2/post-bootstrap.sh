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
{{- if .WALG}}

log "wal-g backup-push $DATA_DIR"
if ! (
  set -a
  # shellcheck source=/dev/null
  . "$ENV_FILE" && set +a && "$WALG" backup-push "$DATA_DIR"
); then
  log "the first backup failed; pgnvme-backup.timer will try again, and standbys are copied from a member until then"
fi
{{- else}}

# stanza-create does nothing when the stanza exists and matches this cluster.
if ! "${PGBACKREST[@]}" stanza-create; then
  log "stanza-create failed: WAL is not archived until pgnvme-backup.timer creates the stanza"
  exit 0
fi
{{- if .BackupOnCreate}}
log "pgbackrest full backup of $DATA_DIR"
if ! "${PGBACKREST[@]}" --type=full backup; then
  log "the first backup failed; pgnvme-backup.timer will try again, and standbys are copied from a member until then"
fi
{{- end}}
{{- end}}
exit 0

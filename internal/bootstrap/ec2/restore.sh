#!/bin/bash
# pgnvme: Patroni's bootstrap method pgnvme_restore on node {{.Node}} of cluster {{.Cluster}}. The provider
# launches every node with it when every member of a cluster that had formed is lost (instance store and
# etcd went with the machines): Patroni runs it, as postgres, on the one node that takes the new etcd
# cluster's initialize key, instead of initdb. It copies the archive's newest base backup into the empty
# data directory and nothing else: Patroni then writes the recovery settings of the method (the node's own
# restore_command, recovery_target_timeline = latest) and starts PostgreSQL, which replays every archived
# WAL segment to the end of the archive, ends recovery on the next timeline and archives there (the same
# database system, so the same archive). post_bootstrap then takes a backup on that timeline. The other
# nodes are copied from this one as on any boot.
#
# A non-zero exit makes Patroni give up this bootstrap and release the initialize key; a node tries again.
set -euo pipefail

DATA_DIR={{sh .DataDir}}
{{- if .WALG}}
ENV_FILE={{sh .WALGEnv}}
WALG={{sh .WALGBin}}
{{- else}}
PGBACKREST=({{sh .PgBackRestBin}} --config={{sh .PgBackRestConf}} --stanza={{sh .Stanza}} --log-level-console=info)
{{- end}}

log() { printf 'pgnvme-restore: %s\n' "$*" >&2; }

install -d -m 0700 "$DATA_DIR"
if [ -n "$(ls -A "$DATA_DIR")" ]; then
  log "$DATA_DIR is not empty: a restore starts from an empty data directory"
  exit 1
fi
{{- if .WALG}}
set -a
# shellcheck source=/dev/null
. "$ENV_FILE"
set +a
log "wal-g backup-fetch $DATA_DIR LATEST"
"$WALG" backup-fetch "$DATA_DIR" LATEST
{{- else}}
# --type=none: pgBackRest writes no recovery settings, Patroni writes the method's (as for WAL-G).
log "pgbackrest restore --type=none into $DATA_DIR"
"${PGBACKREST[@]}" --type=none restore
{{- end}}
chmod 0700 "$DATA_DIR"
log "the base backup is in $DATA_DIR; PostgreSQL replays the archive from it"

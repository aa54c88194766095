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
{{- if .Source}}
#
# This cluster is created from another archive (the restore block): the method copies that archive's base
# backup {{.Source.Backup}} (the provider chose it: the newest that finished before the target), and
# Patroni's recovery settings read that archive's WAL up to the target, where PostgreSQL promotes. Nothing
# is archived while the node recovers; once promoted it archives to the cluster's own archive. When it
# starts it notes the time beside the data (pgnvme-restore-started), for the post-bootstrap script's record.
{{- end}}
#
# Each attempt is noted in the cluster's own archive ({{.AttemptsPath}}<node>-<nanoseconds>), and when this
# script fails, what failed beside it (the same name with .failed): the apply counts the attempts, and
# gives the restore up, saying why, once a restore has failed twice in a row.
#
# A non-zero exit makes Patroni give up this bootstrap and release the initialize key; a node tries again.
set -euo pipefail

DATA_DIR={{sh .DataDir}}
{{- if .Source}}
BACKUP={{sh .Source.Backup}}
{{- else}}
BACKUP=LATEST
{{- end}}
{{- if .WALG}}
ENV_FILE={{if .Source}}{{sh .Source.Env}}{{else}}{{sh .WALGEnv}}{{end}}
WALG={{sh .WALGBin}}
{{- else if .Source}}
PGBACKREST=({{sh .PgBackRestBin}} --config={{sh .Source.Conf}} --stanza={{sh .Source.Stanza}} --log-level-console=info --set="$BACKUP")
{{- else}}
PGBACKREST=({{sh .PgBackRestBin}} --config={{sh .PgBackRestConf}} --stanza={{sh .Stanza}} --log-level-console=info)
{{- end}}

log() { printf 'pgnvme-restore: %s\n' "$*" >&2; }

# note NAME: stdin into NAME under the attempts' directory of the cluster's own archive. A note that cannot
# be written is logged and does not stop the restore.
ATTEMPT={{sh .AttemptsPath}}{{sh .Node}}-$(date +%s%N)
{{- if .WALG}}
OWN_ENV={{sh .WALGEnv}}
{{- else}}
OWN=({{sh .PgBackRestBin}} --config={{sh .PgBackRestConf}} --stanza={{sh .Stanza}} --log-level-console=warn)
{{- end}}
note() {
  local text
  text=$(cat)
{{- if .WALG}}
  if ! printf '%s\n' "$text" | (
    set -a
    # shellcheck source=/dev/null
    . "$OWN_ENV" && set +a && "$WALG" st put --no-encrypt --no-compress -f --read-stdin "$1"
  ); then
{{- else}}
  if ! printf '%s\n' "$text" | "${OWN[@]}" repo-put "$1"; then
{{- end}}
    log "could not note $1 in the cluster's archive"
  fi
}
# run WHAT COMMAND...: COMMAND, whose errors, when it fails, are noted beside the attempt before the
# script exits with its status.
ERRORS=$(mktemp)
run() {
  local what=$1 rc=0
  shift
  "$@" 2>"$ERRORS" || rc=$?
  cat "$ERRORS" >&2
  if [ "$rc" -ne 0 ]; then
    printf '%s exited %s: %s\n' "$what" "$rc" "$(tail -n 5 "$ERRORS" | tr '\n' ' ')" | note "$ATTEMPT.failed"
    exit "$rc"
  fi
}
echo started | note "$ATTEMPT"

install -d -m 0700 "$DATA_DIR"
if [ -n "$(ls -A "$DATA_DIR")" ]; then
  log "$DATA_DIR is not empty: a restore starts from an empty data directory"
  exit 1
fi
# Patroni keeps the data directory of a failed bootstrap as $DATA_DIR.failed (one, replaced at each
# failure): an earlier attempt of this restore, of no use now and as large as the restore. It goes first,
# so that a restore tried again never needs the disk twice.
if [ -d "$DATA_DIR.failed" ]; then
  log "removing $DATA_DIR.failed, the data directory of an earlier failed attempt"
  rm -rf -- "$DATA_DIR.failed"
fi
{{- if .Source}}
started=$(date +%s.%N)
{{- end}}
{{- if .WALG}}
# The archive's environment in a subshell only: the notes go to the cluster's own archive.
fetch() (
  set -a
  # shellcheck source=/dev/null
  . "$ENV_FILE"
  set +a
  exec "$WALG" backup-fetch "$DATA_DIR" "$BACKUP"
)
log "wal-g backup-fetch $DATA_DIR $BACKUP"
run "wal-g backup-fetch of $BACKUP" fetch
{{- else}}
# --type=none: pgBackRest writes no recovery settings, Patroni writes the method's (as for WAL-G).
log "pgbackrest restore --type=none of backup $BACKUP into $DATA_DIR"
run "pgbackrest restore of $BACKUP" "${PGBACKREST[@]}" --type=none restore
{{- end}}
chmod 0700 "$DATA_DIR"
{{- if .Source}}
printf '%s\n' "$started" >"$DATA_DIR/pgnvme-restore-started"
{{- end}}
log "the base backup is in $DATA_DIR; PostgreSQL replays the archive from it"

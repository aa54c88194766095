#!/bin/bash
# pgnvme: the scheduled base backup of cluster {{.Cluster}} (pgnvme-backup.timer, {{.BackupSchedule}}).
# Every node runs it; only the primary, as its Patroni REST API reports it, takes the backup.
set -euo pipefail

PRIMARY_URL={{sh .PrimaryURL}}
DATA_DIR={{sh .DataDir}}
{{- if .WALG}}
ENV_FILE={{sh .WALGEnv}}
WALG={{sh .WALGBin}}
{{- else}}
PGBACKREST=({{sh .PgBackRestBin}} --config={{sh .PgBackRestConf}} --stanza={{sh .Stanza}} --log-level-console=info)
{{- end}}

code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$PRIMARY_URL" || true)
if [ "$code" != 200 ]; then
  echo "pgnvme-backup: not the primary (GET $PRIMARY_URL answered ${code:-nothing}); the primary takes the backup"
  exit 0
fi
{{- if .WALG}}
set -a
# shellcheck source=/dev/null
. "$ENV_FILE"
set +a
echo "pgnvme-backup: primary; wal-g backup-push $DATA_DIR"
exec "$WALG" backup-push "$DATA_DIR"
{{- else}}
echo "pgnvme-backup: primary; pgbackrest backup of $DATA_DIR"
# stanza-create does nothing when the stanza exists and matches this cluster.
"${PGBACKREST[@]}" stanza-create
exec "${PGBACKREST[@]}" backup
{{- end}}

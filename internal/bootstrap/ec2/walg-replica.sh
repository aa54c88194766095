#!/bin/bash
# pgnvme: Patroni's wal_g replica method on node {{.Node}} of cluster {{.Cluster}}: the latest base
# backup from the archive, fetched into the data directory. When it fails (before the first backup,
# say), Patroni tries the next method, pg_basebackup from a running member.
set -euo pipefail

ENV_FILE={{sh .WALGEnv}}
WALG={{sh .WALGBin}}
DATA_DIR={{sh .DataDir}}

set -a
# shellcheck source=/dev/null
. "$ENV_FILE"
set +a
install -d -m 0700 "$DATA_DIR"
"$WALG" backup-fetch "$DATA_DIR" LATEST
chmod 0700 "$DATA_DIR"

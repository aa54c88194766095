#!/bin/bash
# pgnvme: restore_command of node {{.Node}} in cluster {{.Cluster}} with WAL-G, as Patroni sets it:
#   restore_command = '{{.Scripts.WALGRestore}} %f %p'
# and, for the restore of a new cluster from another archive, with that archive's environment file:
#   restore_command = '{{.Scripts.WALGRestore}} %f %p ENV_FILE'
#
# wal-g wal-fetch exits 74 when the segment is not in the archive (WAL-G pull request 1195) and 1 on
# every other failure, while PostgreSQL reads any status from 1 to 125 as "not in the archive" and
# ends archive recovery there. So:
#   0    fetched;
#   1    not in the archive (wal-fetch's 74): the end of the archive, as PostgreSQL expects;
#   1    any other failure on a standby (standby.signal): it goes on streaming from the primary;
#   126  any other failure in archive recovery without standby.signal (a point-in-time restore):
#        PostgreSQL stops instead of ending recovery early at a segment it could not read.
set -uo pipefail

WALG={{sh .WALGBin}}
DATA_DIR={{sh .DataDir}}

if [ "$#" -ne 2 ] && [ "$#" -ne 3 ]; then
  echo "usage: $0 WALFILE PATH [ENV_FILE]" >&2
  exit 126
fi
ENV_FILE=${3:-{{sh .WALGEnv}}}
set -a
# shellcheck source=/dev/null
. "$ENV_FILE" || exit 126
set +a

"$WALG" wal-fetch "$1" "$2"
status=$?
case $status in
  0) exit 0 ;;
  74) exit 1 ;;
esac
echo "pgnvme: wal-g wal-fetch $1 failed with exit status $status" >&2
if [ -e "$DATA_DIR/standby.signal" ]; then
  exit 1
fi
exit 126

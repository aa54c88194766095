#!/bin/bash
# pgnvme: Patroni's postgresql.pre_promote on node {{.Node}} of cluster {{.Cluster}}. Patroni runs it, as
# postgres, once this standby has won the leader lock and before it promotes it. It hands the complete WAL
# segments this standby received to its own archiver: a standby marks every segment it receives done
# (archive_mode = on), archived or not, and after the promotion it archives only what it writes itself,
# so a segment the lost primary streamed but had not archived would be a hole in the archive for good
# (the primary's instance store went with its machine). Each complete segment marked done is marked
# ready again; the archiver pushes it after the promotion, and the checkpointer keeps it until then.
# Segments the old primary did archive are pushed again, which {{if .WALG}}WAL-G accepts with
# WALG_PREVENT_WAL_OVERWRITE when the content is the same{{else}}pgBackRest accepts when the checksum is the same{{end}}.
# The rule is bootstrap.SegmentsToHandOver's, which the local platform runs before its promotions.
#
# It always exits 0, and quickly: a non-zero exit makes Patroni give up the promotion and the leader lock.
set -uo pipefail
shopt -s nullglob

STATUS_DIR={{sh .DataDir}}/pg_wal/archive_status

log() { printf 'pgnvme-pre-promote: %s\n' "$*" >&2; }

handed=0
for f in "$STATUS_DIR"/*.done; do
  segment=${f##*/}
  segment=${segment%.done}
  [[ $segment =~ ^[0-9A-F]{24}$ ]] || continue
  if mv -f -- "$f" "$STATUS_DIR/$segment.ready"; then
    handed=$((handed + 1))
  fi
done
log "handed $handed WAL segments to the archiver before the promotion"
exit 0

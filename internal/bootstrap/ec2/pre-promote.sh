#!/bin/bash
# pgnvme: Patroni's postgresql.pre_promote on node {{.Node}} of cluster {{.Cluster}}. Patroni runs it, as
# postgres, once this standby has won the leader lock and before it promotes it. It hands the complete WAL
# segments this standby received to its own archiver: a standby marks every segment it receives done
# (archive_mode = on), archived or not, and after the promotion it archives only what it writes itself,
# so a segment the lost primary streamed but had not archived would be a hole in the archive for good
# (the primary's instance store went with its machine). Each complete segment marked done is marked
# ready again; so is each complete segment with no status at all (the walreceiver marks a segment only
# when it starts the next one, so the last one before a lost primary's WAL switch has none). The archiver
# pushes them after the promotion, and the checkpointer keeps them until then.
# Segments the old primary did archive are pushed again, which {{if .WALG}}WAL-G accepts with
# WALG_PREVENT_WAL_OVERWRITE when the content is the same{{else}}pgBackRest accepts when the checksum is the same{{end}}.
# The rule is bootstrap.SegmentsToHandOver's, which the local platform runs before its promotions.
#
# It always exits 0, and quickly: a non-zero exit makes Patroni give up the promotion and the leader lock.
set -uo pipefail
shopt -s nullglob
export LC_ALL=C

WAL_DIR={{sh .DataDir}}/pg_wal
STATUS_DIR=$WAL_DIR/archive_status

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

# The first segment this standby does not hold complete (log and segment, 16 hex digits): every segment
# before it was received to its end. Empty when the server cannot say; then only the marked ones go.
first_incomplete=$(timeout 10 psql -X -A -t -q{{range .PsqlArgs}} {{sh .}}{{end}} -c {{sh .HandOverQuery}} 2>/dev/null) || first_incomplete=
if [[ $first_incomplete =~ ^[0-9A-F]{16}$ && -d $STATUS_DIR ]]; then
  for f in "$WAL_DIR"/*; do
    segment=${f##*/}
    [[ $segment =~ ^[0-9A-F]{24}$ && ${segment:8} < "$first_incomplete" ]] || continue
    [[ -e $STATUS_DIR/$segment.done || -e $STATUS_DIR/$segment.ready ]] && continue
    if : >"$STATUS_DIR/$segment.ready"; then
      handed=$((handed + 1))
    fi
  done
else
  log "could not read the first incomplete segment (${first_incomplete:-nothing}): only the segments marked done are handed over"
fi
log "handed $handed WAL segments to the archiver before the promotion"
exit 0

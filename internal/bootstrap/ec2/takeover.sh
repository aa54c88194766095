#!/bin/bash
# pgnvme: the takeover of cluster {{.Cluster}}'s etcd by node {{.Node}} after a double loss, for the
# provider's aws accept_data_loss_at_lsn. pgnvme-takeover.timer runs it as root every 15 seconds on every
# node with an etcd member.
#
# When the primary and a standby of three nodes are lost together, the etcd member left has no majority:
# etcd serves nothing, so Patroni can elect no leader. The operator may accept the loss of what the
# survivor had not received, at its exact WAL position. The provider then writes "<node> <lsn>" (such as
# "pg-b 0/11016C80") into the String parameter {{.SSMTakeover}}; on that node this script makes its etcd
# member a new one-member cluster that keeps its data (etcd --force-new-cluster, which {{.Scripts.Etcd}}
# runs when it finds pgnvme-force-new-cluster in the data directory). The provider then asks Patroni to
# promote the node (POST /failover), deletes the parameter, and replaces the lost nodes, whose members
# join the new cluster.
#
# The instruction is acted on only when this member has no majority, the instruction names this node,
# and this node is exactly at the accepted position. The checks run cheapest first; when one says there
# is nothing to do, the script exits 0, quietly unless an operator needs to know why:
#  - this member answers healthy: the cluster has its majority, and forcing a new cluster would throw
#    the other members out of it. Outside a takeover every run ends here, so it comes first;
#  - the parameter is absent (the usual case), or cannot be read (logged: a missing ssm:GetParameter);
#  - the value is not "<node> <lsn>" (logged), or names another node: the takeover is the operator's
#    choice of one node;
#  - {{.TakeoverDir}}/done holds this instruction: it was done already. The new cluster is without a
#    majority again while a replaced node's member is added and not yet started, and forcing it again
#    then would throw that member out;
#  - PostgreSQL is not in recovery, or its WAL position (received_location, as Patroni reports it) is
#    not exactly the accepted one (logged): the operator accepted losing what this node had not received
#    at that position; at any other position the loss would not be the one accepted;
#  - the etcd data directory holds no member (logged): there is no data to keep.
# A takeover writes the force file and restarts etcd. Once etcd answers healthy, {{.TakeoverDir}}/done
# records the instruction, here or at a later run. When etcd does not become healthy in 60s, the script
# exits 1 and the next run tries again (etcd.sh has removed the force file; the run writes it again).
set -euo pipefail

NODE={{sh .Node}}
REGION={{sh .Region}}
{{- if .SSMEndpoint}}
SSM_ENDPOINT=(--endpoint-url {{sh .SSMEndpoint}})
{{- end}}
PARAMETER={{sh .SSMTakeover}}
CLIENT_URL={{sh .EtcdClientURL}}
ETCD_DATA_DIR={{sh .EtcdDataDir}}
FORCE_FILE="$ETCD_DATA_DIR/pgnvme-force-new-cluster"
# started holds the instruction whose forced restart was asked for, done the one that took effect.
STATE_DIR={{sh .TakeoverDir}}
HEALTH_WAIT_SECONDS=60

log() { printf 'pgnvme-takeover: %s\n' "$*" >&2; }
healthy() {
  etcdctl --endpoints="$CLIENT_URL"{{range .EtcdctlTLS}} {{sh .}}{{end}} --dial-timeout=2s --command-timeout=3s endpoint health >/dev/null 2>&1
}

if healthy; then
  if [ -e "$FORCE_FILE" ]; then
    # The majority came back before a restart of etcd took the file: no takeover happened, and the file
    # must not force a later start.
    rm -f "$FORCE_FILE" "$STATE_DIR/started"
    log "etcd has its majority again; the takeover asked for ($FORCE_FILE) is dropped"
  elif [ -e "$STATE_DIR/started" ]; then
    mv -f "$STATE_DIR/started" "$STATE_DIR/done"
    log "the takeover \"$(cat "$STATE_DIR/done")\" took effect: this member is a new etcd cluster"
  fi
  exit 0
fi

err=$(mktemp)
trap 'rm -f "$err"' EXIT
if ! value=$(aws ssm get-parameter --region "$REGION"{{if .SSMEndpoint}} "${SSM_ENDPOINT[@]}"{{end}} --name "$PARAMETER" \
  --query Parameter.Value --output text 2>"$err"); then
  if ! grep -q ParameterNotFound "$err"; then
    log "reading $PARAMETER failed (give the instance role ssm:GetParameter on it): $(head -c 500 "$err")"
  fi
  exit 0
fi

# canonical_lsn HI LO prints the LSN HI/LO (hex) as PostgreSQL 15 to 18 print it, upper-case without
# leading zeros, which is how the provider writes it. Comparing the text is then comparing the LSNs;
# PostgreSQL 19 pads the lower half to 8 digits, so both sides go through this.
canonical_lsn() { printf '%X/%X' "$((16#$1))" "$((16#$2))"; }

format='^([^[:space:]]+) ([0-9A-F]{1,8})/([0-9A-F]{1,8})$'
if ! [[ $value =~ $format ]]; then
  log "$PARAMETER holds \"$value\", not \"<node> <lsn>\" (such as \"$NODE 0/11016C80\"): ignored"
  exit 0
fi
if [ "${BASH_REMATCH[1]}" != "$NODE" ]; then
  exit 0
fi
lsn=$(canonical_lsn "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}")
if [ "$(cat "$STATE_DIR/done" 2>/dev/null)" = "$value" ]; then
  exit 0
fi

# received_location as Patroni reports it: the WAL received, else (no WAL receiver since the start) the
# WAL replayed.
if ! read -r recovery position < <(runuser -u postgres -- psql -X -A -t -q -F ' '{{range .PsqlArgs}} {{sh .}}{{end}} \
  -c 'SELECT pg_is_in_recovery(), coalesce(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())'); then
  log "the takeover \"$value\" waits: PostgreSQL does not answer"
  exit 0
fi
if [ "$recovery" != t ]; then
  log "the takeover \"$value\" is refused: PostgreSQL is not in recovery, so its position is no standby's"
  exit 0
fi
if ! [[ $position =~ ^([0-9A-F]{1,8})/([0-9A-F]{1,8})$ ]] ||
  [ "$(canonical_lsn "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}")" != "$lsn" ]; then
  log "the takeover \"$value\" is refused: this node is at WAL position ${position:-unknown}, not $lsn, and the loss is accepted at exactly $lsn"
  exit 0
fi
if [ ! -d "$ETCD_DATA_DIR/member" ]; then
  log "the takeover \"$value\" is refused: $ETCD_DATA_DIR holds no etcd data to keep"
  exit 0
fi

log "taking over etcd for \"$value\": this member's data becomes a new one-member cluster; the other members are lost"
install -d -m 0700 "$STATE_DIR"
printf '%s\n' "$value" >"$STATE_DIR/started"
# Owned by etcd, so that etcd.sh (User=etcd) removes it before it starts etcd with --force-new-cluster.
install -o etcd -g etcd -m 0600 /dev/null "$FORCE_FILE"
# Not waiting for the start job: the unit may wait minutes for etcd's readiness; etcd's health is what counts.
systemctl restart --no-block pgnvme-etcd.service
start=$SECONDS
until healthy; do
  if [ $((SECONDS - start)) -ge "$HEALTH_WAIT_SECONDS" ]; then
    log "etcd is not healthy ${HEALTH_WAIT_SECONDS}s after the forced restart; the next run tries again"
    exit 1
  fi
  sleep 2
done
mv -f "$STATE_DIR/started" "$STATE_DIR/done"
log "the takeover \"$value\" took effect in $((SECONDS - start))s: this member is a new etcd cluster of one member"

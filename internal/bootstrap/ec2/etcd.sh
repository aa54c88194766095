#!/bin/bash
# pgnvme: starts etcd member {{.Node}} of cluster {{.Cluster}} (pgnvme-etcd.service), with the settings
# of {{.EtcdEnvFile}} in its environment.
#
# The data directory is on the root volume, so a stop/start keeps it and etcd starts from it. When it
# also holds pgnvme-force-new-cluster, written by {{.Scripts.Takeover}} when the provider's instruction
# names this node after the cluster lost its majority, etcd starts from it with
# --force-new-cluster: this member's data becomes a new one-member cluster, the others are forgotten,
# and replaced nodes join it as below. The file is removed first, so only this start is forced (and a
# file found without data is removed too).
#
# When the data directory is empty, the other members say what this start is. A member that has ever
# run has published its client URLs; one that has not has none (etcdctl 3.4 still calls the members of
# the first start "started" by their names, so the client URLs tell, not the status):
#  - nobody answers within {{.EtcdJoinWaitSeconds}}s: the cluster's first start (initial-cluster-state new);
#  - this member is listed, never run, under the ID etcd gives it in the first start: that first
#    start is still under way, and this member joins it (new);
#  - this member is listed, never run, under another ID: an earlier run added it; it joins (existing);
#  - this member is listed and has run: the cluster knows an earlier incarnation of this node (a
#    replaced instance, a lost root volume). It removes that member, adds itself again and joins
#    (existing);
#  - this member is not listed: it adds itself and joins (existing), unless the cluster already has
#    its {{.EtcdMembers}} members: it never adds one more.
set -euo pipefail

NAME={{sh .Node}}
PEER_URL={{sh .EtcdPeerURL}}
DATA_DIR={{sh .EtcdDataDir}}
FORCE_FILE="$DATA_DIR/pgnvme-force-new-cluster"
# The members of the first start, and the ID etcd gives this one in it.
INITIAL_CLUSTER={{sh .EtcdInitialCluster}}
BOOTSTRAP_ID={{sh .EtcdBootstrapID}}
MEMBERS={{.EtcdMembers}}
OTHER_ENDPOINTS={{sh .EtcdOtherEndpoints}}
JOIN_WAIT_SECONDS={{.EtcdJoinWaitSeconds}}

log() { printf 'pgnvme-etcd: %s\n' "$*" >&2; }
die() {
  log "$*"
  exit 1
}
# start STATE CLUSTER execs etcd with that initial-cluster-state and initial-cluster.
start() {
  export ETCD_INITIAL_CLUSTER_STATE=$1 ETCD_INITIAL_CLUSTER=$2
  log "starting etcd: initial-cluster-state $1, initial-cluster $2"
  exec etcd
}
ctl() {
  etcdctl --endpoints="$OTHER_ENDPOINTS"{{range .EtcdctlTLS}} {{sh .}}{{end}} --dial-timeout=2s --command-timeout=5s "$@"
}

if [ -d "$DATA_DIR/member" ]; then
  if [ -e "$FORCE_FILE" ]; then
    rm -f "$FORCE_FILE"
    log "a takeover: this member's data becomes a new one-member cluster (etcd --force-new-cluster); the other members are lost"
    exec etcd --force-new-cluster
  fi
  log "$DATA_DIR holds this member's data; starting from it"
  exec etcd
fi
if [ -e "$FORCE_FILE" ]; then
  # Left without data to keep, it would force a later start, after this member has joined a cluster.
  rm -f "$FORCE_FILE"
  log "a takeover was asked for, but $DATA_DIR holds no member data to keep: ignoring it"
fi
if [ -z "$OTHER_ENDPOINTS" ]; then
  start new "$INITIAL_CLUSTER"
fi

log "$DATA_DIR is empty; asking the other members ($OTHER_ENDPOINTS) about the cluster"
deadline=$((SECONDS + JOIN_WAIT_SECONDS))
until list=$(ctl member list 2>/dev/null); do
  if [ "$SECONDS" -ge "$deadline" ]; then
    log "no other member answered in ${JOIN_WAIT_SECONDS}s: this is the cluster's first start"
    start new "$INITIAL_CLUSTER"
  fi
  sleep 2
done

# etcdctl member list: "ID, STATUS, NAME, PEER URLS, CLIENT URLS, IS LEARNER", one member a line.
members=$(awk -F', ' 'NF >= 4 { n++ } END { print n + 0 }' <<<"$list")
# This member's ID and whether it has run ("ran" with client URLs, "new" without).
read -r own_id own_state < <(awk -F', ' -v url="$PEER_URL" 'NF >= 4 && $4 == url { print $1, ($5 == "" ? "new" : "ran") }' <<<"$list") || true

# current_cluster prints the membership of $list as ETCD_INITIAL_CLUSTER, members without a name yet
# under their names in INITIAL_CLUSTER, this one under its own.
current_cluster() {
  awk -F', ' -v self="$NAME" -v url="$PEER_URL" -v initial="$INITIAL_CLUSTER" '
    BEGIN { n = split(initial, kv, ","); for (i = 1; i <= n; i++) { split(kv[i], p, "="); byurl[p[2]] = p[1] } }
    NF >= 4 {
      name = $3
      if ($4 == url) name = self
      else if (name == "" && ($4 in byurl)) name = byurl[$4]
      out = out (out == "" ? "" : ",") name "=" $4
    }
    END { print out }' <<<"$list"
}

# add_and_start adds this member to the cluster and joins it.
add_and_start() {
  local out cluster
  if [ "$members" -ge "$MEMBERS" ]; then
    die "the etcd cluster has $members members, none at $PEER_URL, and is meant to have $MEMBERS: refusing to add one more. Remove the member this node replaces (etcdctl --endpoints=$OTHER_ENDPOINTS member remove ID) and restart pgnvme-etcd"
  fi
  out=$(ctl member add "$NAME" --peer-urls="$PEER_URL")
  cluster=$(sed -n 's/^ETCD_INITIAL_CLUSTER="\(.*\)"$/\1/p' <<<"$out")
  [ -n "$cluster" ] || die "etcdctl member add printed no ETCD_INITIAL_CLUSTER: $out"
  start existing "$cluster"
}

case ${own_state:-} in
  new)
    if [ "$own_id" = "$BOOTSTRAP_ID" ]; then
      log "this member is still to join the cluster's first start; joining it"
      start new "$INITIAL_CLUSTER"
    fi
    log "this member was added as $own_id but never started; joining"
    start existing "$(current_cluster)"
    ;;
  ran)
    log "the cluster knows this member as $own_id but its data is gone (a new instance or root volume): replacing it"
    ctl member remove "$own_id"
    members=$((members - 1))
    add_and_start
    ;;
  "")
    log "the cluster has no member at $PEER_URL; adding this one"
    add_and_start
    ;;
esac

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
)

// handDir is where the hand restore writes its copy on a node's instance store, beside the node's own data.
const handDir = bootstrap.DefaultEC2MountPoint + "/bench-hand"

// archivedEnd is the archive's newest base backup and the timeline of its newest segment, read with
// pgBackRest on a running node of the cluster (what the apply's restore of every node lost restores from).
func (e *ec2Env) archivedEnd(ctx context.Context, instanceID string) (label string, timeline int, err error) {
	n, err := e.node(instanceID)
	if err != nil {
		return "", 0, err
	}
	out, err := n.Exec(ctx, "postgres", append(append([]string{"env"}, e.fx.Sim.InstanceEnv()...), "pgbackrest", "--stanza="+e.name, "--output=json", "info")...)
	if err != nil {
		return "", 0, err
	}
	var info []struct {
		Archive []struct {
			Max string `json:"max"`
		} `json:"archive"`
		Backup []struct {
			Label string `json:"label"`
		} `json:"backup"`
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		return "", 0, fmt.Errorf("reading pgbackrest info's JSON: %w\n%s", err, out)
	}
	if len(info) != 1 || len(info[0].Backup) == 0 || len(info[0].Archive) == 0 {
		return "", 0, fmt.Errorf("pgbackrest info names no backup and archive:\n%s", out)
	}
	last := info[0].Archive[len(info[0].Archive)-1].Max
	tl, err := strconv.ParseInt(last[:min(8, len(last))], 16, 32)
	if err != nil || len(last) != 24 {
		return "", 0, fmt.Errorf("the archive's newest segment %q is no WAL file name", last)
	}
	return info[0].Backup[len(info[0].Backup)-1].Label, int(tl), nil
}

// handRestore is the restore's floor: on a running node of the restored cluster, pgBackRest's own restore
// of the base backup label into a scratch directory on the instance store, then PostgreSQL replaying the
// archive's WAL of timeline to its end, as the apply's restore did (without etcd, Patroni or standbys). It
// returns the seconds from the restore's start until that copy answers out of recovery (polled every 100 ms;
// with hot_standby off it takes no connection before). The copy
// never archives (archive_mode off, no Patroni) and is removed.
func (e *ec2Env) handRestore(ctx context.Context, instanceID, label string, timeline int) (secs float64, err error) {
	n, err := e.node(instanceID)
	if err != nil {
		return 0, err
	}
	bin := fmt.Sprintf("/usr/lib/postgresql/%d/bin", e.major)
	// The instance's credentials, as the simulator gives them to the node's services (pgBackRest's and the
	// recovery's restore_command read them from the environment).
	var exports strings.Builder
	for _, kv := range e.fx.Sim.InstanceEnv() {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&exports, "export %s='%s'\n", k, v)
	}
	script := exports.String() + fmt.Sprintf(`set -e
d=%[1]s
rm -rf "$d" "$d.log"
mkdir -m 700 "$d"
pgbackrest --stanza=%[2]s --pg1-path="$d" --set=%[3]s --target-timeline=%[4]d --type=default restore
printf 'local all all trust\n' >"$d/bench-hand-hba.conf"
: >"$d/bench-hand-ident.conf"
cat >"$d/bench-hand.conf" <<EOF
listen_addresses = ''
port = 5499
unix_socket_directories = '$d'
hba_file = '$d/bench-hand-hba.conf'
ident_file = '$d/bench-hand-ident.conf'
hot_standby = off
archive_mode = off
shared_buffers = 64MB
EOF
%[5]s/pg_ctl -D "$d" -o "-c config_file=$d/bench-hand.conf" -l "$d.log" start >/dev/null
i=0
until [ "$(%[5]s/psql -h "$d" -p 5499 -d postgres -Atc 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ]; do
  i=$((i + 1))
  if [ "$i" -gt 36000 ]; then echo "recovery did not end in an hour" >&2; exit 1; fi
  sleep 0.1
done
`, handDir, e.name, label, timeline, bin)
	defer func() {
		cleanup := fmt.Sprintf(`%[1]s/pg_ctl -D %[2]s stop -m immediate >/dev/null 2>&1 || true; rm -rf %[2]s %[2]s.log`, bin, handDir)
		if _, cerr := n.Exec(context.Background(), "postgres", "/bin/sh", "-c", cleanup); cerr != nil {
			err = errors.Join(err, fmt.Errorf("removing the hand restore: %w", cerr))
		}
	}()
	start := time.Now()
	if out, err := n.Exec(ctx, "postgres", "/bin/sh", "-c", script); err != nil {
		log, _ := n.Exec(context.Background(), "postgres", "/bin/sh", "-c", "tail -n 20 "+handDir+".log")
		return 0, fmt.Errorf("the hand restore on %s: %w\n%s\n%s", n.Name, err, out, strings.TrimSpace(log))
	}
	return time.Since(start).Seconds(), nil
}

// node is the simulator's node of a running instance.
func (e *ec2Env) node(instanceID string) (*nodesim.Node, error) {
	n := e.fx.Bridge.Node(instanceID)
	if n == nil {
		return nil, fmt.Errorf("instance %s runs no simulated node", instanceID)
	}
	return n, nil
}

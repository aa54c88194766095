package ec2cluster_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
)

// TestAccEC2Cluster_simulated is issue 10's proof through Terraform: moto for the EC2, SSM and IAM APIs
// and the node simulator booting every instance moto runs from its user-data. One cluster goes through
// create, an empty plan, a client on connection_uri, a standby and then the primary terminated under a
// writer, a rolling change of instance type, import, and destroy with deletion protection.
func TestAccEC2Cluster_simulated(t *testing.T) {
	t.Parallel()
	e := newSimEnv(t)
	ctx := context.Background()
	// The whole lifecycle under IAM enforcement: the provider holds only the published operator policy, each
	// node only its role's.
	e.enforceIAM(ctx)
	e.config("sim", "m6id.large", true)

	// An interrupted create: Terraform (and the provider with it) killed once the first instance boots,
	// before anything is in state. The next apply plans to resume and finishes the cluster.
	e.killApplyAtFirstBoot()
	plan, _ := e.mustTerraform("plan", "-no-color", "-input=false")
	if !strings.Contains(plan, "resume") {
		t.Errorf("the plan after an interrupted create should say it resumes:\n%s", plan)
	}
	_, secs := e.mustTerraform("apply", "-auto-approve", "-no-color", "-input=false")
	st := e.state()
	t.Logf("create resumed after an interruption: %.0f s; synchronous_standby_names %q", secs, st.SynchronousStandbyNames)
	zones := map[string]bool{}
	for _, n := range st.Nodes {
		zones[n.Zone] = true
		if n.Host != st.AWS.PrivateIPs[n.Name] || n.State != "running" {
			t.Errorf("node %s: host %s state %s; want its interface's address %s, running", n.Name, n.Host, n.State, st.AWS.PrivateIPs[n.Name])
		}
	}
	if len(st.Nodes) != 3 || len(zones) != 3 || len(st.AWS.InstanceIDs) != 3 || len(st.AWS.NetworkInterfaces) != 3 {
		t.Fatalf("want 3 nodes in 3 zones with 3 instances and 3 interfaces: %+v", st)
	}
	if !strings.HasPrefix(st.SynchronousStandbyNames, "ANY 1 (") {
		t.Errorf("synchronous_standby_names = %q; want ANY 1 (...)", st.SynchronousStandbyNames)
	}
	passwords := e.passwords(st)
	e.checkInstances(st, passwords)
	ips := make([]string, 0, 3)
	for _, n := range st.Nodes {
		ips = append(ips, n.Host)
	}
	slices.Sort(ips)
	lb := e.loadBalancerTargets(ctx, "pgnvme-sim")
	if st.AWS.LoadBalancerDNS == "" || len(lb) != 2 || !slices.Equal(lb["pgnvme-sim-rw /primary"], ips) || !slices.Equal(lb["pgnvme-sim-ro /replica"], ips) {
		t.Errorf("load balancer %q: target groups %v; want pgnvme-sim-rw (/primary) and pgnvme-sim-ro (/replica), each with the nodes' addresses %v", st.AWS.LoadBalancerDNS, lb, ips)
	}
	// The group and the profile the platform created, as a refresh reads them from the interfaces and the
	// instances (it no longer looks them up by name).
	sgs, err := e.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("group-name"), Values: []string{"pgnvme-sim"}}}})
	if err != nil || len(sgs.SecurityGroups) != 1 || st.AWS.SecurityGroupID != aws.ToString(sgs.SecurityGroups[0].GroupId) || st.AWS.InstanceProfile != "pgnvme-sim" {
		t.Errorf("security_group_id %q, instance_profile %q; want the group pgnvme-sim (%+v, %v) and the profile pgnvme-sim", st.AWS.SecurityGroupID, st.AWS.InstanceProfile, sgs, err)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "terraform.tfstate")); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range passwords {
			if bytes.Contains(b, []byte(p)) {
				t.Error("a password is in the Terraform state")
			}
		}
	}
	e.emptyPlan("after create")
	if got := e.psql(st.ConnectionURI, passwords[0], "SELECT pg_is_in_recovery()"); got != "f" {
		t.Errorf("psql with connection_uri reached a server in recovery (%q); want the primary", got)
	}
	// The configuration leaves postgres_major unset: the nodes run the default major.
	version := e.psql(st.ConnectionURI, passwords[0], "SHOW server_version")
	t.Logf("the nodes run PostgreSQL %s (postgres_major %d)", version, st.PostgresMajor)
	if want := fmt.Sprintf("%d.", capacity.DefaultPostgresMajor); !strings.HasPrefix(version, want) || st.PostgresMajor != capacity.DefaultPostgresMajor {
		t.Errorf("server_version %s, postgres_major %d; want the default major %d", version, st.PostgresMajor, capacity.DefaultPostgresMajor)
	}

	// A standby terminated in moto: the plan replaces that node only; a writer loses nothing.
	var standby, primary string
	for _, n := range st.Nodes {
		if n.Role == "standby" && standby == "" {
			standby = n.Name
		}
		if n.Role == "primary" {
			primary = n.Name
		}
	}
	w := e.startWriter(st.ConnectionURI, passwords[0])
	e.terminateAll(st.AWS.InstanceIDs[standby])
	_, _, secs = e.planIsApply("a standby lost", []string{"replace " + standby}, false)
	st2 := e.state()
	if st2.AWS.InstanceIDs[standby] == st.AWS.InstanceIDs[standby] || st2.AWS.NetworkInterfaces[standby] != st.AWS.NetworkInterfaces[standby] {
		t.Errorf("%s: want a new instance on the same interface; before %v/%v, after %v/%v", standby,
			st.AWS.InstanceIDs[standby], st.AWS.NetworkInterfaces[standby], st2.AWS.InstanceIDs[standby], st2.AWS.NetworkInterfaces[standby])
	}
	for _, n := range st.Nodes {
		if n.Name != standby && st2.AWS.InstanceIDs[n.Name] != st.AWS.InstanceIDs[n.Name] {
			t.Errorf("%s was replaced too", n.Name)
		}
	}
	t.Logf("standby %s terminated: apply replaced it in %.0f s; writer acknowledged %d commits, 0 lost (checked)", standby, secs, w.finish())
	e.emptyPlan("after replacing a standby")

	// The primary terminated: Patroni fails over before the apply; the apply replaces the lost node. Its
	// archive was down first: what it streamed but could not archive reaches the archive through the standby
	// Patroni promotes (pre_promote), so the archive keeps no hole.
	w = e.startWriter(st.ConnectionURI, passwords[0])
	unarchived := e.stopArchiving(st.ConnectionURI, passwords[0], 3)
	lostAt := time.Now()
	e.terminate(st2.AWS.InstanceIDs[primary])
	leader := e.waitLeader(st2, primary)
	t.Logf("primary %s terminated: %s leads after %.1f s", primary, leader, time.Since(lostAt).Seconds())
	_, _, secs = e.planIsApply("the primary lost", []string{"replace " + primary}, false)
	st3 := e.state()
	t.Logf("apply replaced %s in %.0f s; writer acknowledged %d commits, 0 lost (checked)", primary, secs, w.finish())
	if got := e.psql(st3.ConnectionURI, passwords[0], "SELECT pg_is_in_recovery()"); got != "f" {
		t.Errorf("after the failover psql with connection_uri reached a server in recovery (%q)", got)
	}
	acctest.WaitFor(t, time.Minute, "the archive to hold every segment up to "+unarchived, func() (bool, string) {
		hole := e.archiveHole(ctx, "sim", unarchived)
		return hole == "", hole
	})
	t.Logf("after the failover the archive holds every segment up to %s, which the lost primary could not archive", unarchived)
	// The provider's own verification on refresh (archive_status) sees the same: no hole across the switch.
	e.mustTerraform("apply", "-refresh-only", "-auto-approve", "-no-color", "-input=false")
	if as := e.state().ArchiveStatus; as == nil || as.FirstMissingWAL != nil || as.LastArchivedWAL < unarchived || as.BackupCount < 1 {
		t.Errorf("archive_status after the failover: %+v; want no missing segment, the newest at or past %s, a backup", as, unarchived)
	} else {
		t.Logf("archive_status after the failover: %d segments up to %s, none missing, %d backups", as.ArchivedSegments, as.LastArchivedWAL, as.BackupCount)
	}
	// The new primary's backup timer verifies the archive (pgbackrest verify) once it has archived what the
	// switch left, and records the verdict in the bucket, where the refresh reads it (checked after the
	// roll, which gives it the time it needs). A complete segment of the new timeline must be archived
	// first (a hole would lie before it): switch now rather than wait for archive_timeout.
	e.psql(st3.ConnectionURI, passwords[0], "SELECT pg_switch_wal()")
	verifyStart := time.Now()
	e.emptyPlan("after replacing the primary")

	// instance_type, root_volume_gib, key_name and metadata_hop_limit changed: a rolling replacement that names each reason,
	// standbys first, one switchover, never two down.
	w = e.startWriter(st.ConnectionURI, passwords[0])
	if _, err := e.ec2.CreateKeyPair(ctx, &ec2.CreateKeyPairInput{KeyName: aws.String("tf-acc-ops")}); err != nil {
		t.Fatal(err)
	}
	e.launch = "\n    root_volume_gib     = 24\n    key_name            = \"tf-acc-ops\"\n    metadata_hop_limit  = 3"
	e.config("sim", "m6id.xlarge", true)
	mark := time.Now()
	plan, _, secs = e.planIsApply("a roll", nil, false)
	t.Logf("roll plan:\n%s", plan)
	for _, why := range []string{"aws.instance_type m6id.large -> m6id.xlarge", "aws.root_volume_gib 20 -> 24", "aws.key_name (none) -> tf-acc-ops", "aws.metadata_hop_limit 2 -> 3"} {
		if strings.Count(plan, why) != 3 {
			t.Errorf("the roll plan should name %q for each of the three nodes:\n%s", why, plan)
		}
	}
	st4 := e.state()
	t.Logf("rolling replacement of 3 nodes: %.0f s; writer acknowledged %d commits, 0 lost (checked)", secs, w.finish())
	e.checkRoll(mark, st3, st4)
	// The new machines were launched with the hop limit asked for, as EC2 (moto) reports it.
	for node, id := range st4.AWS.InstanceIDs {
		out, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil || len(out.Reservations) != 1 {
			t.Fatalf("instance %s: %v", id, err)
		}
		if mo := out.Reservations[0].Instances[0].MetadataOptions; mo == nil || aws.ToInt32(mo.HttpPutResponseHopLimit) != 3 || mo.HttpTokens != ec2types.HttpTokensStateRequired {
			t.Errorf("node %s's instance %s after the roll: metadata options %+v; want IMDSv2 required, hop limit 3", node, id, mo)
		}
	}
	e.emptyPlan("after the roll")
	e.refreshUntil(4*time.Minute, "the archive's verification after the failover", func() (bool, string) {
		as := e.state().ArchiveStatus
		if as == nil || as.VerifiedTimeline == nil {
			return false, "no verification recorded"
		}
		return *as.VerifiedTimeline >= 2, fmt.Sprintf("verified timeline %d", *as.VerifiedTimeline)
	})
	if as := e.state().ArchiveStatus; as.VerificationOK == nil || !*as.VerificationOK || as.VerificationText == nil {
		t.Errorf("archive_status after the verification: %+v; want it passed", as)
	} else {
		t.Logf("pgbackrest verify after the failover (timeline %d, read %.0f s after the failover's apply, the roll between): %s", *as.VerifiedTimeline, time.Since(verifyStart).Seconds(), *as.VerificationText)
	}

	// Parameters change through Patroni's dynamic configuration: a reload, a restart where needed
	// (standbys first), no instance replaced.
	e.checkParameters(st4, passwords[0])

	// Scale: node-4 added, made the primary, removed.
	e.checkScale(e.state(), passwords)

	// Import round-trips: a new working directory imports the cluster by region and name, and plans nothing.
	e.checkImport()

	// Backups on a short schedule, changed in place, and their retention.
	e.checkBackups(e.state())

	// The primary and a standby lost together: the survivor alone is no majority of etcd, so Patroni cannot
	// elect it, and neither does the provider (it cannot prove the survivor holds every acknowledged commit).
	// The plan says the apply stops, the apply stops, nothing is launched.
	final := e.state()
	// Under a writer, so that the refusal's position can be held against the commits it acknowledged, and
	// the restore after against the archive's end.
	w = e.startWriter(final.ConnectionURI, passwords[0])
	w.await(200)
	// Rows the archive holds before the losses (their segment switched out and archived), for the restore,
	// and the commits acknowledged before the switch.
	e.psql(final.ConnectionURI, passwords[0], "CREATE TABLE restore_check AS SELECT g FROM generate_series(1, 2000) g")
	ackedBeforeSwitch := w.count()
	archivedSeg := e.psql(final.ConnectionURI, passwords[0], "SELECT pg_walfile_name(pg_switch_wal() - 1)")
	timelineBefore := e.psql(final.ConnectionURI, passwords[0], "SELECT timeline_id FROM pg_control_checkpoint()")
	e.refreshUntil(2*time.Minute, "segment "+archivedSeg+" in the archive", func() (bool, string) {
		as := e.state().ArchiveStatus
		return as != nil && as.LastArchivedWAL >= archivedSeg, fmt.Sprintf("%+v", as)
	})
	mark = time.Now()
	var survivor, survivorHost string
	var lostNodes, lostIDs []string
	for _, n := range final.Nodes {
		if n.Role == "primary" || (n.Role == "standby" && survivor != "") {
			lostNodes, lostIDs = append(lostNodes, n.Name), append(lostIDs, final.AWS.InstanceIDs[n.Name])
		} else {
			survivor, survivorHost = n.Name, n.Host
		}
	}
	// Both at once, and the plan only once the simulator has killed both nodes: the events of this test's
	// earlier replacements and roll do not count, or the plan would read the survivor while the old primary
	// still streams to it.
	e.terminateAll(lostIDs...)
	acked := w.halt()
	plan, out, _ := e.planIsApply("the primary and a standby lost", []string{"stop"}, true)
	t.Logf("the primary and a standby lost under a writer (%d commits acknowledged), the plan:\n%s", len(acked), plan)
	if !strings.Contains(plan, "no leader can be elected") || !strings.Contains(out, "No Leader Can Be Elected") {
		t.Errorf("the primary and a standby lost: the plan should say no leader can be elected and the apply should refuse:\n%s\n%s", plan, out)
	}
	for _, ev := range e.bridge.Events() {
		if ev.Time.After(mark) && ev.Kind == "booted" {
			t.Errorf("the primary and a standby lost: the apply launched %s", ev.Node)
		}
	}
	// The refusal names the survivor's position, which is the survivor's own, and the archive's end.
	survivorURI := "postgresql://postgres@" + survivorHost + ":5432/postgres"
	held := e.psql(survivorURI, passwords[0], "SELECT coalesce(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())")
	for _, text := range []string{plan, strings.Join(strings.Fields(out), " ")} {
		for _, want := range []string{"What is known: " + survivor + " holds WAL up to " + held, "the archive's newest segment is", "may be lost", "stop or terminate the surviving instances"} {
			if !strings.Contains(strings.Join(strings.Fields(text), " "), want) {
				t.Errorf("the primary and a standby lost: the refusal does not say %q (the survivor's pg_last_wal_receive_lsn is %s):\n%s", want, held, text)
			}
		}
	}
	onSurvivor := map[int64]bool{}
	for _, id := range strings.Fields(e.psql(survivorURI, passwords[0], "SELECT id FROM acked")) {
		onSurvivor[int64(atoi(t, id))] = true
	}
	missing := 0
	for _, id := range acked {
		if !onSurvivor[id] {
			missing++
		}
	}
	t.Logf("the survivor %s holds WAL up to %s and %d of the %d acknowledged commits (%d on no surviving node)", survivor, held, len(acked)-missing, len(acked), missing)
	for _, text := range []string{plan, strings.Join(strings.Fields(out), " ")} {
		if want := fmt.Sprintf("set accept_data_loss_at_lsn = %q and apply", held); !strings.Contains(strings.Join(strings.Fields(text), " "), want) {
			t.Errorf("the primary and a standby lost: the refusal does not say %q:\n%s", want, text)
		}
	}

	// Accepting the loss at exactly the survivor's position: its etcd member becomes a one-member etcd
	// cluster (the node acts on the instruction in SSM), Patroni fails over to it, and the lost nodes are
	// replaced from it. Every commit it held is there after, and the cluster takes writes again.
	e.accept = held
	e.config("sim", "m6id.xlarge", true)
	wantSteps := []string{"promote " + survivor + ", accepting the loss after " + held}
	for _, n := range lostNodes {
		wantSteps = append(wantSteps, "replace "+n)
	}
	slices.Sort(wantSteps[1:])
	plan, _, secs = e.planIsApply("accepting the loss at the survivor", wantSteps, false)
	t.Logf("accepting the loss at the survivor, the plan:\n%s", plan)
	took := e.state()
	e.waitSettled(took)
	for _, n := range took.Nodes {
		if (n.Name == survivor) != (n.Role == "primary") {
			t.Errorf("after the takeover %s is %s; want %s the primary", n.Name, n.Role, survivor)
		}
	}
	after := map[int64]bool{}
	for _, id := range strings.Fields(e.psql(took.ConnectionURI, passwords[0], fmt.Sprintf("SELECT id FROM acked WHERE id >= %d", acked[0]))) {
		after[int64(atoi(t, id))] = true
	}
	for id := range onSurvivor {
		if id >= acked[0] && !after[id] {
			t.Errorf("after the takeover commit %d, which the survivor held, is gone", id)
			break
		}
	}
	// etcd has its three members again: the survivor's, now a cluster of its own, and one per replacement.
	if got := e.etcdMembers(took.Nodes[0].Host); len(got) != 3 {
		t.Errorf("after the takeover etcd has the members %q; want 3", got)
	}
	if _, err := e.secretErr(awsspec.TakeoverParameter("sim")); err == nil {
		t.Errorf("the takeover instruction %s is still in SSM after the apply", awsspec.TakeoverParameter("sim"))
	}
	t.Logf("accepting the loss at %s: %s promoted and %s replaced in %.0f s; %d of the %d acknowledged commits kept (every one the survivor held)",
		held, survivor, strings.Join(lostNodes, ", "), secs, len(acked)-missing, len(acked))
	// Removing the override is a change of the attribute alone: no step.
	e.accept = ""
	e.config("sim", "m6id.xlarge", true)
	e.planIsApply("the override removed", []string{}, false)
	e.emptyPlan("after the takeover, the override removed")
	final = took

	// Every node lost, all three instances terminated: the data is only in the archive. The plan says the apply restores the cluster from it, and the apply does: every node
	// launched at once, the one that takes etcd's initialize key restored from the newest base backup to
	// the end of the archive, the others copied from it. The rows archived before the losses are there,
	// and the restored cluster archives on the next timeline.
	var all []string
	for _, n := range final.Nodes {
		all = append(all, final.AWS.InstanceIDs[n.Name])
	}
	e.terminateAll(all...)
	var names []string
	for _, n := range final.Nodes {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	plan, _, secs = e.planIsApply("every node lost", []string{"restore the cluster from its archive onto " + strings.Join(names, ", ")}, false)
	for _, want := range []string{"every member is lost", "restored from the archive's newest base backup", "to the end of the archive, last segment", "commits after that are lost"} {
		if !strings.Contains(plan, want) {
			t.Errorf("every node lost: the plan does not say %q:\n%s", want, plan)
		}
	}
	t.Logf("every node lost, the plan:\n%s", plan)
	restored := e.state()
	e.waitSettled(restored)
	if got := e.psql(restored.ConnectionURI, passwords[0], "SELECT count(*) FROM restore_check"); got != "2000" {
		t.Errorf("the restored cluster holds %s of the 2000 rows archived before the loss", got)
	}
	timelineAfter := e.psql(restored.ConnectionURI, passwords[0], "SELECT timeline_id FROM pg_control_checkpoint()")
	if tb, ta := atoi(t, timelineBefore), atoi(t, timelineAfter); ta <= tb {
		t.Errorf("the restored cluster is on timeline %d, the lost one was on %d: want a later one", ta, tb)
	}
	// The commits acknowledged under the double loss that the archive held: a prefix of them (one writer,
	// one commit at a time, so the archive's end is a point between two), the rest its RPO.
	restoredIDs := map[int64]bool{}
	for _, id := range strings.Fields(e.psql(restored.ConnectionURI, passwords[0], fmt.Sprintf("SELECT id FROM acked WHERE id >= %d", acked[0]))) {
		restoredIDs[int64(atoi(t, id))] = true
	}
	kept := 0
	for kept < len(acked) && restoredIDs[acked[kept]] {
		kept++
	}
	for _, id := range acked[kept:] {
		if restoredIDs[id] {
			t.Errorf("the restored cluster holds acknowledged commit %d but not %d before it: not a point in time", id, acked[kept])
			break
		}
	}
	if kept < ackedBeforeSwitch {
		t.Errorf("the restore holds the first %d of the commits acknowledged under the double loss; want at least the %d acknowledged before the archived segment switch", kept, ackedBeforeSwitch)
	}
	t.Logf("the restore holds the first %d of the %d commits acknowledged before the double loss (%d of them before the archived segment switch); the %d after the archive's end are lost", kept, len(acked), ackedBeforeSwitch, len(acked)-kept)
	// For the point-in-time clone at the end: 300 rows, the target time, 200 rows after it, all archived.
	e.psql(restored.ConnectionURI, passwords[0], "CREATE TABLE pitr_check AS SELECT g FROM generate_series(1, 300) g")
	pitrTarget := e.psql(restored.ConnectionURI, passwords[0], `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`)
	e.psql(restored.ConnectionURI, passwords[0], "INSERT INTO pitr_check SELECT g FROM generate_series(301, 500) g")
	nextSeg := e.psql(restored.ConnectionURI, passwords[0], "SELECT pg_walfile_name(pg_switch_wal() - 1)")
	e.refreshUntil(2*time.Minute, "the restored cluster's segment "+nextSeg+" in the archive", func() (bool, string) {
		as := e.state().ArchiveStatus
		return as != nil && as.LastArchivedWAL >= nextSeg && as.FirstMissingWAL == nil, fmt.Sprintf("%+v", as)
	})
	t.Logf("every node lost: the apply restored the cluster from its archive in %.0f s (timeline %s -> %s); the 2000 archived rows are there, and it archives %s", secs, timelineBefore, timelineAfter, nextSeg)
	e.emptyPlan("after the restore")

	// Every node lost again, each instance stopped this time (it holds its interface; its instance store is
	// wiped): the next apply restores from the same archive again, now across the first restore's timeline,
	// and every row archived before either loss is there.
	var ids []string
	for _, n := range restored.Nodes {
		ids = append(ids, restored.AWS.InstanceIDs[n.Name])
	}
	e.stopAll(ids...)
	_, _, secs = e.planIsApply("every node stopped", []string{"restore the cluster from its archive onto " + strings.Join(names, ", ")}, false)
	again := e.state()
	e.waitSettled(again)
	for table, want := range map[string]string{"restore_check": "2000", "pitr_check": "500"} {
		if got := e.psql(again.ConnectionURI, passwords[0], "SELECT count(*) FROM "+table); got != want {
			t.Errorf("the cluster restored a second time holds %s rows of %s; want the %s archived before the loss", got, table, want)
		}
	}
	timelineAgain := e.psql(again.ConnectionURI, passwords[0], "SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int")
	if ta, tb := atoi(t, timelineAgain), atoi(t, timelineAfter); ta <= tb {
		t.Errorf("the cluster restored a second time is on timeline %d, after the first restore it was on %d: want a later one", ta, tb)
	}
	t.Logf("every node stopped: the apply restored the cluster from the same archive again in %.0f s (timeline %s -> %s)", secs, timelineAfter, timelineAgain)
	e.emptyPlan("after the second restore")

	// deletion_protection refuses destroy; cleared, destroy leaves nothing the resource created.
	out, err = e.terraform("destroy", "-auto-approve", "-no-color", "-input=false")
	if err == nil || !strings.Contains(out, "Deletion Protection Is On") {
		t.Fatalf("destroy with deletion_protection: want it refused, got err %v:\n%s", err, out)
	}
	e.config("sim", "m6id.xlarge", false)
	e.mustTerraform("apply", "-auto-approve", "-no-color", "-input=false")
	_, secs = e.mustTerraform("destroy", "-auto-approve", "-no-color", "-input=false")
	t.Logf("destroy: %.0f s", secs)
	e.checkNothingLeft(ctx, st4)

	// The archive outlives the cluster. A new cluster of the same name on the same prefix would start from
	// initdb over that history: the plan and the apply refuse it, nothing boots, the archive is unchanged.
	archived := e.archiveListing(ctx, "sim")
	mark = time.Now()
	for _, cmd := range []string{"plan", "apply"} {
		args := []string{cmd, "-no-color", "-input=false"}
		if cmd == "apply" {
			args = append(args, "-auto-approve")
		}
		out, err := e.terraform(args...)
		if err == nil || !strings.Contains(out, "Archive Holds Another Cluster's History") || !strings.Contains(out, "clusters/sim/pgbackrest") {
			t.Errorf("%s of a new cluster on the old cluster's archive: want it refused, got err %v:\n%s", cmd, err, out)
		}
	}
	for _, ev := range e.bridge.Events() {
		if ev.Time.After(mark) && ev.Kind == "booted" {
			t.Errorf("a new cluster on the old archive: the apply launched %s", ev.Node)
		}
	}
	if after := e.archiveListing(ctx, "sim"); !slices.Equal(after, archived) || len(archived) == 0 {
		t.Errorf("the archive changed under the refused cluster: %d objects before, %d after", len(archived), len(after))
	}

	e.checkClone(ctx, pitrTarget, atoi(t, timelineAgain))
}

// nodeLogLines are the lines of every node's logs that hold one of subs, for failure messages.
func (e *simEnv) nodeLogLines(subs ...string) string {
	var b strings.Builder
	for _, n := range e.sim.Nodes() {
		entries, _ := os.ReadDir(n.LogDir())
		for _, f := range entries {
			data, _ := os.ReadFile(filepath.Join(n.LogDir(), f.Name()))
			for _, line := range strings.Split(string(data), "\n") {
				if slices.ContainsFunc(subs, func(s string) bool { return strings.Contains(line, s) }) {
					fmt.Fprintf(&b, "%s %s: %s\n", n.Name, f.Name(), line)
				}
			}
		}
	}
	return b.String()
}

// drRegion and drZones are where checkClone's disaster recovery runs: another region than simRegion.
const drRegion = "us-west-2"

var drZones = []string{"us-west-2a", "us-west-2b", "us-west-2c"}

// checkClone: disaster recovery and a point-in-time clone at once. The lost cluster's archive is copied to
// a bucket in another region, as S3 replication would (moto does not replicate); a new cluster "clone"
// runs in that region (the simulator's second EC2 bridge and VPC, once every node of the first region is
// gone) with a restore block from that copy to target: the plan says what it restores, the apply does,
// the clone holds exactly the rows committed before the target, is on a timeline after the source's last
// (fromTimeline), records what the restore reached, archives into its own prefix of the replica bucket,
// and the copy is untouched.
func (e *simEnv) checkClone(ctx context.Context, target string, fromTimeline int) {
	t := e.t
	copied := e.replicate(ctx, "clusters/sim/", "tf-acc-dr", drRegion)
	source := e.bucketListing(ctx, "tf-acc-dr", "clusters/sim/")
	e.moveTo(ctx, drRegion, drZones, "tf-acc-dr")
	opts := archive.Spec{Bucket: "tf-acc-dr", Prefix: "clusters/sim", Region: drRegion,
		Endpoint: archive.Endpoint{URL: nodesim.AWSEndpoint, PathStyle: true}}.PgBackRestOptions()
	var lines []string
	for _, k := range sortedKeys(opts) {
		lines = append(lines, fmt.Sprintf("        %q = %q", k, opts[k]))
	}
	e.restore = simRestoreBlock(strings.Join(lines, "\n"), fmt.Sprintf("time = %q", target))
	e.config("clone", "m6id.xlarge", false)
	// The role the platform creates has no grant on the source (the node_policy_json config gives it covers
	// the clone's own prefix only): the plan warns at aws.node_policy_json and names what the nodes need
	// (under IAM enforcement the restore would be refused). With the source's and the clone's own archive
	// policies, it does not.
	out, _ := e.mustTerraform("plan", "-no-color", "-input=false")
	for _, want := range []string{"Nodes May Not Read The Restore Source", "s3:ListBucket on arn:aws:s3:::tf-acc-dr", "s3:GetObject on arn:aws:s3:::tf-acc-dr/clusters/sim/pgbackrest/archive/sim/*"} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("the clone's plan without a node policy does not warn %q:\n%s", want, out)
		}
	}
	var statements []archive.Statement
	for _, a := range []archive.Spec{{Bucket: "tf-acc-dr", Prefix: "clusters/sim", Region: drRegion}, {Bucket: "tf-acc-dr", Prefix: "clusters/clone", Region: drRegion}} {
		for _, st := range a.NodePolicy().Statement {
			st.Sid = ""
			statements = append(statements, st)
		}
	}
	e.launch += "\n    node_policy_json = <<-EOT\n" + archive.PolicyDocument{Version: archive.PolicyVersion, Statement: statements}.JSON() + "\n    EOT"
	e.config("clone", "m6id.xlarge", false)
	if out, _ := e.mustTerraform("plan", "-no-color", "-input=false"); strings.Contains(out, "Nodes May Not Read The Restore Source") {
		t.Errorf("the clone's plan with the source's node policy still warns:\n%s", out)
	}
	e.checkRestoreGivenUp(strings.Join(lines, "\n"))
	_, plan := e.plannedSteps()
	for _, want := range []string{"restore the node that takes Patroni's initialize key", "tf-acc-dr", "then its WAL replayed to " + target[:19]} {
		if !strings.Contains(plan, want) {
			t.Errorf("the clone's plan does not say %q:\n%s", want, plan)
		}
	}
	t.Logf("the clone's plan in %s (%d objects copied to the replica bucket there):\n%s", drRegion, copied, plan)
	_, secs := e.mustTerraform("apply", "-auto-approve", "-no-color", "-input=false")
	st := e.state()
	passwords := e.passwords(st)
	e.waitSettled(st)
	insts, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:pgnvme:cluster"), Values: []string{"clone"}}, {Name: aws.String("instance-state-name"), Values: []string{"running"}}}})
	if err != nil {
		t.Fatal(err)
	}
	// Each instance's zone is its network interface's subnet's (moto reports every instance launched on an
	// interface as placed in the region's first zone).
	var zones []string
	for _, r := range insts.Reservations {
		for _, in := range r.Instances {
			for z, subnet := range e.subnets {
				if len(in.NetworkInterfaces) > 0 && aws.ToString(in.NetworkInterfaces[0].SubnetId) == subnet {
					zones = append(zones, z)
				}
			}
		}
	}
	slices.Sort(zones)
	if !slices.Equal(zones, drZones) {
		t.Errorf("the clone's running instances in %s are in the subnets of zones %v; want one in each of %v", drRegion, zones, drZones)
	}
	for table, want := range map[string]string{"pitr_check": "300", "restore_check": "2000"} {
		if got := e.psql(st.ConnectionURI, passwords[0], "SELECT count(*) FROM "+table); got != want {
			t.Errorf("the clone holds %s rows of %s; want %s (the rows committed before the target %s)", got, table, want, target)
		}
	}
	timeline := atoi(t, e.psql(st.ConnectionURI, passwords[0], "SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int"))
	r := st.Restored
	want, err := time.Parse(time.RFC3339Nano, target)
	if err != nil {
		t.Fatal(err)
	}
	reachedAfter := func(at *string) bool {
		got, err := time.Parse(time.RFC3339Nano, *at)
		return err != nil || got.After(want)
	}
	switch {
	case r == nil:
		t.Errorf("the clone's restored attribute is empty; the nodes' restore lines:\n%s", e.nodeLogLines("pgnvme-restore", "pgnvme-post-bootstrap"))
	case r.Backup == "" || r.ReachedLSN == "" || r.ReachedTime == nil || reachedAfter(r.ReachedTime) || r.Timeline != timeline || timeline <= fromTimeline ||
		r.WALReplayedBytes <= 0 || r.Seconds <= 0 || !strings.Contains(r.From, "tf-acc-dr"):
		t.Errorf("the clone's restored attribute: %+v (reached time %v); want the backup, a reached time at or before %s, timeline %d (after the source's %d), WAL replayed",
			*r, r.ReachedTime, target, timeline, fromTimeline)
	default:
		t.Logf("clone created in %s in %.0f s: backup %s, reached %s at %s on timeline %d, %d bytes of WAL replayed in %.1f s", drRegion, secs, r.Backup, r.ReachedLSN, *r.ReachedTime, r.Timeline, r.WALReplayedBytes, r.Seconds)
	}
	seg := e.psql(st.ConnectionURI, passwords[0], "SELECT pg_walfile_name(pg_switch_wal() - 1)")
	e.refreshUntil(2*time.Minute, "the clone's segment "+seg+" in its own archive", func() (bool, string) {
		as := e.state().ArchiveStatus
		return as != nil && as.LastArchivedWAL >= seg && as.FirstMissingWAL == nil, fmt.Sprintf("%+v", as)
	})
	if after := e.bucketListing(ctx, "tf-acc-dr", "clusters/sim/"); !slices.Equal(after, source) {
		t.Errorf("the source archive changed under the clone: %d objects before, %d after", len(source), len(after))
	}
	e.emptyPlan("after the clone")
	e.mustTerraform("destroy", "-auto-approve", "-no-color", "-input=false")
}

// simRestoreBlock is a restore block (with its leading newline) from the sim stanza of the pgBackRest
// archive whose option lines are options, to the target setting target.
func simRestoreBlock(options, target string) string {
	return fmt.Sprintf("\n  restore {\n    archive {\n      stanza = \"sim\"\n      pgbackrest_options = {\n%s\n      }\n    }\n    target {\n      %s\n    }\n  }", options, target)
}

// checkRestoreGivenUp: a clone whose restore cannot succeed (a restore point the source's WAL never
// reaches, which no plan can know) fails on the nodes again and again; the apply gives it up after two
// failed attempts, saying so, long before its timeout, and destroy then removes it. sourceOptions are the
// restore block's pgbackrest_options lines; the configuration is the clone's again afterwards.
func (e *simEnv) checkRestoreGivenUp(sourceOptions string) {
	t := e.t
	restore := e.restore
	defer func() {
		e.restore = restore
		e.config("clone", "m6id.xlarge", false)
	}()
	e.restore = simRestoreBlock(sourceOptions, `name = "tf-acc-never-made"`)
	e.config("clone", "m6id.xlarge", false)
	start := time.Now()
	out, err := e.terraform("apply", "-auto-approve", "-no-color", "-input=false")
	secs := time.Since(start).Seconds()
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"the restore failed 2 times in a row on the nodes", "attempt 1, on node-", "attempt 2, on node-",
		"PostgreSQL stopped before it finished recovery", "destroy this cluster"} {
		if err == nil || !strings.Contains(flat, want) {
			t.Errorf("a clone to a restore point that does not exist: want the apply to fail saying %q, got %v after %.0f s:\n%s", want, err, secs, out)
		}
	}
	if secs > 5*60 {
		t.Errorf("the apply gave the failing restore up after %.0f s; want it well before its 20-minute wait", secs)
	}
	t.Logf("a restore that cannot succeed: the apply gave it up after %.0f s:\n%s", secs, out)
	e.mustTerraform("destroy", "-auto-approve", "-no-color", "-input=false")
	insts, err := e.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:pgnvme:cluster"), Values: []string{"clone"}}, {Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(insts.Reservations) > 0 {
		t.Fatalf("destroy after the failed restore left %d reservations of the clone", len(insts.Reservations))
	}
}

// killApplyAtFirstBoot starts terraform apply and kills it with its provider (the whole process group) when
// the simulator boots the first instance.
func (e *simEnv) killApplyAtFirstBoot() {
	e.t.Helper()
	argv := []string{"--net=/run/netns/" + e.sim.ServiceNamespace(), "--", "terraform", "apply", "-auto-approve", "-no-color", "-input=false"}
	cmd := exec.Command("nsenter", argv...)
	cmd.Dir, cmd.Env = e.dir, e.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	booted := false
	for !booted && time.Now().Before(deadline) {
		for _, ev := range e.bridge.Events() {
			if ev.Kind == "boot" {
				booted = true
			}
		}
		time.Sleep(100 * time.Millisecond) //nolint:forbidigo // polling the bridge's log in a test
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	if !booted {
		e.t.Fatalf("no instance booted within 2 minutes of terraform apply:\n%s", out.String())
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "terraform.tfstate")); err == nil && bytes.Contains(b, []byte("pgnvme_cluster")) {
		e.t.Fatalf("the killed apply recorded the cluster in state; the test needs it killed before:\n%s", b)
	}
}

// passwords reads the three generated passwords from SSM (superuser first).
func (e *simEnv) passwords(st clusterState) []string {
	var out []string
	for _, p := range []string{"superuser-password", "replication-password", "restapi-password"} {
		out = append(out, e.secret(st.AWS.SSMPath+"/"+p))
	}
	return out
}

// checkInstances checks each node's instance in moto: attached to the node's interface, IMDSv2 required,
// tagged, and user-data without any password.
func (e *simEnv) checkInstances(st clusterState, passwords []string) {
	e.t.Helper()
	ctx := context.Background()
	for node, id := range st.AWS.InstanceIDs {
		out, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil || len(out.Reservations) != 1 {
			e.t.Fatalf("instance %s: %v", id, err)
		}
		in := out.Reservations[0].Instances[0]
		if len(in.NetworkInterfaces) == 0 || aws.ToString(in.NetworkInterfaces[0].NetworkInterfaceId) != st.AWS.NetworkInterfaces[node] {
			e.t.Errorf("node %s's instance %s is not on its interface %s", node, id, st.AWS.NetworkInterfaces[node])
		}
		if in.MetadataOptions == nil || in.MetadataOptions.HttpTokens != ec2types.HttpTokensStateRequired {
			e.t.Errorf("node %s's instance does not require IMDSv2", node)
		}
		tags := map[string]string{}
		for _, tg := range in.Tags {
			tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
		}
		if tags["pgnvme:cluster"] != "sim" || tags["pgnvme:node"] != node || tags["team"] != "tf-acc" {
			e.t.Errorf("node %s's instance tags %v", node, tags)
		}
		attr, err := e.ec2.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: aws.String(id), Attribute: ec2types.InstanceAttributeNameUserData})
		if err != nil {
			e.t.Fatal(err)
		}
		gz, err := base64.StdEncoding.DecodeString(aws.ToString(attr.UserData.Value))
		if err != nil {
			e.t.Fatal(err)
		}
		r, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			e.t.Fatal(err)
		}
		ud, _ := io.ReadAll(r)
		if !bytes.HasPrefix(ud, []byte("#cloud-config")) {
			e.t.Errorf("node %s's user-data is no cloud-config", node)
		}
		for _, p := range passwords {
			if bytes.Contains(ud, []byte(p)) {
				e.t.Errorf("node %s's user-data holds a password", node)
			}
		}
	}
}

func (e *simEnv) emptyPlan(when string) {
	e.t.Helper()
	out, err := e.terraform("plan", "-detailed-exitcode", "-no-color", "-input=false")
	if err != nil {
		e.t.Errorf("plan %s is not empty (%v):\n%s", when, err, out)
	}
}

// psql runs psql with uri inside the service namespace and returns its one-line answer.
func (e *simEnv) psql(uri, password, sql string) string {
	e.t.Helper()
	cmd := exec.Command("nsenter", "--net=/run/netns/"+e.sim.ServiceNamespace(), "--", "psql", uri, "-Atc", sql)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGCONNECT_TIMEOUT=5")
	out, err := cmd.CombinedOutput()
	if err != nil {
		var config any
		if host, _, ok := strings.Cut(strings.TrimPrefix(uri, "postgresql://postgres@"), ":"); ok {
			_ = e.getJSON(context.Background(), "http://"+host+":8008/config", &config)
		}
		e.t.Fatalf("psql %s: %v\n%s\nPatroni's configuration: %v\n%s", uri, err, out, config, e.logs())
	}
	return strings.TrimSpace(string(out))
}

// etcdMembers lists the etcd cluster's members, as the member at host reports them ("name=peer URL").
func (e *simEnv) etcdMembers(host string) []string {
	e.t.Helper()
	cmd := exec.Command("nsenter", "--net=/run/netns/"+e.sim.ServiceNamespace(), "--", "etcdctl", "--endpoints=http://"+host+":2379",
		"--dial-timeout=3s", "--command-timeout=5s", "member", "list")
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("etcdctl member list on %s: %v\n%s", host, err, out)
	}
	var members []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Split(line, ", "); len(f) >= 4 {
			members = append(members, f[2]+"="+f[3])
		}
	}
	return members
}

// terminateAll terminates the instances and returns once EC2 and the simulator agree that each is gone:
// EC2 reports it terminated (or no longer knows it), and the bridge removed its node after the call.
func (e *simEnv) terminateAll(ids ...string) {
	e.t.Helper()
	since := time.Now()
	if _, err := e.ec2.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: ids}); err != nil {
		e.t.Fatal(err)
	}
	e.waitAgreed(ids, since, nodesim.EventTerminated, func(state string) bool { return state == "" || state == string(ec2types.InstanceStateNameTerminated) })
}

// stopAll stops the instances and returns once EC2 and the simulator agree that each is stopped: EC2
// reports it stopped, and the bridge killed its node and wiped its disks after the call.
func (e *simEnv) stopAll(ids ...string) {
	e.t.Helper()
	since := time.Now()
	if _, err := e.ec2.StopInstances(context.Background(), &ec2.StopInstancesInput{InstanceIds: ids}); err != nil {
		e.t.Fatal(err)
	}
	e.waitAgreed(ids, since, nodesim.EventStopped, func(state string) bool { return state == string(ec2types.InstanceStateNameStopped) })
}

// waitAgreed waits until, for each of ids, EC2 reports a state done accepts ("" when it does not describe
// the instance) and the bridge logged event for that instance at or after since. Neither alone will do: the
// plan that follows reads EC2, and the nodes are the simulator's; an event for the same node from before
// since (an earlier replacement's, say) says nothing about this instance.
func (e *simEnv) waitAgreed(ids []string, since time.Time, event string, done func(state string) bool) {
	e.t.Helper()
	acctest.WaitFor(e.t, time.Minute, fmt.Sprintf("EC2 and the simulator to agree that %s are %s", strings.Join(ids, ", "), event), func() (bool, string) {
		out, err := e.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: ids})
		if err != nil {
			return false, err.Error()
		}
		states := map[string]string{}
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				if in.State != nil {
					states[aws.ToString(in.InstanceId)] = string(in.State.Name)
				}
			}
		}
		events := e.bridge.Events()
		var waiting []string
		for _, id := range ids {
			if !done(states[id]) {
				waiting = append(waiting, fmt.Sprintf("EC2 reports %s %q", id, states[id]))
			}
			if !slices.ContainsFunc(events, func(ev nodesim.BridgeEvent) bool {
				return ev.InstanceID == id && ev.Kind == event && !ev.Time.Before(since)
			}) {
				waiting = append(waiting, fmt.Sprintf("the simulator has no %s event for %s", event, id))
			}
		}
		return len(waiting) == 0, strings.Join(waiting, "; ")
	})
}

// checkRoll proves the roll's order from the bridge's events since mark: every node replaced once, the
// standbys of before first, never a node terminated while another is still booting (two members down),
// and exactly one switchover in Patroni's history.
func (e *simEnv) checkRoll(mark time.Time, before, after clusterState) {
	e.t.Helper()
	var order []string
	down := ""
	for _, ev := range e.bridge.Events() {
		if ev.Time.Before(mark) {
			continue
		}
		switch ev.Kind {
		case "terminated":
			if down != "" {
				e.t.Errorf("%s was terminated while %s was not back yet: two members down\n%s", ev.Node, down, e.logs())
			}
			down = ev.Node
			order = append(order, ev.Node)
		case "booted":
			if ev.Node == down {
				down = ""
			}
		}
	}
	var oldPrimary string
	for _, n := range before.Nodes {
		if n.Role == "primary" {
			oldPrimary = n.Name
		}
	}
	if len(order) != 3 || order[2] != oldPrimary {
		e.t.Errorf("replacement order %v; want the two standbys, then the old primary %s", order, oldPrimary)
	}
	for node, id := range after.AWS.InstanceIDs {
		if id == before.AWS.InstanceIDs[node] {
			e.t.Errorf("node %s kept its instance %s through the roll", node, id)
		}
	}
	// Patroni's history: [timeline, LSN, reason, time, new leader] per change of leader. The roll made one:
	// the switchover to a standby of before.
	var hist [][]any
	for _, n := range after.Nodes {
		if err := e.getJSON(context.Background(), "http://"+n.Host+":8008/history", &hist); err == nil {
			break
		}
	}
	var changes []string
	for _, h := range hist {
		if len(h) < 5 {
			continue
		}
		at, _ := h[3].(string)
		when, err := time.Parse(time.RFC3339Nano, at)
		if err == nil && when.After(mark) {
			changes = append(changes, fmt.Sprint(h[4]))
		}
	}
	e.t.Logf("roll order %v; leader changes during the roll (Patroni's history): %v", order, changes)
	// One switchover, to a standby of before. Under load Patroni may also re-elect the same leader (a new
	// timeline, the same node): that is no second hand-over, and the provider asked for one. An entry naming
	// the primary of before records how it became primary (the failover before the roll, which Patroni can
	// write into its history late, under load after the roll began): not a change the roll made.
	changes = slices.DeleteFunc(changes, func(c string) bool { return c == oldPrimary })
	if len(changes) == 0 || slices.ContainsFunc(changes, func(c string) bool { return c != changes[0] }) {
		e.t.Errorf("Patroni's history shows the leader changes %v during the roll; want one switchover away from %s", changes, oldPrimary)
	}
	if log, err := os.ReadFile(filepath.Join(e.dir, "terraform.log")); err == nil {
		steps := 0
		for _, l := range strings.Split(string(log), "\n") {
			if strings.Contains(l, "apply step:") && strings.Contains(l, `apply_step="switchover `) {
				steps++
			}
		}
		if steps != 1 {
			e.t.Errorf("the provider ran %d switchovers during the roll; want 1", steps)
		}
	} else {
		e.t.Errorf("reading terraform's log: %v", err)
	}
}

// checkImport imports the cluster into a fresh working directory with the same configuration and
// expects an empty plan.
func (e *simEnv) checkImport() {
	e.t.Helper()
	main, err := os.ReadFile(filepath.Join(e.dir, "main.tf"))
	if err != nil {
		e.t.Fatal(err)
	}
	other := &simEnv{t: e.t, fx: e.fx, sim: e.sim, region: e.region, zones: e.zones, bridge: e.bridge, ec2: e.ec2, dir: e.t.TempDir(), env: e.env}
	if err := os.WriteFile(filepath.Join(other.dir, "main.tf"), main, 0o644); err != nil {
		e.t.Fatal(err)
	}
	other.mustTerraform("import", "-no-color", "-input=false", "pgnvme_cluster.db", "aws:"+simRegion+":sim")
	other.emptyPlan("after import")
}

// checkNothingLeft checks moto for anything the resource created.
func (e *simEnv) checkNothingLeft(ctx context.Context, st clusterState) {
	e.t.Helper()
	insts, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:pgnvme:cluster"), Values: []string{"sim"}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped", "shutting-down"}}}})
	if err != nil {
		e.t.Fatal(err)
	}
	enis, err := e.ec2.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:pgnvme:cluster"), Values: []string{"sim"}}}})
	if err != nil {
		e.t.Fatal(err)
	}
	sgs, err := e.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("group-name"), Values: []string{"pgnvme-sim"}}}})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(insts.Reservations) != 0 || len(enis.NetworkInterfaces) != 0 || len(sgs.SecurityGroups) != 0 {
		e.t.Errorf("destroy left %d reservations, %d interfaces, %d security groups", len(insts.Reservations), len(enis.NetworkInterfaces), len(sgs.SecurityGroups))
	}
	for _, p := range []string{"superuser-password", "replication-password", "restapi-password"} {
		if _, err := e.secretErr(st.AWS.SSMPath + "/" + p); err == nil {
			e.t.Errorf("destroy left the parameter %s/%s", st.AWS.SSMPath, p)
		}
	}
	if lb := e.loadBalancerTargets(ctx, "pgnvme-sim"); lb != nil {
		e.t.Errorf("destroy left the load balancer: %v", lb)
	}
	if st.AWS.InstanceProfile != "" && e.profileExists(ctx, st.AWS.InstanceProfile) {
		e.t.Errorf("destroy left the instance profile %s", st.AWS.InstanceProfile)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return n
}

package localcluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
)

// TestRestoreBlockClonesToATime: a source cluster commits rows 1-20, a moment is taken, it commits rows
// 21-40 and takes a second base backup (which finished after that moment), and everything is archived;
// the source is then deleted (its archive stays). A new cluster with a restore block targeting the moment
// plans the restore from the first backup (the only one before the target) and says so; the apply
// restores exactly rows 1-20, reports what it did (backup, LSN and time reached, timeline), forms a
// primary and two quorum standbys copied from it (none of them keeps the recovery target), and archives
// into its own stanza; the source's archive is the same before and after. Targets the archive cannot reach,
// a backup that is not there, an archive without a backup and the cluster's own archive are refused at
// plan, creating nothing; a restore point recovery never reaches fails the apply, which removes what it
// restored so that the next apply starts clean; what an apply killed during the restore leaves is removed
// by the next one, which says so and restores again.
func TestRestoreBlockClonesToATime(t *testing.T) {
	t.Parallel()
	root, m, repo := scratchRepo(t, "pgnvme-clone-")
	posix := map[string]string{"repo1-type": "posix", "repo1-path": repo}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p := localcluster.NewPlatform()

	// The source: one node, rows 1-20, the target moment, rows 21-40, a second backup, all archived.
	src := cluster.FromInput(cluster.Input{Name: "tf-acc-source", NodeCount: new(1), Parameters: map[string]string{"archive_timeout": "2s"},
		Archive: &cluster.ArchiveInput{PgBackRestOptions: posix},
		Blocks:  []cluster.BlockInput{&localspec.Block{DataDir: filepath.Join(root, "source"), PortBase: acctest.FreePortBase(t, 1)}}})
	sst, err := p.Create(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = p.Delete(context.Background(), src, cluster.Prior{Members: sst.Members})
		}
	})
	lsrc, err := localcluster.SpecOf(src, sst.Members)
	if err != nil {
		t.Fatal(err)
	}
	sp := localcluster.Member{Name: "node-1", Port: sst.Members[0].Port}
	c := connect(t, ctx, sp)
	if _, err := c.Exec(ctx, "CREATE TABLE clone_check (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	insert := func(from, to int) {
		for i := from; i <= to; i++ {
			if _, err := c.Exec(ctx, "INSERT INTO clone_check VALUES ($1)", i); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	insert(1, 20)
	target := time.Now().UTC() // after row 20's commit was acknowledged, before row 21's began
	time.Sleep(50 * time.Millisecond)
	insert(21, 40)
	time.Sleep(1100 * time.Millisecond) // backups are labelled by the second
	if err := localcluster.StopBackupScheduler(ctx, m, lsrc); err != nil {
		t.Fatal(err)
	}
	if err := localcluster.TakeBackup(ctx, m, lsrc); err != nil {
		t.Fatal(err)
	}
	waitArchived(t, ctx, m, lsrc, sp.Port)
	before, err := m.ArchiveHealth(ctx, lsrc, nil)
	if err != nil || before == nil || len(before.Backups) != 2 {
		t.Fatalf("the source's archive: %+v, %v; want two backups", before, err)
	}
	first := before.Backups[0]
	if !time.Unix(before.Backups[1].Stop, 0).After(target) || time.Unix(first.Stop, 0).After(target) {
		t.Fatalf("backups %+v around the target %s: want the first before it and the second after", before.Backups, target)
	}
	if err := p.Delete(ctx, src, cluster.Prior{Members: sst.Members}); err != nil {
		t.Fatal(err)
	}
	deleted = true
	listing := listTree(t, repo)

	clone := func(name string, r *cluster.RestoreInput, own map[string]string) cluster.Spec {
		in := cluster.Input{Name: name, NodeCount: new(3), Parameters: map[string]string{"archive_timeout": "2s"}, Restore: r,
			Blocks: []cluster.BlockInput{&localspec.Block{DataDir: filepath.Join(root, name), PortBase: acctest.FreePortBase(t, 3)}}}
		if own != nil {
			in.Archive = &cluster.ArchiveInput{PgBackRestOptions: own}
		}
		return cluster.FromInput(in)
	}
	from := func(tgt cluster.RestoreTargetInput, backup string) *cluster.RestoreInput {
		return &cluster.RestoreInput{PgBackRestOptions: posix, Stanza: "tf-acc-source", Target: tgt, Backup: backup}
	}
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

	// Refused at plan, creating nothing.
	for _, tc := range []struct {
		name string
		s    cluster.Spec
		path string
		want string
	}{
		{"a target in the future", clone("tf-acc-c1", from(cluster.RestoreTargetInput{Time: at(time.Now().Add(time.Hour))}, ""), nil),
			"restore.target.time", "after the newest WAL segment reached the archive"},
		{"a target before the first backup", clone("tf-acc-c1", from(cluster.RestoreTargetInput{Time: at(time.Unix(first.Stop, 0).Add(-time.Minute))}, ""), nil),
			"restore.target.time", "before the oldest base backup finished"},
		{"a backup that is not there", clone("tf-acc-c1", from(cluster.RestoreTargetInput{}, "20990101-000000F"), nil),
			"restore.backup", "holds no backup \"20990101-000000F\""},
		{"a backup after the target", clone("tf-acc-c1", from(cluster.RestoreTargetInput{Time: at(target)}, before.Backups[1].Label), nil),
			"restore.backup", "after the target"},
		{"an archive without a backup", clone("tf-acc-c1", &cluster.RestoreInput{PgBackRestOptions: posix, Stanza: "tf-acc-nothing"}, nil),
			"restore.archive", "holds no base backup"},
	} {
		if fe := cluster.Validate(tc.s); len(fe) > 0 {
			t.Fatalf("%s: %v", tc.name, fe[0])
		}
		_, err := p.Plan(ctx, tc.s, cluster.Prior{})
		var fe *cluster.FieldError
		if !errors.As(err, &fe) || strings.Join(fe.Path, ".") != tc.path || !strings.Contains(fe.Detail, tc.want) {
			t.Errorf("%s: plan error %v; want one at %s saying %q", tc.name, err, tc.path, tc.want)
		} else {
			t.Logf("%s, refused at %s: %s", tc.name, tc.path, fe.Detail)
		}
	}
	same := clone("tf-acc-source", from(cluster.RestoreTargetInput{}, ""), posix)
	if fe := cluster.Validate(same); !slices.ContainsFunc(fe, func(e *cluster.FieldError) bool { return strings.Join(e.Path, ".") == "restore.archive" }) {
		t.Errorf("a restore from the cluster's own archive: %v, want a problem at restore.archive", fe)
	}
	if _, err := os.Stat(filepath.Join(root, "tf-acc-c1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused plan left %s: %v", filepath.Join(root, "tf-acc-c1"), err)
	}

	// A restore point that recovery never reaches: the apply fails and removes what it restored.
	bad := clone("tf-acc-clone", from(cluster.RestoreTargetInput{Name: "never-made"}, ""), map[string]string{"repo1-type": "posix", "repo1-path": repo})
	if _, err := p.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "recovery ended before configured recovery target was reached") {
		t.Errorf("a restore to a restore point that does not exist: %v, want the server's recovery error", err)
	} else {
		t.Logf("a restore point never reached fails the apply: %s", tail(err.Error(), 400))
	}
	if _, err := os.Stat(filepath.Join(root, "tf-acc-clone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed restore left %v: %v", listTree(t, filepath.Join(root, "tf-acc-clone")), err)
	}

	// The clone, to the moment between rows 20 and 21.
	s := clone("tf-acc-clone", from(cluster.RestoreTargetInput{Time: at(target)}, ""), map[string]string{"repo1-type": "posix", "repo1-path": repo})
	if fe := cluster.Validate(s); len(fe) > 0 {
		t.Fatal(fe[0])
	}
	// What an apply killed during the restore leaves (the manifest, part of node-1, the restore marker) is
	// removed and the restore started again.
	ls0, err := localcluster.SpecOf(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := localcluster.LeaveUnfinishedRestore(m, ls0); err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(ctx, s, cluster.Prior{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the plan: %s", plan.Actions)
	for _, want := range []string{"start the unfinished restore of tf-acc-clone again", "restore node-1 from pgBackRest stanza tf-acc-source in " + repo, "base backup " + first.Label,
		"replayed to " + target.Format(time.RFC3339Nano), "node-2, node-3 copied from it"} {
		if !strings.Contains(plan.Actions, want) {
			t.Errorf("the plan does not say %q", want)
		}
	}
	start := time.Now()
	st, err := p.Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Delete(context.Background(), s, cluster.Prior{Members: st.Members}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	t.Logf("restored and formed in %s", time.Since(start).Round(time.Millisecond))
	r := st.Restored
	switch {
	case r == nil:
		t.Fatal("the status reports no restore")
	case r.Backup != first.Label || r.Timeline != 2 || r.ReachedLSN == "" || r.WALReplayedBytes <= 0 || r.Seconds <= 0:
		t.Errorf("restored %+v; want backup %s, timeline 2, an LSN, WAL replayed and a duration", r, first.Label)
	case r.ReachedTime.IsZero() || r.ReachedTime.After(target):
		t.Errorf("restored up to a transaction of %s, want one at or before the target %s", r.ReachedTime, target)
	}
	t.Logf("restored: %+v", r)
	primary := wantFormed(t, p, s, st.Members)
	pc := connect(t, ctx, localcluster.Member{Name: primary.Name, Port: primary.Port})
	var ids []int
	rows, err := pc.Query(ctx, "SELECT id FROM clone_check ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if len(ids) != 20 || ids[0] != 1 || ids[19] != 20 {
		t.Errorf("the clone holds rows %v, want exactly 1-20", ids)
	}
	for _, mb := range st.Members {
		// What the configuration files say now (the running primary keeps recovery_target_time, a setting
		// read at start, in memory until it restarts; recovery is over, so it acts no more).
		var kept []string
		rows, err := connect(t, ctx, localcluster.Member{Name: mb.Name, Port: mb.Port}).Query(ctx,
			"SELECT name || ' = ' || setting FROM pg_file_settings WHERE name LIKE 'recovery_target%' OR setting LIKE '%restore-source%'")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			kept = append(kept, v)
		}
		if rows.Err() != nil || len(kept) > 0 {
			t.Errorf("%s keeps the restore's recovery settings: %v (%v)", mb.Name, kept, rows.Err())
		}
	}
	// Its own archive: a stanza of its own, which now holds its WAL.
	ls, err := localcluster.SpecOf(s, st.Members)
	if err != nil {
		t.Fatal(err)
	}
	waitArchived(t, ctx, m, ls, primary.Port)
	// The source's archive is as it was.
	var after []string
	for _, f := range listTree(t, repo) {
		if !strings.Contains(f, "tf-acc-clone") {
			after = append(after, f)
		}
	}
	if !slices.Equal(after, listing) {
		t.Errorf("the source's archive changed:\nbefore %v\nafter  %v", listing, after)
	}
}

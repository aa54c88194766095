package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// RestoreBench is the restore drill's RTO on this machine, per size of archive: a one-node cluster on the
// local platform (a pgBackRest repository on this disk) filled with pgbench -i to the size, one full
// backup, some WAL after it, the cluster deleted; then, alternating, pgnvme_restore_drill through Terraform
// (its restore_seconds: pgbackrest restore of the backup, then archive recovery to the end of the archive)
// and the same restore by hand (pgbackrest restore, pg_ctl start, wait for the end of recovery): the floor.
type RestoreBench struct {
	Server
	Sizes []RestoreSize `json:"sizes"`
	Note  string        `json:"note"`
}

// RestoreSize is one archive's figures.
type RestoreSize struct {
	Scale       int     `json:"pgbench_scale"`
	DatabaseGiB float64 `json:"database_gib"`
	// Drill is restore_seconds, Hand the restore by hand; PerGiB the drill's seconds per GiB of database,
	// DrillOverHand the ratio per pair.
	Drill         Stat `json:"drill_seconds"`
	Hand          Stat `json:"hand_seconds"`
	PerGiB        Stat `json:"drill_seconds_per_gib"`
	DrillOverHand Stat `json:"drill_over_hand"`
}

// restoreScales are the pgbench scales of the archives measured: about 1 GiB and 5 GiB of database.
var restoreScales = []int{68, 340}

func benchRestore(env *terraformEnv, pg postgresBin, runs int) (*RestoreBench, error) {
	b := &RestoreBench{Note: "one full pgBackRest backup (gz, posix repository on the same disk) of a pgbench database plus 30 s of pgbench's WAL after it, restored to the end of the archive; the drill also reads the archive before and runs pgbackrest verify after (not in its seconds)"}
	for _, scale := range restoreScales {
		s, server, err := benchRestoreSize(env, pg, scale, runs)
		if err != nil {
			return nil, fmt.Errorf("scale %d: %w", scale, err)
		}
		b.Sizes, b.Server = append(b.Sizes, *s), server
	}
	return b, nil
}

// benchRestoreSize measures the archive of scale on pg; it returns the figures and the source cluster's server.
func benchRestoreSize(env *terraformEnv, pg postgresBin, scale, runs int) (out *RestoreSize, server Server, err error) {
	ctx := env.ctx
	e, err := pg.engine()
	if err != nil {
		return nil, server, err
	}
	root, err := os.MkdirTemp("/var/tmp", "pgnvme-bench-restore-")
	if err != nil {
		return nil, server, err
	}
	defer os.RemoveAll(root)
	if err := os.Chmod(root, 0o755); err != nil {
		return nil, server, err
	}
	repo := filepath.Join(root, "repo")
	if err := e.MkdirAllOwned(repo, 0o750); err != nil {
		return nil, server, err
	}
	pgbackrest, err := exec.LookPath("pgbackrest")
	if err != nil {
		return nil, server, fmt.Errorf("pgBackRest is needed: %w", err)
	}
	base, err := acctest.FreePort()
	if err != nil {
		return nil, server, err
	}
	name := "bench-restore"
	s := cluster.FromInput(cluster.Input{Name: name, PostgresMajor: pg.Major, NodeCount: new(1), Parameters: map[string]string{"max_wal_size": "4GB"},
		Archive: &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"repo1-type": "posix", "repo1-path": repo}, BackupOnCreate: new(false)},
		Blocks:  []cluster.BlockInput{&localspec.Block{DataDir: filepath.Join(root, "source"), PortBase: base}}})
	p := localcluster.NewPlatform()
	progress("restore: scale %d: creating the source cluster and its data", scale)
	st, err := p.Create(ctx, s)
	if err != nil {
		return nil, server, err
	}
	deleted := false
	defer func() {
		if !deleted {
			_ = p.Delete(context.Background(), s, cluster.Prior{Members: st.Members})
		}
	}()
	if server, err = readServer(ctx, base, pg.Major); err != nil {
		return nil, server, err
	}
	if err := pgbenchInit(ctx, pg, base, scale); err != nil {
		return nil, server, err
	}
	node := localnode.Node{Name: "probe", Host: "127.0.0.1", Port: base}
	size, err := e.Psql(ctx, node, "postgres", "SELECT pg_database_size('postgres')")
	if err != nil {
		return nil, server, err
	}
	bytes, _ := strconv.ParseFloat(strings.TrimSpace(size), 64)
	conf := filepath.Join(root, "source", "node-1.pgbackrest", "pgbackrest.conf")
	progress("restore: scale %d: %.2f GiB; a full backup", scale, bytes/(1<<30))
	// The cluster's backup scheduler takes its first backup (of the empty database) right after the create:
	// wait for its lock, then take the full backup of the data.
	for deadline := time.Now().Add(10 * time.Minute); ; {
		out, err := e.RunAsServerUser(ctx, root, pgbackrest, "--config="+conf, "--stanza="+name, "--type=full", "backup")
		if err == nil {
			break
		}
		if !strings.Contains(out+err.Error(), "[050]") || time.Now().After(deadline) {
			return nil, server, fmt.Errorf("pgbackrest backup: %w\n%s", err, out)
		}
		time.Sleep(5 * time.Second)
	}
	if err := talkRunQuiet(ctx, pg, base, scale, 30); err != nil {
		return nil, server, err
	}
	if _, err := e.Psql(ctx, node, "postgres", "SELECT pg_switch_wal()"); err != nil {
		return nil, server, err
	}
	time.Sleep(5 * time.Second) // the archiver pushes the switched segment
	if err := p.Delete(ctx, s, cluster.Prior{Members: st.Members}); err != nil {
		return nil, server, err
	}
	deleted = true

	dir, err := env.workspace(fmt.Sprintf("restore-%d", scale), map[string]string{"main.tf": fmt.Sprintf(`
terraform {
  required_providers {
    pgnvme = { source = "pgnvme/pgnvme" }
  }
}
data "pgnvme_restore_drill" "bench" {
  archive {
    pgbackrest_options = { "repo1-type" = "posix", "repo1-path" = %q }
    stanza             = %q
  }
  work_dir = %q
}
output "restore_seconds" {
  value = data.pgnvme_restore_drill.bench.restore_seconds
}
output "verification_ok" {
  value = data.pgnvme_restore_drill.bench.verification_ok
}
`, repo, name, root)})
	if err != nil {
		return nil, server, err
	}
	var drill, hand, perGiB, ratio []float64
	for i := range runs {
		progress("restore: scale %d: drill and hand restore %d of %d", scale, i+1, runs)
		if err := env.run(dir, "apply", "-auto-approve", "-input=false"); err != nil {
			return nil, server, err
		}
		v, err := env.output(dir, "restore_seconds")
		if err != nil {
			return nil, server, err
		}
		d, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return nil, server, fmt.Errorf("restore_seconds %q: %w", v, err)
		}
		if ok, _ := env.output(dir, "verification_ok"); strings.TrimSpace(ok) != "true" {
			return nil, server, fmt.Errorf("the drill's verification failed")
		}
		h, err := handRestore(ctx, e, pgbackrest, root, repo, name, base)
		if err != nil {
			return nil, server, err
		}
		drill, hand, perGiB, ratio = append(drill, d), append(hand, h), append(perGiB, d/(bytes/(1<<30))), append(ratio, d/h)
	}
	return &RestoreSize{Scale: scale, DatabaseGiB: bytes / (1 << 30), Drill: newStat(drill), Hand: newStat(hand), PerGiB: newStat(perGiB), DrillOverHand: newStat(ratio)}, server, nil
}

// talkRunQuiet runs the talk's random UPDATE for seconds (WAL after the backup for the restore to replay).
func talkRunQuiet(ctx context.Context, pg postgresBin, port, scale, seconds int) error {
	_, err := talkRun(ctx, pg, port, scale, seconds)
	return err
}

// handRestore restores the stanza's newest backup by hand into a scratch directory under root and starts
// it until its archive recovery ended; it returns the seconds from the restore's start to then.
func handRestore(ctx context.Context, e *localnode.Engine, pgbackrest, root, repo, stanza string, port int) (float64, error) {
	dir := filepath.Join(root, "hand")
	data := filepath.Join(dir, "data")
	if err := e.MkdirAllOwned(data, 0o700); err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	conf := filepath.Join(dir, "pgbackrest.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("[global]\nrepo1-path=%s\nlog-path=%s\nlock-path=%s\nlog-level-file=off\n[%s]\npg1-path=%s\n", repo, dir, dir, stanza, data)), 0o644); err != nil {
		return 0, err
	}
	uid, gid := e.RunAsIDs()
	if err := os.Chown(dir, uid, gid); err != nil {
		return 0, err
	}
	start := time.Now()
	if out, err := e.RunAsServerUser(ctx, dir, pgbackrest, "--config="+conf, "--stanza="+stanza, "restore"); err != nil {
		return 0, fmt.Errorf("pgbackrest restore by hand: %w\n%s", err, out)
	}
	n := localnode.Node{Name: "hand", Role: localnode.RolePrimary, Host: "127.0.0.1", Port: port, DataDir: data}
	if err := e.SetParameters(n, map[string]string{"archive_mode": "off"}); err != nil {
		return 0, err
	}
	if err := e.Start(ctx, n); err != nil {
		return 0, err
	}
	defer func() { _ = e.Destroy(context.Background(), n) }()
	for {
		out, err := e.Psql(ctx, n, "postgres", "SELECT pg_is_in_recovery()")
		if err == nil && strings.TrimSpace(out) == "f" {
			return time.Since(start).Seconds(), nil
		}
		if time.Since(start) > time.Hour {
			return 0, fmt.Errorf("the hand restore did not end its recovery in an hour (%s): %w", out, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (b *RestoreBench) print(w *os.File) {
	fmt.Fprintf(w, "\nRestore drill (pgnvme_restore_drill's restore_seconds beside the same pgBackRest restore by hand; PostgreSQL %s; %s)\n", b.ServerVersion, b.Note)
	for _, s := range b.Sizes {
		fmt.Fprintf(w, "  %.2f GiB (scale %d):  drill %s   by hand %s   drill/hand %s   per GiB %s\n",
			s.DatabaseGiB, s.Scale, s.Drill.Format("s"), s.Hand.Format("s"), s.DrillOverHand.Format("x"), s.PerGiB.Format("s"))
	}
}

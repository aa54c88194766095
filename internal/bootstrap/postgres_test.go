package bootstrap_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// TestRender_postgresAcceptsPrimary renders a primary of a three-node
// cluster (tuned for a small machine, the installed PostgreSQL major,
// pgBackRest archive to a repository on this machine) into a fresh data
// directory made by pgfixture (localnode, as pgnvme_cluster makes one), the
// way the local platform writes it: the node's identity in
// pgnvme.conf, the rendered parameters as the cluster's parameters, the
// rendered pg_hba.conf. It proves the real server takes all of it:
//
//   - `postgres -C` reads the whole configuration (it exits non-zero on any
//     unknown parameter or invalid value, synchronous_standby_names included,
//     whose check parses the quorum syntax) and prints each setting as the
//     server holds it;
//   - the server starts with the rendered pg_hba.conf (it refuses to start
//     with an invalid one);
//   - a standby's rendered primary_conninfo connects, as a client and as a
//     replication connection, with the standby's name as application_name;
//   - pgBackRest, configured only by the rendered pgbackrest.conf, creates the
//     stanza and `pgbackrest check` sees a WAL segment arrive through the
//     rendered archive_command (run by the server, from paths with a space, a
//     quote and a '%' in them);
//   - the rendered restore_command fetches that segment back.
//
// pgBackRest is part of the local platform; a missing binary fails the test.
func TestRender_postgresAcceptsPrimary(t *testing.T) {
	pgbackrest, err := exec.LookPath("pgbackrest")
	if err != nil {
		t.Fatalf("pgBackRest is needed to check the rendered archive settings and is not on PATH: install the pgbackrest package (apt-get install pgbackrest): %v", err)
	}
	pg := pgfixture.Init(t, pgfixture.Options{Name: "pg-a"})
	psql := pg.Bin(t, "psql")
	dataDir := pg.Node.DataDir
	base := filepath.Dir(dataDir)
	// Paths a shell and PostgreSQL's %-escapes must both get right.
	pgbrDir := filepath.Join(base, "pgbr conf 100% it's")
	for _, d := range []string{pgbrDir, filepath.Join(pgbrDir, "repo"), filepath.Join(pgbrDir, "log"),
		filepath.Join(pgbrDir, "lock"), filepath.Join(pgbrDir, "spool")} {
		if err := pg.Engine.MkdirAllOwned(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}

	params, err := capacity.Tune(capacity.Hardware{
		VCPUs: 2, MemoryGiB: 2, DiskGiB: 20, Storage: capacity.StorageNVMe,
		Workload: capacity.WorkloadOLTP, MaxConnections: 50, PostgresMajor: pg.Major,
	})
	if err != nil {
		t.Fatal(err)
	}
	c := bootstrap.Cluster{
		Name:          "demo",
		PostgresMajor: pg.Major,
		// "any" must be quoted in synchronous_standby_names; the third name
		// needs quotes, a doubled quote, and a backslash.
		Nodes: []string{"pg-a", "any", `Pg "C" it's \x`},
		Synchronous: bootstrap.Synchronous{
			Method: quorum.MethodAny, Number: 1, DataDurability: bootstrap.DurabilityRequired, Commit: bootstrap.CommitRemoteApply,
		},
		Parameters: params,
		Archive: &bootstrap.Archive{
			PgBackRestOptions: map[string]string{
				"repo1-type":           "posix",
				"repo1-path":           filepath.Join(pgbrDir, "repo"),
				"lock-path":            filepath.Join(pgbrDir, "lock"),
				"repo1-retention-full": "1",
				"start-fast":           "y",
				"log-level-console":    "warn",
				"log-level-file":       "detail",
			},
		},
	}
	primary := bootstrap.Node{
		Name:                 "pg-a",
		Role:                 bootstrap.RolePrimary,
		Port:                 pg.Port(),
		DataDir:              dataDir,
		SocketDir:            pg.Node.SocketDir(),
		PgBackRestConfigPath: filepath.Join(pgbrDir, "pgbackrest.conf"),
		PgBackRestLogDir:     filepath.Join(pgbrDir, "log"),
		PgBackRestSpoolDir:   filepath.Join(pgbrDir, "spool"),
		ArchiverPath:         pgbackrest,
		ReplicationUser:      "postgres",
		AllowedCIDRs:         []string{"127.0.0.1/32", "10.0.0.0/8"},
	}
	r, err := bootstrap.Render(c, primary)
	if err != nil {
		t.Fatal(err)
	}

	// Write it as the local platform does: the rendered parameters are the
	// cluster's parameters (pgnvme.conf, after the node's identity), plus
	// fsync off for speed; then the rendered pg_hba.conf and pgbackrest.conf.
	clusterParams := maps.Clone(r.Parameters)
	clusterParams["fsync"] = "off"
	if err := pg.Engine.SetParameters(pg.Node, clusterParams); err != nil {
		t.Fatal(err)
	}
	if err := pg.Engine.WriteFileOwned(filepath.Join(dataDir, "pg_hba.conf"), []byte(r.HBAFile()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := pg.Engine.WriteFileOwned(primary.PgBackRestConfigPath, []byte(r.PgBackRestConf), 0o640); err != nil {
		t.Fatal(err)
	}

	// Every rendered parameter, as the server reads it.
	exact := map[string]string{ // values postgres -C prints as rendered
		"synchronous_standby_names": `ANY 1 ("any", "Pg ""C"" it's \x")`,
		"synchronous_commit":        "remote_apply",
		"archive_mode":              "on",
		"hot_standby":               "on",
		"wal_level":                 "replica",
		"wal_log_hints":             "on",
		"max_wal_senders":           "10",
		"max_replication_slots":     "10",
		"archive_timeout":           "60",
		"wal_keep_size":             "256",
	}
	for _, k := range []string{"archive_command", "restore_command"} {
		exact[k] = r.Parameters[k]
	}
	for _, k := range slices.Sorted(maps.Keys(r.Parameters)) {
		got, err := pg.ConfigValue(k)
		if err != nil {
			t.Fatalf("postgres %d refused the rendered configuration (asking for %s): %v\n%s", pg.Major, k, err, bootstrap.FormatConf(r.Parameters))
		}
		if want, ok := exact[k]; ok && got != want {
			t.Errorf("%s: PostgreSQL reads %q, want %q", k, got, want)
		}
	}

	// Start it with the rendered pg_hba.conf (Start waits until it accepts
	// connections).
	pg.Start(t)

	// A standby's primary_conninfo reaches this primary, quoted name intact.
	standby := primary
	standby.Name, standby.Role = `Pg "C" it's \x`, bootstrap.RoleStandby
	standby.PrimaryHost, standby.PrimaryPort = "127.0.0.1", pg.Port()
	sr, err := bootstrap.Render(c, standby)
	if err != nil {
		t.Fatal(err)
	}
	if !sr.StandbySignal {
		t.Error("a standby's rendering has no standby.signal")
	}
	if got, err := runPsql(psql, sr.PrimaryConnInfo+" dbname=postgres", "SHOW application_name"); err != nil || got != standby.Name {
		t.Errorf("application_name through primary_conninfo %q = %q, %v; want %q", sr.PrimaryConnInfo, got, err, standby.Name)
	}
	if got, err := runPsql(psql, sr.PrimaryConnInfo+" replication=true", "IDENTIFY_SYSTEM"); err != nil || !strings.Contains(got, "|1|") {
		t.Errorf("replication connection through primary_conninfo: %q, %v", got, err)
	}

	// pgBackRest, from the rendered configuration only, and the server's
	// archive_command; run as the server's user, as the platform runs it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pgbr := func(args ...string) string {
		t.Helper()
		out, err := pg.Engine.RunAsServerUser(ctx, base, pgbackrest, append([]string{"--config=" + primary.PgBackRestConfigPath, "--stanza=demo"}, args...)...)
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(pgbrDir, "log", "demo-"+args[0]+".log"))
			t.Fatalf("pgbackrest %s: %v\n%s\nlog:\n%s\nserver log:\n%s", strings.Join(args, " "), err, out, tail(string(log), 40), pg.LogTail(40))
		}
		return out
	}
	pgbr("stanza-create")
	pgbr("check") // switches WAL and waits until the segment is in the repository
	archived, err := runPsql(psql, sr.PrimaryConnInfo+" dbname=postgres", "SELECT last_archived_wal FROM pg_stat_archiver")
	if err != nil || len(archived) != 24 {
		t.Fatalf("pg_stat_archiver.last_archived_wal = %q, %v: the server archived nothing", archived, err)
	}

	// restore_command, as the server would run it in recovery.
	restoreTo := "pg_wal/RECOVERYXLOG-test"
	cmdline := expandPercent(r.Parameters["restore_command"], map[byte]string{'f': archived, 'p': restoreTo})
	if out, err := pg.Engine.RunAsServerUser(ctx, dataDir, "/bin/sh", "-c", cmdline); err != nil {
		t.Fatalf("restore_command %q: %v\n%s", cmdline, err, out)
	}
	fi, err := os.Stat(filepath.Join(dataDir, restoreTo))
	if err != nil || fi.Size() != 16<<20 {
		t.Fatalf("restore_command fetched %v (%v), want a 16 MiB WAL segment", fi, err)
	}
}

// TestRender_walgCommandsReadTheEnvFile runs the rendered WAL-G
// archive_command and restore_command with sh, as PostgreSQL does, against a
// stand-in wal-g that records its arguments and environment (WAL-G itself is
// not installable here): the commands must source the rendered environment
// file, export it, and pass WAL-G the segment.
func TestRender_walgCommandsReadTheEnvFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal g %dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(dir, "record")
	stub := filepath.Join(dir, "wal-g")
	script := "#!/bin/sh\n" +
		"printf 'args=%s|%s|%s\\n' \"$1\" \"$2\" \"$3\" >> \"$RECORD\"\n" +
		"printf 'prefix=%s region=%s sse=%s\\n' \"$WALG_S3_PREFIX\" \"$AWS_REGION\" \"$WALG_S3_SSE\" >> \"$RECORD\"\n"
	if err := os.WriteFile(stub, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	c := cluster3()
	c.Archive = &bootstrap.Archive{WALGEnv: s3Archive.WALGEnv()}
	n := ec2Node("pg-a", bootstrap.RolePrimary)
	n.WALGEnvPath = filepath.Join(dir, "walg env's.env")
	r, err := bootstrap.Render(c, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.WALGEnvPath, []byte(r.WALGEnvFile), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		param, want string
	}{
		{"archive_command", "args=wal-push|pg_wal/000000010000000000000003|"},
		{"restore_command", "args=wal-fetch|000000010000000000000003|pg_wal/RECOVERYXLOG"},
	} {
		cmdline := expandPercent(r.Parameters[tc.param], map[byte]string{'p': map[string]string{
			"archive_command": "pg_wal/000000010000000000000003", "restore_command": "pg_wal/RECOVERYXLOG",
		}[tc.param], 'f': "000000010000000000000003"})
		cmd := exec.Command("/bin/sh", "-c", cmdline)
		cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "RECORD=" + record}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %q: %v\n%s", tc.param, cmdline, err, out)
		}
		got, _ := os.ReadFile(record)
		lines := strings.Split(strings.TrimSpace(string(got)), "\n")
		if len(lines) < 2 || lines[len(lines)-2] != tc.want ||
			lines[len(lines)-1] != "prefix=s3://pg-archive/clusters/demo region=eu-west-1 sse=AES256" {
			t.Errorf("%s ran wal-g with:\n%s\nwant %q and the environment file's variables", tc.param, got, tc.want)
		}
	}

	// A missing environment file fails the command instead of archiving nowhere.
	if err := os.Remove(n.WALGEnvPath); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", expandPercent(r.Parameters["archive_command"], map[byte]string{'p': "pg_wal/x"}))
	cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "RECORD=" + record}
	if err := cmd.Run(); err == nil {
		t.Error("archive_command succeeded without its environment file")
	}
}

// expandPercent replaces %x in a PostgreSQL archive or restore command as the
// server does: %% is %, %p and %f (and %r) are their values, and any other %
// is kept.
func expandPercent(command string, values map[byte]string) string {
	var b strings.Builder
	for i := 0; i < len(command); i++ {
		if command[i] == '%' && i+1 < len(command) {
			if command[i+1] == '%' {
				b.WriteByte('%')
				i++
				continue
			}
			if v, ok := values[command[i+1]]; ok {
				b.WriteString(v)
				i++
				continue
			}
		}
		b.WriteByte(command[i])
	}
	return b.String()
}

// runPsql runs one command through psql with connection string conninfo and
// returns its unaligned, tuples-only output without the final newline.
func runPsql(psql, conninfo, sql string) (string, error) {
	cmd := exec.Command(psql, "-X", "-q", "-A", "-t", "-d", conninfo, "-c", sql)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "PGCONNECT_TIMEOUT=5"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("psql -d %q -c %q: %w: %s", conninfo, sql, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSuffix(stdout.String(), "\n"), nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

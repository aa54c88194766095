package pgbench_test

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

// TestBytesPerScaleOnPostgres re-measures BytesPerScale: it initialises a
// pgbench dataset at scale 10 on a throwaway PostgreSQL server (pgfixture's)
// and checks that the four pgbench tables' pg_total_relation_size per unit
// of scale is within 10% of the constant.
func TestBytesPerScaleOnPostgres(t *testing.T) {
	const scale = 10
	pg := pgfixture.Start(t, pgfixture.Options{})
	pgbenchBin := pg.Bin(t, "pgbench")
	pg.Psql(t, "postgres", "CREATE DATABASE bench")
	initCmd := exec.Command(pgbenchBin, "-i", "-q", "-s", strconv.Itoa(scale),
		"-h", "127.0.0.1", "-p", strconv.Itoa(pg.Port()), "-U", "postgres", "bench")
	initCmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=5")
	if out, err := initCmd.CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i -s %d: %v\n%s", scale, err, out)
	}
	out := pg.Psql(t, "bench", `SELECT sum(pg_total_relation_size(c)) FROM unnest(array['pgbench_accounts',
		'pgbench_branches', 'pgbench_tellers', 'pgbench_history']::regclass[]) AS c`)
	total, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		t.Fatalf("reading the total size %q: %v", out, err)
	}
	perScale := float64(total) / scale
	ratio := perScale / pgbench.BytesPerScale
	t.Logf("scale %d: %d bytes, %.0f bytes per scale, %.4f x BytesPerScale (%d)", scale, total, perScale, ratio, pgbench.BytesPerScale)
	if ratio < 0.9 || ratio > 1.1 {
		t.Errorf("measured %.0f bytes per scale at scale %d, %.1f%% off BytesPerScale = %d: re-measure and update the constant",
			perScale, scale, (ratio-1)*100, pgbench.BytesPerScale)
	}
}

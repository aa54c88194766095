package main

import (
	"context"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
)

// The maintenance measurements against a real PostgreSQL (the fixture's, wal_level = logical, a small
// pgbench dataset), the same server on both sides: every figure is made, the bloat and the backlog are
// real and measured, and the slot is gone afterwards.
func TestBenchMaintenance(t *testing.T) {
	s := pgfixture.Start(t, pgfixture.Options{Params: map[string]string{"wal_level": "logical"}})
	ctx := context.Background()
	major, _, err := s.Engine.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgbenchInit(ctx, postgresBin{Major: major, BinDir: s.Engine.BinDir()}, s.Port(), 20); err != nil {
		t.Fatal(err)
	}
	b, err := benchMaintenance(ctx, [2]int{s.Port(), s.Port()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if b.DeadMiB <= 0 || b.TableMiB < 250 || b.DeadMiB > b.TableMiB/10 || b.BacklogMiB <= 0 {
		t.Fatalf("bloat %.1f MiB dead in %.1f MiB, backlog %.1f MiB: want a measured bloat of about 1%% of a table of about 260 MiB and a backlog", b.DeadMiB, b.TableMiB, b.BacklogMiB)
	}
	if b.VacuumSecondsNVMe.Median <= 0 || b.DecodeMiBpsGP3.Median <= 0 || len(b.VacuumRatio.Samples) != 1 || len(b.DecodeRatio.Samples) != 1 {
		t.Fatalf("figures missing: %+v", b)
	}
	conn, err := benchConnect(ctx, s.Port())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var slots int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots").Scan(&slots); err != nil || slots != 0 {
		t.Fatalf("%d slots left (%v)", slots, err)
	}
	t.Logf("VACUUM of %.1f MiB dead in %.1f MiB: %.2f s (%.0f%% in I/O); %.1f MiB of WAL decoded at %.1f MiB/s",
		b.DeadMiB, b.TableMiB, b.VacuumSecondsNVMe.Median, 100*b.VacuumIOShareNVMe.Median, b.BacklogMiB, b.DecodeMiBpsNVMe.Median)
}

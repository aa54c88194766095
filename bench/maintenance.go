package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaintenanceBench is the talk's two other measurements, on the storage section's NVMe-like and gp3-like
// nodes under the same memory limit: VACUUM of a measured amount of bloat (its time, and the share of the
// VACUUM backend's samples waiting on I/O), and draining a logical-decoding backlog of a measured size
// (MiB of WAL decoded per second). Each round makes the bloat (or the backlog) afresh on both nodes and
// measures both, the order alternating.
type MaintenanceBench struct {
	// BloatRowsPercent is the share of pgbench_accounts' rows updated with autovacuum off for the table:
	// every one leaves a dead row version.
	BloatRowsPercent int `json:"bloat_rows_percent"`
	// TableMiB is pgbench_accounts' heap (dead versions included) before the VACUUM, DeadMiB the dead
	// versions' part of it (dead rows times the average row's size on disk), median over rounds and nodes.
	TableMiB float64 `json:"table_mib"`
	DeadMiB  float64 `json:"dead_mib"`
	// VacuumSeconds and VacuumIOShare (the share of 100 ms samples of the VACUUM backend in an IO wait) per
	// side; VacuumRatio is gp3-like time over NVMe-like time per round.
	VacuumSecondsNVMe Stat `json:"vacuum_seconds_nvme"`
	VacuumSecondsGP3  Stat `json:"vacuum_seconds_gp3"`
	VacuumIOShareNVMe Stat `json:"vacuum_io_share_nvme"`
	VacuumIOShareGP3  Stat `json:"vacuum_io_share_gp3"`
	VacuumRatio       Stat `json:"vacuum_ratio_gp3_over_nvme"`
	// BacklogMiB is the WAL a logical replication slot (test_decoding) fell behind by, median over rounds
	// and nodes; DecodeMiBps the rate at which pg_logical_slot_get_changes drained it, per side;
	// DecodeRatio NVMe-like rate over gp3-like rate per round.
	BacklogMiB      float64 `json:"backlog_mib"`
	DecodeMiBpsNVMe Stat    `json:"decode_mib_per_s_nvme"`
	DecodeMiBpsGP3  Stat    `json:"decode_mib_per_s_gp3"`
	DecodeRatio     Stat    `json:"decode_ratio_nvme_over_gp3"`
}

const (
	// maintenanceBloatModulo picks the rows updated for the bloat: aid % 100 = 0, one in a hundred (each
	// update also inserts into the primary key at random, which on the gp3-like node costs a read each).
	maintenanceBloatModulo = 100
	// maintenanceBacklogModulo picks the rows updated for the decoding backlog: one in two hundred.
	maintenanceBacklogModulo = 200
	maintenanceSlot          = "pgnvme_bench"
)

// benchMaintenance measures rounds rounds on the nodes at ports[0] (NVMe-like) and ports[1] (gp3-like),
// which run with wal_level = logical and hold the storage section's pgbench dataset.
func benchMaintenance(ctx context.Context, ports [2]int, rounds int) (*MaintenanceBench, error) {
	b := &MaintenanceBench{BloatRowsPercent: 100 / maintenanceBloatModulo}
	var vac, io, dec [2][]float64
	var vacR, decR, tables, dead, backlog []float64
	for i := 0; i < rounds; i++ {
		order := []int{0, 1}
		if i%2 == 1 {
			order = []int{1, 0}
		}
		for _, k := range order {
			progress("maintenance: round %d/%d, VACUUM and decoding on the %s node", i+1, rounds, []string{"NVMe-like", "gp3-like"}[k])
			v, err := measureVacuum(ctx, ports[k])
			if err != nil {
				return nil, fmt.Errorf("VACUUM on the %s node: %w", []string{"NVMe-like", "gp3-like"}[k], err)
			}
			d, err := measureDecoding(ctx, ports[k])
			if err != nil {
				return nil, fmt.Errorf("logical decoding on the %s node: %w", []string{"NVMe-like", "gp3-like"}[k], err)
			}
			vac[k], io[k], dec[k] = append(vac[k], v.seconds), append(io[k], v.ioShare), append(dec[k], d.mib/d.seconds)
			tables, dead, backlog = append(tables, v.tableMiB), append(dead, v.deadMiB), append(backlog, d.mib)
			progress("maintenance: %s node: VACUUM of %.0f MiB dead in a %.0f MiB table %.1f s (%.0f%% of samples in I/O), %.0f MiB of WAL decoded at %.1f MiB/s",
				[]string{"NVMe-like", "gp3-like"}[k], v.deadMiB, v.tableMiB, v.seconds, 100*v.ioShare, d.mib, d.mib/d.seconds)
		}
		vacR = append(vacR, vac[1][i]/vac[0][i])
		decR = append(decR, dec[0][i]/dec[1][i])
	}
	b.TableMiB, b.DeadMiB, b.BacklogMiB = newStat(tables).Median, newStat(dead).Median, newStat(backlog).Median
	b.VacuumSecondsNVMe, b.VacuumSecondsGP3 = newStat(vac[0]), newStat(vac[1])
	b.VacuumIOShareNVMe, b.VacuumIOShareGP3 = newStat(io[0]), newStat(io[1])
	b.DecodeMiBpsNVMe, b.DecodeMiBpsGP3 = newStat(dec[0]), newStat(dec[1])
	b.VacuumRatio, b.DecodeRatio = newStat(vacR), newStat(decR)
	return b, nil
}

type vacuumRun struct{ seconds, ioShare, tableMiB, deadMiB float64 }

// measureVacuum makes the bloat (one account in maintenanceBloatModulo updated, autovacuum off for the table), writes
// everything out (CHECKPOINT), then times a plain VACUUM of the table while another connection samples the
// VACUUM backend's wait event every 100 ms.
func measureVacuum(ctx context.Context, port int) (vacuumRun, error) {
	var r vacuumRun
	conn, err := benchConnect(ctx, port)
	if err != nil {
		return r, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "ALTER TABLE pgbench_accounts SET (autovacuum_enabled = off)"); err != nil {
		return r, err
	}
	tag, err := conn.Exec(ctx, fmt.Sprintf("UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid %% %d = 0", maintenanceBloatModulo))
	if err != nil {
		return r, err
	}
	for _, sql := range []string{"ANALYZE pgbench_accounts", "CHECKPOINT"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return r, fmt.Errorf("%s: %w", sql, err)
		}
	}
	// The dead versions: one per row updated (autovacuum is off), each of the table's average row size.
	var heap int64
	var live float64
	if err := conn.QueryRow(ctx, "SELECT pg_relation_size(oid), reltuples::float8 FROM pg_class WHERE relname = 'pgbench_accounts'").Scan(&heap, &live); err != nil {
		return r, err
	}
	dead := float64(tag.RowsAffected())
	r.tableMiB = float64(heap) / (1 << 20)
	if dead+live > 0 {
		r.deadMiB = r.tableMiB * dead / (dead + live)
	}
	var pid int32
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return r, err
	}
	sampler, err := benchConnect(ctx, port)
	if err != nil {
		return r, err
	}
	defer sampler.Close(context.Background())
	done := make(chan struct{})
	samples := make(chan [2]int, 1)
	go func() {
		var n, inIO int
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				samples <- [2]int{n, inIO}
				return
			case <-t.C:
				var typ *string
				if err := sampler.QueryRow(ctx, "SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1", pid).Scan(&typ); err != nil {
					continue
				}
				n++
				if typ != nil && *typ == "IO" {
					inIO++
				}
			}
		}
	}()
	start := time.Now()
	_, verr := conn.Exec(ctx, "VACUUM pgbench_accounts")
	r.seconds = time.Since(start).Seconds()
	close(done)
	s := <-samples
	if verr != nil {
		return r, verr
	}
	if s[0] > 0 {
		r.ioShare = float64(s[1]) / float64(s[0])
	}
	_, err = conn.Exec(ctx, "ALTER TABLE pgbench_accounts RESET (autovacuum_enabled)")
	return r, err
}

type decodeRun struct{ seconds, mib float64 }

// measureDecoding makes a logical replication slot (test_decoding), lets it fall behind by the WAL of an
// UPDATE of one account in maintenanceBacklogModulo, writes everything out (CHECKPOINT), then times draining the slot
// with pg_logical_slot_get_changes (the changes counted on the server, not sent).
func measureDecoding(ctx context.Context, port int) (decodeRun, error) {
	var r decodeRun
	conn, err := benchConnect(ctx, port)
	if err != nil {
		return r, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1", maintenanceSlot); err != nil {
		return r, err
	}
	var from string
	if err := conn.QueryRow(ctx, "SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'test_decoding')", maintenanceSlot).Scan(&from); err != nil {
		return r, fmt.Errorf("creating the slot (wal_level must be logical): %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.Background(), "SELECT pg_drop_replication_slot($1)", maintenanceSlot)
	}()
	// A checkpoint first, so that the backlog's WAL holds a full-page image of every page the UPDATE
	// touches first, whatever ran before; another after, so that the drain reads WAL written out.
	for _, sql := range []string{
		"CHECKPOINT",
		fmt.Sprintf("UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid %% %d = 1", maintenanceBacklogModulo),
		"CHECKPOINT",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return r, fmt.Errorf("%s: %w", sql, err)
		}
	}
	var bytes float64
	if err := conn.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::float8", from).Scan(&bytes); err != nil {
		return r, err
	}
	r.mib = bytes / (1 << 20)
	start := time.Now()
	var changes int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_logical_slot_get_changes($1, NULL, NULL)", maintenanceSlot).Scan(&changes); err != nil {
		return r, err
	}
	r.seconds = time.Since(start).Seconds()
	if changes == 0 {
		return r, errors.New("the slot decoded no change")
	}
	return r, nil
}

// benchConnect connects to a storage node as postgres over loopback (trusted there).
func benchConnect(ctx context.Context, port int) (*pgx.Conn, error) {
	return pgx.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", port))
}

// print writes the section's lines, each beside the talk's figure.
func (b *MaintenanceBench) print(line func(string, Stat, string, string)) {
	line("VACUUM, NVMe-like", b.VacuumSecondsNVMe, "s", fmt.Sprintf("   the talk: 366 s for 10 GB of bloat; here %.0f MiB dead in %.0f MiB", b.DeadMiB, b.TableMiB))
	line("VACUUM, gp3-like", b.VacuumSecondsGP3, "s", "   the talk: 964 s")
	line("VACUUM gp3-like / NVMe-like", b.VacuumRatio, "x", "   the talk: 2.6x")
	line("VACUUM samples in I/O, NVMe-like", b.VacuumIOShareNVMe, "", "")
	line("VACUUM samples in I/O, gp3-like", b.VacuumIOShareGP3, "", "")
	line("decoding, NVMe-like", b.DecodeMiBpsNVMe, "MiB/s", fmt.Sprintf("   the talk: 89 MB/s; here a backlog of %.0f MiB of WAL", b.BacklogMiB))
	line("decoding, gp3-like", b.DecodeMiBpsGP3, "MiB/s", "   the talk: 52 MB/s")
	line("decoding NVMe-like / gp3-like", b.DecodeRatio, "x", "   the talk: 1.7x")
}

// maintenanceParams are the parameters the maintenance measurements add to the tuned ones: decoding needs
// wal_level = logical (a restart, which the cluster's apply makes).
func maintenanceParams(tuned string) string {
	return "merge(" + tuned + `, { wal_level = "logical" })`
}

package main

import (
	"context"
)

// RunStats are one side of a paired comparison.
type RunStats struct {
	TPS Stat `json:"tps"`
	P50 Stat `json:"p50_ms"`
	P95 Stat `json:"p95_ms"`
	P99 Stat `json:"p99_ms"`
	// DataFileRead and WALWrite are the shares (0-1) of sampled backends in IO:DataFileRead and
	// LWLock:WALWrite.
	DataFileRead Stat `json:"io_datafileread_share"`
	WALWrite     Stat `json:"lwlock_walwrite_share"`
	// Checkpoints are those begun during each run (pg_stat_bgwriter's timed and requested together): a
	// max_wal_size too small for the run's WAL starts one.
	Checkpoints Stat `json:"checkpoints"`
}

// runResult is one pgnvme_pgbench run.
type runResult struct {
	TPS  float64            `json:"tps"`
	P50  float64            `json:"p50"`
	P95  float64            `json:"p95"`
	P99  float64            `json:"p99"`
	Wait map[string]float64 `json:"wait"`
	// Checkpoints is read from the server around the run, not from pgnvme_pgbench.
	Checkpoints float64 `json:"-"`
}

// samples collects runResults for RunStats.
type samples struct{ tps, p50, p95, p99, dfr, wal, ckpt []float64 }

func (s *samples) add(r runResult) {
	s.tps, s.p50, s.p95, s.p99 = append(s.tps, r.TPS), append(s.p50, r.P50), append(s.p95, r.P95), append(s.p99, r.P99)
	s.dfr, s.wal, s.ckpt = append(s.dfr, r.Wait["IO:DataFileRead"]), append(s.wal, r.Wait["LWLock:WALWrite"]), append(s.ckpt, r.Checkpoints)
}

func (s *samples) stats() RunStats {
	return RunStats{TPS: newStat(s.tps), P50: newStat(s.p50), P95: newStat(s.p95), P99: newStat(s.p99), DataFileRead: newStat(s.dfr), WALWrite: newStat(s.wal),
		Checkpoints: newStat(s.ckpt)}
}

// checkpointsBegun is how many checkpoints the server at port has begun since its statistics were reset.
func checkpointsBegun(ctx context.Context, port int) (float64, error) {
	conn, err := benchConnect(ctx, port)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var n int64
	err = conn.QueryRow(ctx, "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter").Scan(&n)
	return float64(n), err
}

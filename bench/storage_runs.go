package main

import (
	"context"
	"fmt"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

// RunStats are one side of a paired comparison.
type RunStats struct {
	TPS Stat `json:"tps"`
	P50 Stat `json:"p50_ms"`
	P95 Stat `json:"p95_ms"`
	P99 Stat `json:"p99_ms"`
	// DataFileRead and WALWrite are the shares (0-1) of sampled backends in IO:DataFileRead and
	// LWLock:WALWrite; AioIoCompletion the share in IO:AioIoCompletion, where a backend of PostgreSQL 18 or
	// later waits for a read it handed to an I/O worker (io_method = worker) instead of reading itself.
	DataFileRead    Stat `json:"io_datafileread_share"`
	WALWrite        Stat `json:"lwlock_walwrite_share"`
	AioIoCompletion Stat `json:"io_aioiocompletion_share"`
	// Checkpoints are those begun during each run (timed and requested together, checkpointsSQL): a
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
type samples struct{ tps, p50, p95, p99, dfr, wal, aio, ckpt []float64 }

func (s *samples) add(r runResult) {
	s.tps, s.p50, s.p95, s.p99 = append(s.tps, r.TPS), append(s.p50, r.P50), append(s.p95, r.P95), append(s.p99, r.P99)
	s.dfr, s.wal, s.aio = append(s.dfr, r.Wait["IO:DataFileRead"]), append(s.wal, r.Wait["LWLock:WALWrite"]), append(s.aio, r.Wait["IO:AioIoCompletion"])
	s.ckpt = append(s.ckpt, r.Checkpoints)
}

func (s *samples) stats() RunStats {
	return RunStats{TPS: newStat(s.tps), P50: newStat(s.p50), P95: newStat(s.p95), P99: newStat(s.p99), DataFileRead: newStat(s.dfr), WALWrite: newStat(s.wal),
		AioIoCompletion: newStat(s.aio), Checkpoints: newStat(s.ckpt)}
}

// checkpointsBegun is how many checkpoints the server at port has begun since its statistics were reset.
func checkpointsBegun(ctx context.Context, port int) (float64, error) {
	conn, err := benchConnect(ctx, port)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	var num int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&num); err != nil {
		return 0, err
	}
	var n int64
	err = conn.QueryRow(ctx, checkpointsSQL(num)).Scan(&n)
	return float64(n), err
}

// checkpointsSQL counts the checkpoints begun, timed and requested, on a server of versionNum
// (server_version_num): pg_stat_bgwriter's up to 16, pg_stat_checkpointer's from 17, where they moved.
func checkpointsSQL(versionNum int) string {
	if versionNum >= 170000 {
		return "SELECT num_timed + num_requested FROM pg_stat_checkpointer"
	}
	return "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"
}

// storageRunTF is the talk's pgbench run with the pgbench at pgbenchPath on servers servers at once, the
// i-th at var.port_<x> with its result in output <x>, x = a, b, ...: Terraform reads the data sources
// concurrently.
func storageRunTF(pgbenchPath string, scale, seconds, servers int) string {
	tf := `
terraform {
  required_providers {
    pgnvme = { source = "pgnvme/pgnvme" }
  }
}
`
	for i := range servers {
		tf += fmt.Sprintf(`
variable "port_%[1]c" { type = number }
data "pgnvme_pgbench" "%[1]c" {
  server {
    host = "127.0.0.1"
    port = var.port_%[1]c
  }
  script           = %[2]q
  scale            = %[3]d
  clients          = %[4]d
  threads          = 2
  protocol         = "prepared"
  duration_seconds = %[5]d
  pgbench_path     = %[6]q
}
output "%[1]c" {
  value = {
    tps  = data.pgnvme_pgbench.%[1]c.tps
    p50  = data.pgnvme_pgbench.%[1]c.latency_p50_ms
    p95  = data.pgnvme_pgbench.%[1]c.latency_p95_ms
    p99  = data.pgnvme_pgbench.%[1]c.latency_p99_ms
    wait = data.pgnvme_pgbench.%[1]c.wait_events
  }
}
`, 'a'+i, pgbench.TalkScript, scale, storageClients, seconds, pgbenchPath)
	}
	return tf
}

// talkRunsAt runs the workspace rws (storageRunTF for len(ports) servers) against ports, all at once, and
// counts the checkpoints each server began during its run.
func talkRunsAt(env *terraformEnv, rws string, ports ...int) ([]runResult, error) {
	got := make([]runResult, len(ports))
	before := make([]float64, len(ports))
	args := []string{"apply", "-auto-approve", "-input=false", "-no-color", "-lock=false"}
	for i, port := range ports {
		var err error
		if before[i], err = checkpointsBegun(env.ctx, port); err != nil {
			return nil, fmt.Errorf("checkpoints before the run: %w", err)
		}
		args = append(args, fmt.Sprintf("-var=port_%c=%d", 'a'+i, port))
	}
	if err := env.run(rws, args...); err != nil {
		return nil, err
	}
	for i, port := range ports {
		if err := env.outputJSON(rws, string(rune('a'+i)), &got[i]); err != nil {
			return nil, err
		}
		after, err := checkpointsBegun(env.ctx, port)
		if err != nil {
			return nil, fmt.Errorf("checkpoints after the run: %w", err)
		}
		got[i].Checkpoints = after - before[i]
	}
	return got, nil
}

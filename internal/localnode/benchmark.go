package localnode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// BenchServer is what Benchmark needs of the server under test besides
// pgbench itself; *pgclient.Conn is one. Benchmark uses it from one
// goroutine at a time: first for the facts, then for the wait-event samples
// while pgbench runs.
type BenchServer interface {
	// ServerVersion is the server's server_version.
	ServerVersion(ctx context.Context) (string, error)
	// PgbenchScale is the row count of pgbench_branches.
	PgbenchScale(ctx context.Context) (int, error)
	// SampleWaitEvents counts the active backends of application appName
	// by "wait_event_type:wait_event" ("CPU" for none).
	SampleWaitEvents(ctx context.Context, appName string) (map[string]int64, error)
}

// Bench describes one benchmark run by Benchmark.
type Bench struct {
	// Pgbench is the pgbench binary (see FindBinary).
	Pgbench string
	// Options are the connection and the workload. A Scale of 0 without
	// Initialize is read from the server, as pgbench does for its built-in
	// scripts. ScriptPath and LogPrefix are set by Benchmark.
	Options pgbench.Options
	// Script is the text of a custom script, or "" to run Options.Builtin.
	Script string
	// Initialize runs pgbench -i at Options.Scale first (dropping and
	// re-creating the pgbench_* tables).
	Initialize bool
	// Password and SSLMode reach pgbench as PGPASSWORD and PGSSLMODE, and the
	// TLS files as PGSSLROOTCERT, PGSSLCERT and PGSSLKEY; empty ones are left
	// to the environment.
	Password, SSLMode            string
	SSLRootCert, SSLCert, SSLKey string
	// SampleWaitEvents counts pgbench's active backends by wait event every
	// SampleInterval (1 s when 0) while it runs, paced by Clock (wait.Real
	// when nil).
	SampleWaitEvents bool
	SampleInterval   time.Duration
	Clock            wait.Clock
	// Info and Warn, when set, receive what is happening (initialising,
	// running, each progress line) and failed samples.
	Info, Warn func(msg string, fields map[string]any)
}

// BenchResult is what one benchmark measured.
type BenchResult struct {
	// Options are the options pgbench ran with (the scale as read from the
	// server when it was 0).
	Options pgbench.Options
	// PgbenchVersion is the binary's version ("15.13"); ServerVersion the
	// server's server_version.
	PgbenchVersion, ServerVersion string
	// Summary is pgbench's printed summary, parsed.
	Summary pgbench.Summary
	// Log summarises pgbench's per-transaction log files.
	Log pgbench.LogStats
	// WaitEvents counts the sampled backend observations per wait event;
	// WaitSamples is their total. Both are empty without sampling.
	WaitEvents  map[string]int64
	WaitSamples int64
}

// BenchStep names a step of Benchmark, for errors.
type BenchStep string

// The steps of Benchmark, in order.
const (
	BenchVersion       BenchStep = "running pgbench --version"
	BenchServerVersion BenchStep = "reading the server's version"
	BenchTempDir       BenchStep = "creating a temporary directory"
	BenchScale         BenchStep = "reading the scale from pgbench_branches"
	BenchInitialize    BenchStep = "initialising the pgbench tables (pgbench -i)"
	BenchScript        BenchStep = "writing the script"
	BenchOptions       BenchStep = "checking the pgbench options"
	BenchRun           BenchStep = "running pgbench"
	BenchSummary       BenchStep = "reading pgbench's summary"
	BenchLog           BenchStep = "reading pgbench's per-transaction log"
)

// BenchError is Benchmark's error: the step that failed, pgbench's stderr
// when pgbench itself failed, and the cause.
type BenchError struct {
	Step   BenchStep
	Stderr string
	Err    error
}

func (e *BenchError) Error() string { return fmt.Sprintf("%s: %v", e.Step, e.Err) }
func (e *BenchError) Unwrap() error { return e.Err }

// Benchmark runs pgbench as b says against srv's server in a temporary
// directory it removes afterwards: pgbench --version, optionally pgbench -i,
// then the run with a per-transaction log and progress reports, sampling
// wait events on srv meanwhile. It returns pgbench's own figures, the log's
// percentiles and the samples; every failure is a *BenchError and reports no
// partial figures.
func Benchmark(ctx context.Context, srv BenchServer, b Bench) (BenchResult, error) {
	var res BenchResult
	fail := func(step BenchStep, stderr string, err error) (BenchResult, error) {
		return BenchResult{}, &BenchError{Step: step, Stderr: stderr, Err: err}
	}
	versionOut, _, err := RunPgbench(ctx, b.Pgbench, []string{"--version"}, nil, nil)
	if err != nil {
		return fail(BenchVersion, "", err)
	}
	if res.PgbenchVersion, err = pgbench.ParseVersion(versionOut); err != nil {
		return fail(BenchVersion, "", err)
	}
	if res.ServerVersion, err = srv.ServerVersion(ctx); err != nil {
		return fail(BenchServerVersion, "", err)
	}
	dir, err := os.MkdirTemp("", "pgnvme-pgbench-")
	if err != nil {
		return fail(BenchTempDir, "", err)
	}
	defer os.RemoveAll(dir)

	o := b.Options
	env := os.Environ()
	if b.Password != "" {
		env = append(env, "PGPASSWORD="+b.Password)
	}
	for _, v := range [][2]string{{"PGSSLMODE", b.SSLMode}, {"PGSSLROOTCERT", b.SSLRootCert}, {"PGSSLCERT", b.SSLCert}, {"PGSSLKEY", b.SSLKey}} {
		if v[1] != "" {
			env = append(env, v[0]+"="+v[1])
		}
	}
	if b.Initialize {
		b.info("initialising pgbench tables", map[string]any{"scale": o.Scale})
		if _, stderr, err := RunPgbench(ctx, b.Pgbench, pgbench.InitArgs(o), env, nil); err != nil {
			return fail(BenchInitialize, stderr, err)
		}
	} else if o.Scale == 0 {
		if o.Scale, err = srv.PgbenchScale(ctx); err != nil {
			return fail(BenchScale, "", err)
		}
	}
	o.ScriptPath = ""
	if b.Script != "" {
		o.ScriptPath = filepath.Join(dir, "script.pgbench")
		if err := os.WriteFile(o.ScriptPath, []byte(b.Script), 0o600); err != nil {
			return fail(BenchScript, "", err)
		}
	}
	o.LogPrefix = filepath.Join(dir, "txlog")
	if err := o.Validate(); err != nil {
		return fail(BenchOptions, "", err)
	}

	appName := "pgnvme-pgbench-" + randomHex(4)
	stop := func() (map[string]int64, int64) { return map[string]int64{}, 0 }
	if b.SampleWaitEvents {
		stop = b.startSampler(ctx, srv, appName)
	}
	b.info("running pgbench", map[string]any{"clients": o.Clients, "threads": o.Threads, "scale": o.Scale, "duration_seconds": o.DurationSeconds, "transactions": o.Transactions})
	stdout, stderr, err := RunPgbench(ctx, b.Pgbench, pgbench.RunArgs(o), append(env, "PGAPPNAME="+appName), func(line string) {
		if p, ok := pgbench.ParseProgress(line); ok {
			b.info("pgbench progress", map[string]any{"elapsed_s": p.Elapsed, "tps": p.TPS, "latency_ms": p.LatencyAvgMs, "failed": p.Failed})
		}
	})
	res.WaitEvents, res.WaitSamples = stop()
	if err != nil {
		return fail(BenchRun, stderr, err)
	}
	if res.Summary, err = pgbench.ParseSummary(stdout); err != nil {
		return fail(BenchSummary, "", err)
	}
	if res.Log, err = ReadPgbenchLogs(o.LogPrefix); err != nil {
		return fail(BenchLog, "", err)
	}
	res.Options = o
	return res, nil
}

// ReadPgbenchLogs reads every per-thread transaction log pgbench wrote
// under prefix (prefix.PID, prefix.PID.N) and summarises them.
func ReadPgbenchLogs(prefix string) (pgbench.LogStats, error) {
	files, err := filepath.Glob(prefix + ".*")
	if err != nil {
		return pgbench.LogStats{}, fmt.Errorf("listing the logs under %s: %w", prefix, err)
	}
	if len(files) == 0 {
		return pgbench.LogStats{}, fmt.Errorf("pgbench wrote no per-transaction log under %s", prefix)
	}
	var acc pgbench.LogAccumulator
	for _, f := range files {
		if err := addLogFile(&acc, f); err != nil {
			return pgbench.LogStats{}, err
		}
	}
	return acc.Stats()
}

func addLogFile(acc *pgbench.LogAccumulator, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := acc.Add(f); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// startSampler counts appName's backends by wait event on srv every
// interval until the returned stop is called; stop waits for a sample in
// flight (so srv is free again) and returns the counts and their total.
func (b Bench) startSampler(ctx context.Context, srv BenchServer, appName string) (stop func() (map[string]int64, int64)) {
	interval, clock := b.SampleInterval, b.Clock
	if interval <= 0 {
		interval = time.Second
	}
	if clock == nil {
		clock = wait.Real
	}
	counts := map[string]int64{}
	var samples int64
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-clock.After(interval):
			}
			got, err := srv.SampleWaitEvents(ctx, appName)
			if err != nil {
				if ctx.Err() == nil && b.Warn != nil {
					b.Warn("wait event sample failed", map[string]any{"error": err.Error()})
				}
				continue
			}
			for k, v := range got {
				counts[k] += v
				samples += v
			}
		}
	}()
	return func() (map[string]int64, int64) {
		close(quit)
		<-done
		return counts, samples
	}
}

func (b Bench) info(msg string, fields map[string]any) {
	if b.Info != nil {
		b.Info(msg, fields)
	}
}

func randomHex(n int) string {
	buf := make([]byte, n)
	if _, err := rand.Read(buf); err != nil {
		return fmt.Sprint(time.Now().UnixNano())
	}
	return hex.EncodeToString(buf)
}

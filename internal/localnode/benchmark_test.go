package localnode_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
)

// messages records what Benchmark logs.
type messages struct {
	mu   sync.Mutex
	seen map[string]int
}

func (m *messages) log(msg string, _ map[string]any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]int{}
	}
	m.seen[msg]++
}

// TestLocalBenchmark runs the real pgbench through Benchmark against a
// primary made by the engine: the talk's script after pgbench -i with wait-event
// sampling, a built-in script with the scale read from the server, and the
// failures a user meets (no pgbench tables, a broken script).
func TestLocalBenchmark(t *testing.T) {
	e := newEngine(t)
	major, _, err := e.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(e.BinDir(), "pgbench")
	node := localnode.Node{Name: "bench", Role: localnode.RolePrimary, Host: "127.0.0.1", Port: acctest.FreePorts(t, 1)[0], DataDir: filepath.Join(baseDir(t), "bench")}
	t.Cleanup(func() {
		if err := e.Destroy(context.Background(), node); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := e.InitPrimary(ctx, node, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, node); err != nil {
		t.Fatal(err)
	}
	conn, err := pgclient.Connect(ctx, pgclient.Config{Host: "127.0.0.1", Port: node.Port, Database: "postgres", User: e.Superuser(), SSLMode: "disable"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	opts := pgbench.Options{
		Host: "127.0.0.1", Port: node.Port, User: e.Superuser(), Database: "postgres",
		Scale: 1, Clients: 2, Threads: 2, DurationSeconds: 3, Protocol: pgbench.ProtocolSimple, ProgressSeconds: 1,
	}

	t.Run("talk script", func(t *testing.T) {
		var info messages
		res, err := localnode.Benchmark(ctx, conn, localnode.Bench{
			Pgbench: bin, Options: opts, Script: pgbench.TalkScript, Initialize: true, SSLMode: "disable",
			SampleWaitEvents: true, Info: info.log, Warn: func(msg string, f map[string]any) { t.Errorf("warning %s %v", msg, f) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if v := strconv.Itoa(major) + "."; !strings.HasPrefix(res.PgbenchVersion, v) || !strings.HasPrefix(res.ServerVersion, v) {
			t.Errorf("versions pgbench %q, server %q; want %d.x", res.PgbenchVersion, res.ServerVersion, major)
		}
		if res.Summary.Transactions <= 0 || res.Log.Transactions != res.Summary.Transactions {
			t.Errorf("summary %d transactions, log %d; want the same, above 0", res.Summary.Transactions, res.Log.Transactions)
		}
		if res.Log.P50 <= 0 || res.Log.P50 > res.Log.P99 || res.Log.P99 > res.Log.Max {
			t.Errorf("percentiles %+v out of order", res.Log)
		}
		var total int64
		for _, n := range res.WaitEvents {
			total += n
		}
		if res.WaitSamples == 0 || total != res.WaitSamples {
			t.Errorf("wait events %v (%d in all), samples %d; want some that add up", res.WaitEvents, total, res.WaitSamples)
		}
		if res.Options.Scale != 1 || res.Options.ScriptPath == "" {
			t.Errorf("options as run %+v; want scale 1 and a script path", res.Options)
		}
		if _, err := os.Stat(filepath.Dir(res.Options.LogPrefix)); !os.IsNotExist(err) {
			t.Errorf("temporary directory %s still there (%v)", filepath.Dir(res.Options.LogPrefix), err)
		}
		for _, msg := range []string{"initialising pgbench tables", "running pgbench", "pgbench progress"} {
			if info.seen[msg] == 0 {
				t.Errorf("no %q logged; logged %v", msg, info.seen)
			}
		}
	})

	t.Run("scale from the server, no sampling", func(t *testing.T) {
		o := opts
		o.Scale, o.Builtin, o.DurationSeconds, o.Transactions = 0, pgbench.BuiltinSelectOnly, 0, 20
		res, err := localnode.Benchmark(ctx, conn, localnode.Bench{Pgbench: bin, Options: o})
		if err != nil {
			t.Fatal(err)
		}
		if res.Options.Scale != 1 || res.WaitSamples != 0 || len(res.WaitEvents) != 0 || res.Summary.Transactions != 40 {
			t.Errorf("scale %d, %d samples %v, %d transactions; want 1, none, 40", res.Options.Scale, res.WaitSamples, res.WaitEvents, res.Summary.Transactions)
		}
	})

	t.Run("broken script", func(t *testing.T) {
		_, err := localnode.Benchmark(ctx, conn, localnode.Bench{Pgbench: bin, Options: opts, Script: "SELEC 1;"})
		var be *localnode.BenchError
		if !errors.As(err, &be) || be.Step != localnode.BenchRun || !strings.Contains(be.Err.Error(), "syntax error") || be.Stderr == "" {
			t.Errorf("err = %v; want a BenchRun error with pgbench's syntax error and stderr", err)
		}
	})

	t.Run("no pgbench tables", func(t *testing.T) {
		psql(t, e, node, "DROP TABLE pgbench_branches")
		o := opts
		o.Scale, o.Builtin = 0, pgbench.BuiltinTPCBLike
		_, err := localnode.Benchmark(ctx, conn, localnode.Bench{Pgbench: bin, Options: o})
		var be *localnode.BenchError
		if !errors.As(err, &be) || be.Step != localnode.BenchScale || pgclient.SQLState(err) != "42P01" {
			t.Errorf("err = %v; want a BenchScale error for the missing table", err)
		}
	})
}

package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// benchWriter inserts a row per commit through the multi-host URI, reconnecting on errors, and remembers the
// acknowledged ids and when each was acknowledged.
type benchWriter struct {
	mu    sync.Mutex
	acked []int64
	at    []time.Time
	uri   string
	pass  string
	stopC chan struct{}
	done  chan struct{}
}

func (e *ec2Env) connect(ctx context.Context, uri, password string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(uri)
	if err != nil {
		return nil, err
	}
	cfg.Password, cfg.DialFunc, cfg.ConnectTimeout = password, e.fx.Sim.DialContext, 3*time.Second
	cfg.TLSConfig = nil
	for _, fb := range cfg.Fallbacks {
		fb.TLSConfig = nil
	}
	return pgx.ConnectConfig(ctx, cfg)
}

func (e *ec2Env) startWriter(uri, password string) (*benchWriter, error) {
	ctx := context.Background()
	conn, err := e.connect(ctx, uri, password)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE IF NOT EXISTS bench_acked (id bigint PRIMARY KEY)"); err != nil {
		return nil, err
	}
	w := &benchWriter{uri: uri, pass: password, stopC: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		var id int64
		for {
			select {
			case <-w.stopC:
				if conn != nil {
					_ = conn.Close(ctx)
				}
				return
			default:
			}
			if conn == nil {
				if conn, err = e.connect(ctx, uri, password); err != nil {
					conn = nil
					time.Sleep(100 * time.Millisecond) //nolint:forbidigo // a client's reconnect pause
					continue
				}
			}
			id++
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := conn.Exec(cctx, "INSERT INTO bench_acked VALUES ($1)", id)
			cancel()
			if err != nil {
				_ = conn.Close(ctx)
				conn = nil
				continue
			}
			w.mu.Lock()
			w.acked, w.at = append(w.acked, id), append(w.at, time.Now())
			w.mu.Unlock()
			time.Sleep(20 * time.Millisecond) //nolint:forbidigo // a steady, light write rate
		}
	}()
	return w, nil
}

func (w *benchWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// waitWriteAfter waits until a commit is acknowledged that the writer sent after t0 (its index past
// before, and acknowledged after a gap: the first write the new primary took).
func (w *benchWriter) waitWriteAfter(t0 time.Time, before int, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		n, at := len(w.acked), w.at
		w.mu.Unlock()
		// The first commit after a pause of over a second past t0: the writer went through the outage.
		for i := max(before, 1); i < n; i++ {
			if at[i].After(t0) && at[i].Sub(at[i-1]) > time.Second {
				return at[i], nil
			}
		}
		time.Sleep(50 * time.Millisecond) //nolint:forbidigo // polling the writer's own record
	}
	return time.Time{}, fmt.Errorf("no write was acknowledged within %s", limit)
}

// waitLeaderWrite waits until the observer names candidate the running leader, then until a commit is
// acknowledged after that.
func (w *benchWriter) waitLeaderWrite(before int, candidate string, o *observer, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if l, err := o.leader(); err == nil && l == candidate {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not lead within %s", candidate, limit)
		}
		time.Sleep(50 * time.Millisecond) //nolint:forbidigo // polling the observer's record
	}
	since := time.Now()
	for !w.ackedAfter(before, since) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not take writes within %s", candidate, limit)
		}
		time.Sleep(20 * time.Millisecond) //nolint:forbidigo // polling the writer's own record
	}
	return nil
}

// ackedAfter reports whether the writer's last acknowledged commit (past the first before) came after t.
func (w *benchWriter) ackedAfter(before int, t time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.at)
	return n > before && w.at[n-1].After(t)
}

// finish stops the writer and counts the acknowledged commits missing on the primary.
func (w *benchWriter) finish(e *ec2Env) (acked, lost int, err error) {
	close(w.stopC)
	<-w.done
	lost, err = e.rowsLost(context.Background(), w.uri, w.pass, w.acked)
	return len(w.acked), lost, err
}

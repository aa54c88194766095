package wait_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// states returns a Refresh that reports each state in turn (the last one repeats), counting calls.
func states(calls *int, seq ...string) func(context.Context) (int, string, error) {
	return func(context.Context) (int, string, error) {
		i := min(*calls, len(seq)-1)
		*calls++
		return i, seq[i], nil
	}
}

func TestFor(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name      string
		spec      func(calls *int) wait.Spec[int]
		wantCalls int
		wantErr   func(error) bool
		wantSleep []time.Duration
	}{
		{
			name: "target at once: no sleep",
			spec: func(c *int) wait.Spec[int] {
				return wait.Spec[int]{Refresh: states(c, "ready"), Pending: []string{"creating"}, Target: []string{"ready"}, Timeout: time.Minute}
			},
			wantCalls: 1,
			wantErr:   func(err error) bool { return err == nil },
		},
		{
			name: "pending then target: delays double up to the maximum",
			spec: func(c *int) wait.Spec[int] {
				return wait.Spec[int]{Refresh: states(c, "creating", "creating", "creating", "creating", "ready"), Pending: []string{"creating"},
					Target: []string{"ready"}, Timeout: time.Minute, MinInterval: time.Second, MaxInterval: 3 * time.Second}
			},
			wantCalls: 5,
			wantErr:   func(err error) bool { return err == nil },
			wantSleep: []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second},
		},
		{
			name: "unexpected state ends the wait",
			spec: func(c *int) wait.Spec[int] {
				return wait.Spec[int]{What: "instance", Refresh: states(c, "pending", "terminated"), Pending: []string{"pending"}, Target: []string{"running"}, Timeout: time.Minute}
			},
			wantCalls: 2,
			wantErr: func(err error) bool {
				var u *wait.UnexpectedStateError
				return errors.As(err, &u) && u.State == "terminated"
			},
		},
		{
			name: "timeout names the last state, and the last sleep is cut to the deadline",
			spec: func(c *int) wait.Spec[int] {
				return wait.Spec[int]{What: "x", Refresh: states(c, "creating"), Pending: []string{"creating"}, Target: []string{"ready"},
					Timeout: 2500 * time.Millisecond, MinInterval: time.Second, MaxInterval: time.Second}
			},
			wantCalls: 4,
			wantErr: func(err error) bool {
				var te *wait.TimeoutError
				return errors.As(err, &te) && te.LastState == "creating" && strings.Contains(err.Error(), "waiting for x")
			},
			wantSleep: []time.Duration{time.Second, time.Second, 500 * time.Millisecond},
		},
		{
			name: "an error that is not retryable ends the wait at once",
			spec: func(c *int) wait.Spec[int] {
				return wait.Spec[int]{Refresh: func(context.Context) (int, string, error) { *c++; return 0, "", errBoom }, Target: []string{"ready"}, Timeout: time.Minute}
			},
			wantCalls: 1,
			wantErr:   func(err error) bool { return errors.Is(err, errBoom) },
		},
		{
			name: "a retryable error keeps waiting and is reported on timeout",
			spec: func(c *int) wait.Spec[int] {
				return wait.Spec[int]{Refresh: func(context.Context) (int, string, error) { *c++; return 0, "", errBoom },
					Retryable: func(err error) bool { return errors.Is(err, errBoom) }, Target: []string{"ready"},
					Timeout: 3 * time.Second, MinInterval: time.Second, MaxInterval: time.Second}
			},
			wantCalls: 4,
			wantErr:   func(err error) bool { var te *wait.TimeoutError; return errors.As(err, &te) && errors.Is(err, errBoom) },
		},
		{
			name:    "no timeout is a programming error",
			spec:    func(c *int) wait.Spec[int] { return wait.Spec[int]{Refresh: states(c, "x"), Target: []string{"x"}} },
			wantErr: func(err error) bool { return errors.Is(err, wait.ErrNoTimeout) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			clock := wait.NewStepClock(t0)
			s := tt.spec(&calls)
			s.Clock = clock
			_, err := wait.For(context.Background(), s)
			if !tt.wantErr(err) {
				t.Fatalf("unexpected error: %v", err)
			}
			if calls != tt.wantCalls {
				t.Errorf("refreshed %d times, want %d", calls, tt.wantCalls)
			}
			if tt.wantSleep != nil && !equal(clock.Sleeps, tt.wantSleep) {
				t.Errorf("slept %v, want %v", clock.Sleeps, tt.wantSleep)
			}
		})
	}
}

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestForCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := wait.For(ctx, wait.Spec[int]{What: "x", Refresh: func(context.Context) (int, string, error) { return 0, "p", nil },
		Pending: []string{"p"}, Target: []string{"t"}, Timeout: time.Minute, Clock: blockingClock{}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// blockingClock never fires, so only ctx can end a wait.
type blockingClock struct{}

func (blockingClock) Now() time.Time                       { return t0 }
func (blockingClock) After(time.Duration) <-chan time.Time { return nil }

func TestUntil(t *testing.T) {
	clock := wait.NewStepClock(t0)
	n := 0
	err := wait.Until(context.Background(), "three calls", time.Minute, 100*time.Millisecond, clock, func(context.Context) (bool, error) {
		n++
		return n == 3, nil
	})
	if err != nil || n != 3 {
		t.Fatalf("err %v after %d calls", err, n)
	}
	reason := errors.New("standby s1 not streaming")
	err = wait.Until(context.Background(), "streaming", time.Second, 100*time.Millisecond, clock, func(context.Context) (bool, error) {
		return false, wait.NotYet(reason)
	})
	if !errors.Is(err, reason) || !strings.Contains(err.Error(), "not streaming") {
		t.Fatalf("the timeout should carry the last reason: %v", err)
	}
	hard := errors.New("permission denied")
	if err := wait.Until(context.Background(), "x", time.Second, time.Millisecond, clock, func(context.Context) (bool, error) { return false, hard }); !errors.Is(err, hard) {
		t.Fatalf("a plain error ends the wait: %v", err)
	}
}

func TestRetry(t *testing.T) {
	clock := wait.NewStepClock(t0)
	throttled := errors.New("Throttling")
	n := 0
	v, err := wait.Retry(context.Background(), "put", time.Minute, clock, func(err error) bool { return errors.Is(err, throttled) },
		func(context.Context) (string, error) {
			n++
			if n < 3 {
				return "", throttled
			}
			return "ok", nil
		})
	if err != nil || v != "ok" || n != 3 {
		t.Fatalf("got %q, %v after %d calls", v, err, n)
	}
	// Out of time: the last error comes back as it is, so callers can still classify it.
	_, err = wait.Retry(context.Background(), "put", time.Second, clock, func(error) bool { return true },
		func(context.Context) (string, error) { return "", throttled })
	if err != throttled { //nolint:errorlint // the very same error value is the contract
		t.Fatalf("got %v, want the last error unwrapped", err)
	}
}

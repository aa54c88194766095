package wait_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

func TestTimeoutIsDeadlineExceeded(t *testing.T) {
	errLast := errors.New("exit status 2")
	err := wait.Until(context.Background(), "x", time.Second, 100*time.Millisecond, wait.NewStepClock(t0), func(context.Context) (bool, error) {
		return false, wait.NotYet(errLast)
	})
	var te *wait.TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errLast) {
		t.Fatalf("got %v; want a *TimeoutError that is context.DeadlineExceeded and wraps the last error", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Fatalf("a timeout is not a cancellation: %v", err)
	}
}

func TestSleep(t *testing.T) {
	clock := wait.NewStepClock(t0)
	if err := wait.Sleep(context.Background(), clock, 3*time.Second); err != nil || clock.Now() != t0.Add(3*time.Second) {
		t.Errorf("Sleep 3 s: %v, the clock at %s; want it 3 s on", err, clock.Now())
	}
	if err := wait.Sleep(context.Background(), clock, -time.Second); err != nil || len(clock.Sleeps) != 1 {
		t.Errorf("Sleep of a negative duration: %v, sleeps %v; want no sleep", err, clock.Sleeps)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := wait.Sleep(ctx, blockingClock{}, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on a cancelled context: %v", err)
	}
}

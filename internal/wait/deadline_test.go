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

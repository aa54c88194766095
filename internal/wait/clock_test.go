package wait_test

import (
	"context"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// TestStepClockSet: a test moves the clock to the instant it decides at, either way, and waits run on
// from there without sleeping.
func TestStepClockSet(t *testing.T) {
	clock := wait.NewStepClock(t0)
	later := t0.Add(83 * 24 * time.Hour)
	clock.Set(later)
	if got := clock.Now(); !got.Equal(later) {
		t.Fatalf("Now after Set = %s; want %s", got, later)
	}
	if err := wait.Sleep(context.Background(), clock, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := clock.Now(); !got.Equal(later.Add(time.Minute)) {
		t.Fatalf("Now after a minute's Sleep = %s; want %s", got, later.Add(time.Minute))
	}
	clock.Set(t0)
	if got := clock.Now(); !got.Equal(t0) {
		t.Fatalf("Now after Set back = %s; want %s", got, t0)
	}
}

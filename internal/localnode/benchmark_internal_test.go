package localnode

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// fakeSampler answers SampleWaitEvents with fixed counts, fails every third call, and closes enough after
// the given number of calls.
type fakeSampler struct {
	calls  int
	after  int
	enough chan struct{}
}

func (f *fakeSampler) ServerVersion(context.Context) (string, error) { return "15.0", nil }
func (f *fakeSampler) PgbenchScale(context.Context) (int, error)     { return 1, nil }
func (f *fakeSampler) SampleWaitEvents(_ context.Context, appName string) (map[string]int64, error) {
	f.calls++
	if f.calls == f.after {
		close(f.enough)
	}
	if appName != "app" {
		return nil, errors.New("wrong application name " + appName)
	}
	if f.calls%3 == 0 {
		return nil, errors.New("sample failed")
	}
	return map[string]int64{"CPU": 1, "IO:DataFileRead": 2}, nil
}

// The sampler samples once per interval on the injected clock, adds up what it saw, reports failed samples
// as warnings, and stop waits for it.
func TestStartSampler(t *testing.T) {
	clock := wait.NewStepClock(time.Unix(0, 0))
	f := &fakeSampler{after: 9, enough: make(chan struct{})}
	var warnings int
	b := Bench{SampleInterval: 2 * time.Second, Clock: clock, Warn: func(string, map[string]any) { warnings++ }}
	stop := b.startSampler(context.Background(), f, "app")
	<-f.enough
	counts, samples := stop()
	ok := f.calls - f.calls/3
	if counts["CPU"] != int64(ok) || counts["IO:DataFileRead"] != int64(2*ok) || samples != int64(3*ok) {
		t.Errorf("after %d calls (%d good): counts %v, samples %d", f.calls, ok, counts, samples)
	}
	if warnings != f.calls/3 {
		t.Errorf("%d warnings for %d failed samples", warnings, f.calls/3)
	}
	for _, d := range clock.Sleeps {
		if d != 2*time.Second {
			t.Fatalf("sampler waited %v, want the 2s interval (all: %v)", d, clock.Sleeps)
		}
	}
}

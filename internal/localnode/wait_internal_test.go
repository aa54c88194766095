package localnode

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// TestWaitAcceptingClock: the engine's clock times waitAccepting, so a test waits without sleeping. A fake
// pg_isready answers "no response" twice, then "accepting".
func TestWaitAcceptingClock(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\nn=$(cat " + filepath.Join(dir, "calls") + " 2>/dev/null || echo 0)\n" +
		"echo $((n+1)) >" + filepath.Join(dir, "calls") + "\n[ \"$n\" -ge 2 ] || exit 2\n"
	if err := os.WriteFile(filepath.Join(dir, "pg_isready"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	clock := wait.NewStepClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := &Engine{binDir: dir, superuser: "postgres", clock: clock}
	if err := e.waitAccepting(context.Background(), Node{Name: "p1", Host: "127.0.0.1", Port: 1}); err != nil {
		t.Fatalf("waitAccepting: %v", err)
	}
	if want := []time.Duration{acceptPollInterval, acceptPollInterval}; !slices.Equal(clock.Sleeps, want) {
		t.Errorf("slept %v, want %v", clock.Sleeps, want)
	}
}

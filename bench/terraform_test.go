package main

import (
	"context"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// An interrupted bench (main cancels the environment's context on SIGINT or SIGTERM) stops the running
// terraform command gracefully, and a section's destroy still runs afterwards and empties the state: the
// real Terraform CLI, an apply stuck in a provisioner that sleeps a minute.
func TestTerraformEnv_interrupted(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	env, cleanup, err := newTerraformEnv(ctx, "/nonexistent/terraform-provider-pgnvme")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	// The sleep's length is this run's own, so the test finds its sleep and no other.
	marker := fmt.Sprintf("sleep 59.%d", time.Now().UnixNano()%1_000_000)
	ws, err := env.workspace("interrupted", map[string]string{"main.tf": fmt.Sprintf(`
resource "terraform_data" "slow" {
  provisioner "local-exec" {
    command = "exec %s"
  }
}
`, marker)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // should the sleep outlive terraform
		out, _ := exec.Command("pgrep", "-f", "-x", marker).Output()
		for _, pid := range strings.Fields(string(out)) {
			_ = exec.Command("kill", pid).Run()
		}
	})
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- env.run(ws, "apply", "-auto-approve", "-input=false", "-no-color", "-lock=false") }()
	// Interrupted once the provisioner runs.
	deadline := time.Now().Add(30 * time.Second)
	for !running(marker) {
		if time.Now().After(deadline) {
			t.Fatal("the provisioner's sleep never started")
		}
		time.Sleep(50 * time.Millisecond)
	}
	interrupt()
	applyErr := <-done
	took := time.Since(start)
	if applyErr == nil || took > 45*time.Second {
		t.Fatalf("the interrupted apply returned %v after %s; want an error well before the provisioner's minute", applyErr, took)
	}
	// Terraform's own graceful stop, not a kill.
	if !strings.Contains(applyErr.Error(), "Interrupt received") {
		t.Errorf("the interrupted apply did not stop gracefully:\n%v", applyErr)
	}
	// After the interrupt the section's commands fail at once, and its destroy still runs.
	if err := env.run(ws, "plan", "-input=false", "-no-color", "-lock=false"); err == nil {
		t.Error("a command run after the interrupt succeeded")
	}
	if err := env.destroy(ws); err != nil {
		t.Fatalf("destroy after the interrupt: %v", err)
	}
	cmd := env.command(context.Background(), ws, "state", "list")
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("state after the destroy: %q, %v; want it empty", out, err)
	}
	if running(marker) {
		t.Errorf("the provisioner's %q outlived the interrupted apply", marker)
	}
	t.Logf("apply interrupted and returned in %.1f s; the destroy afterwards emptied the state; the apply said:\n%v", took.Seconds(), applyErr)
}

// running reports whether a process with exactly the command line cmdline runs.
func running(cmdline string) bool {
	out, _ := exec.Command("pgrep", "-f", "-x", cmdline).Output()
	return strings.TrimSpace(string(out)) != ""
}

// The variant arms' parameters, evaluated by the real Terraform CLI over a set standing in for the tuned one:
// without a parameter, with one changed, with one added.
func TestVariantParams(t *testing.T) {
	env, cleanup, err := newTerraformEnv(context.Background(), "/nonexistent/terraform-provider-pgnvme")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	tuned := map[string]string{"wal_compression": "lz4", "max_wal_size": "1GB", "shared_buffers": "128MB"}
	for _, c := range []struct {
		v    StorageVariant
		want map[string]string
	}{
		{StorageVariant{Parameter: "wal_compression"}, map[string]string{"max_wal_size": "1GB", "shared_buffers": "128MB"}},
		{StorageVariant{Parameter: "max_wal_size", Value: "8GB"}, map[string]string{"wal_compression": "lz4", "max_wal_size": "8GB", "shared_buffers": "128MB"}},
		{StorageVariant{Parameter: "commit_delay", Value: "10"}, map[string]string{"wal_compression": "lz4", "max_wal_size": "1GB", "shared_buffers": "128MB", "commit_delay": "10"}},
	} {
		expr := strings.Replace(c.v.params(), tunedParams, "local.tuned", 1)
		ws, err := env.workspace("variant", map[string]string{"main.tf": fmt.Sprintf(`
locals {
  tuned = { wal_compression = "lz4", max_wal_size = "1GB", shared_buffers = "128MB" }
}
output "p" { value = %s }
`, expr)})
		if err != nil {
			t.Fatal(err)
		}
		if err := env.run(ws, "apply", "-auto-approve", "-input=false", "-no-color", "-lock=false"); err != nil {
			t.Fatal(err)
		}
		var got map[string]string
		if err := env.outputJSON(ws, "p", &got); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, c.want) {
			t.Errorf("%s (%s) gave %v; want %v", c.v.name(), expr, got, c.want)
		}
	}
	// The flags' values are checked against the tuned set before any cluster is made.
	got, err := storageVariants(tuned, []string{"wal_compression"}, []string{"max_wal_size=8GB", " commit_delay = 10 "})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range got {
		names = append(names, v.name())
	}
	if want := []string{"tuned without wal_compression", "tuned with max_wal_size = 8GB", "tuned with commit_delay = 10"}; !slices.Equal(names, want) {
		t.Errorf("storageVariants gave %q; want %q", names, want)
	}
	for _, bad := range []struct {
		without, with []string
		want          string
	}{
		{[]string{"work_mem"}, nil, "-storage-without work_mem: not in the tuned set"},
		{nil, []string{"max_wal_size"}, "want name=value"},
		{nil, []string{"=8GB"}, "want name=value"},
		{nil, []string{"max_wal_size=1GB"}, "the tuned set already has max_wal_size = 1GB"},
	} {
		if _, err := storageVariants(tuned, bad.without, bad.with); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("storageVariants(%q, %q): %v; want an error containing %q", bad.without, bad.with, err, bad.want)
		}
	}
}

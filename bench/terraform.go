package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/tfwork"
)

// terraformEnv runs the real Terraform CLI against the provider binary through dev_overrides.
type terraformEnv struct {
	dir     string
	rcFile  string
	bin     string
	baseEnv []string
	// ctx ends when the bench is interrupted (SIGINT or SIGTERM, see main): the commands run under it stop
	// (terraform is sent SIGINT and stops gracefully), and the section fails and removes what it made with
	// destroy, which does not run under it.
	ctx context.Context
}

// terraformStopWait is how long an interrupted terraform command may take to stop gracefully before it
// is killed; destroyWait bounds a section's final destroy.
const (
	terraformStopWait = 2 * time.Minute
	destroyWait       = 10 * time.Minute
)

func newTerraformEnv(ctx context.Context, providerBin string) (*terraformEnv, func(), error) {
	dir, err := os.MkdirTemp("", "pgnvme-bench-")
	if err != nil {
		return nil, nil, err
	}
	rc := filepath.Join(dir, "terraformrc")
	if err := os.WriteFile(rc, []byte(tfwork.DevOverridesConfig(providerBin)), 0o644); err != nil {
		return nil, nil, err
	}
	env := []string{}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TF_") || strings.HasPrefix(kv, "AWS_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(append(env, tfwork.CLIEnv(rc)...),
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent")
	return &terraformEnv{dir: dir, rcFile: rc, bin: providerBin, baseEnv: env, ctx: ctx}, func() { os.RemoveAll(dir) }, nil
}

// command is terraform with args in dir under ctx: when ctx ends, terraform gets SIGINT (its graceful
// stop, as Ctrl-C) and terraformStopWait to exit.
func (e *terraformEnv) command(ctx context.Context, dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "terraform", args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = terraformStopWait
	cmd.Dir = dir
	cmd.Env = e.baseEnv
	return cmd
}

// destroy runs `terraform destroy` in dir, also after the bench was interrupted (a section's cleanup).
func (e *terraformEnv) destroy(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), destroyWait)
	defer cancel()
	return e.runCommand(e.command(ctx, dir, "destroy", "-auto-approve", "-input=false", "-no-color", "-lock=false"))
}

// run runs a terraform command in dir.
func (e *terraformEnv) run(dir string, args ...string) error {
	return e.runCommand(e.command(e.ctx, dir, args...))
}

// runCommand runs cmd; its error carries the command's output.
func (e *terraformEnv) runCommand(cmd *exec.Cmd) error {
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("terraform %v in %s: %w\n%s", cmd.Args[1:], cmd.Dir, err, out)
	}
	return nil
}

// output reads one output value as text.
func (e *terraformEnv) output(dir, name string) (string, error) {
	var v any
	if err := e.outputJSON(dir, name, &v); err != nil {
		return "", err
	}
	return fmt.Sprint(v), nil
}

// outputJSON decodes one output value into v.
func (e *terraformEnv) outputJSON(dir, name string, v any) error {
	out, err := e.command(e.ctx, dir, "output", "-json", name).Output()
	if err != nil {
		return fmt.Errorf("terraform output %s: %w", name, err)
	}
	return json.Unmarshal(out, v)
}

// under is e with its workspaces in the subdirectory name of its own (a section's runs on two PostgreSQL
// majors keep their configurations and states apart).
func (e *terraformEnv) under(name string) *terraformEnv {
	c := *e
	c.dir = filepath.Join(e.dir, name)
	return &c
}

// workspace writes files into a fresh directory for one configuration.
func (e *terraformEnv) workspace(name string, files map[string]string) (string, error) {
	dir := filepath.Join(e.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// planResult is one timed `terraform plan`.
type planResult struct {
	Seconds    float64
	PeakRSSKiB int64
}

// plan runs `terraform plan` in dir and times it; while it runs, it samples the high-water RSS (VmHWM) of
// the provider process from /proc every 5 ms.
func (e *terraformEnv) plan(dir string, extraEnv ...string) (planResult, error) {
	cmd := e.command(e.ctx, dir, "plan", "-input=false", "-no-color", "-lock=false")
	cmd.Env = append(append([]string{}, e.baseEnv...), extraEnv...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out

	stop := make(chan struct{})
	var peak int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if v := providerHWM(e.bin); v > peak {
				peak = v
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start).Seconds()
	close(stop)
	wg.Wait()
	if err != nil {
		return planResult{}, fmt.Errorf("terraform plan in %s: %w\n%s", dir, err, out.String())
	}
	return planResult{Seconds: elapsed, PeakRSSKiB: peak}, nil
}

// providerHWM returns the largest VmHWM (KiB) among running processes whose executable is bin.
func providerHWM(bin string) int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var best int64
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || exe != bin {
			continue
		}
		f, err := os.Open(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
				fields := strings.Fields(rest)
				if len(fields) > 0 {
					if v, err := strconv.ParseInt(fields[0], 10, 64); err == nil && v > best {
						best = v
					}
				}
			}
		}
		f.Close()
	}
	return best
}

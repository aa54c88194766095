package acctest

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
)

// Moto is a moto server (the Python AWS emulator) on a free loopback port.
type Moto struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:40123.
	URL  string
	Port int

	cmd    *exec.Cmd
	output *syncBuffer
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// motoMain runs moto's server as `python3 -m moto.server` does, with nodesim.MotoIAMFixes, so that moto
// checks signatures as AWS does when a test enforces IAM (EnforceIAM).
const motoMain = nodesim.MotoIAMFixes + "from moto.server import main\nmain(sys.argv[1:])\n"

// StartMoto starts moto's server (motoMain) on a free loopback port, waits until it answers, and stops it
// (by PID) when the test ends. A missing python3 or moto fails the test: they are part of the test machine.
func StartMoto(t testing.TB) *Moto {
	t.Helper()
	m, err := LaunchMoto()
	if err != nil {
		t.Fatalf("starting moto: %v", err)
	}
	t.Cleanup(m.Stop)
	return m
}

// LaunchMoto starts a moto server outside a test (benchmarks, TestMain); the caller must Stop it.
func LaunchMoto() (*Moto, error) {
	python, err := exec.LookPath("python3")
	if err != nil {
		return nil, fmt.Errorf("python3 is needed to run moto (pip install 'moto[server]'): %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		out := &syncBuffer{}
		cmd := exec.Command(python, "-c", motoMain, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
		cmd.Env = append(os.Environ(), "MOTO_EC2_ENABLE_INSTANCE_TYPE_VALIDATION=true")
		cmd.Stdout = out
		cmd.Stderr = out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting moto: %w", err)
		}
		m := &Moto{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Port: port, cmd: cmd, output: out}
		if err := m.waitReady(30 * time.Second); err != nil {
			m.Stop()
			lastErr = fmt.Errorf("%w\nmoto output:\n%s", err, out.String())
			continue
		}
		return m, nil
	}
	return nil, lastErr
}

func (m *Moto) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = m.cmd.Wait()
		close(done)
	}()
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("moto exited before answering (is the moto package installed?): %w", waitErr)
		default:
		}
		resp, err := http.Get(m.URL + "/moto-api/data.json")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("moto did not answer on %s within %s", m.URL, timeout)
}

// Reset drops every object moto holds.
func (m *Moto) Reset() error {
	resp, err := http.Post(m.URL+"/moto-api/reset", "application/json", nil)
	if err != nil {
		return fmt.Errorf("resetting moto: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("resetting moto: HTTP %d", resp.StatusCode)
	}
	return nil
}

// Stop ends the server and anything it started, by process group.
func (m *Moto) Stop() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	m.cmd = nil
}

// Output is what the server printed, for failure messages.
func (m *Moto) Output() string { return m.output.String() }

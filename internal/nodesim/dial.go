package nodesim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// DialContext connects to address (an IP in the simulator's subnet, or AWSHost, with a port) from inside
// the service namespace: the root namespace has no address or link of the simulator's, so this is how the
// process that runs the simulator reaches the nodes. Use it as net.Dialer.DialContext in HTTP transports
// (HTTPClient does) and as pgconn.Config.DialFunc.
func (s *Sim) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if host == AWSHost {
		host = s.ServiceIP.String()
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !s.Subnet.Contains(ip) {
		return nil, fmt.Errorf("nodesim dials only addresses in its network %s (or %s), not %q", s.Subnet, AWSHost, host)
	}
	if s.svcNSFile == nil {
		return nil, fmt.Errorf("the simulator %s is closed", s.ID)
	}
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// The socket is created in the service namespace by this thread; the thread goes back to its own
		// namespace before anyone else runs on it, or dies with the goroutine when it cannot.
		runtime.LockOSThread()
		own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", syscall.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		defer own.Close()
		if err := setns(s.svcNSFile); err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, fmt.Errorf("entering the service namespace: %w", err)}
			return
		}
		c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err := setns(own); err != nil {
			// The thread stays locked: the runtime ends it with this goroutine.
			if c != nil {
				_ = c.Close()
			}
			ch <- result{nil, fmt.Errorf("leaving the service namespace: %w", err)}
			return
		}
		runtime.UnlockOSThread()
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// sysSetns is setns(2)'s number by architecture (the syscall package does not name it; x/sys/unix
// does, and is not a direct dependency).
var sysSetns = map[string]uintptr{"amd64": 308, "arm64": 268, "riscv64": 268, "386": 346, "arm": 375, "ppc64le": 350, "s390x": 339}

// setns moves the calling thread into the network namespace f.
func setns(f *os.File) error {
	nr, ok := sysSetns[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("setns: unknown system call number on %s", runtime.GOARCH)
	}
	if _, _, errno := syscall.RawSyscall(nr, f.Fd(), syscall.CLONE_NEWNET, 0); errno != 0 {
		return errno
	}
	return nil
}

// newHTTPClient is an HTTP client that reaches the nodes and the AWS endpoint (trusting its certificate)
// through DialContext.
func (s *Sim) newHTTPClient() *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			DialContext:         s.DialContext,
			TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: x509.NewCertPool()},
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     30 * time.Second,
		},
	}
}

// HTTPClient is an HTTP client that reaches the nodes (Patroni's REST API, etcd) and the AWS endpoint
// from the root namespace.
func (s *Sim) HTTPClient() *http.Client { return s.client }

// MotoURL is moto's own plain-HTTP URL, http://127.0.0.1:5000, as a program in the service namespace
// reaches it (see Command): there it is the whole simulated AWS (EC2, SSM, S3, IAM, STS) without TLS, for
// terraform and the provider it spawns. It is no URL of the root namespace's, nor of the nodes' (they use
// AWSEndpoint).
func (s *Sim) MotoURL() string { return fmt.Sprintf("http://127.0.0.1:%d", motoPort) }

// Command is a program of this machine run in the service namespace (nsenter --net), as
// exec.CommandContext makes it: there the program reaches the nodes at their addresses, the AWS endpoint
// at the service address (https, AWSHost in the certificate) and moto itself at MotoURL; it reaches
// nothing outside the simulation (no default route). Set Env, Dir, Stdin, Stdout and Stderr as for any
// exec.Cmd; nil Env is this process's environment. The process and everything it starts (terraform's
// provider plugins) join the service namespace's cgroup, so Close ends what the caller left running.
func (s *Sim) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cg := s.svcCg
	if cg == nil || s.svcNSFile == nil {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Err = fmt.Errorf("running %s in the service namespace: %w", name, errors.New("the simulator is closed"))
		return cmd
	}
	// As startProc: the shell moves itself into the cgroup, then becomes nsenter, which becomes the
	// program (one PID all along, so that the context's kill reaches the program).
	argv := append([]string{"-c", `echo $$ >"$0/cgroup.procs" && exec "$@"`, cg.path,
		"nsenter", "--net=" + netnsPath(s.svcNS), "--", name}, args...)
	return exec.CommandContext(ctx, "/bin/sh", argv...)
}

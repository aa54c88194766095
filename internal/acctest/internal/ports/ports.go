// Package ports finds free TCP ports on 127.0.0.1 for the test support packages: acctest exports them to
// tests (FreePorts, FreePortBase) and to programs (FreePort, FindFreePortBase), and pgfixture places its
// servers with them. It uses the standard library only and never touches a testing.TB.
package ports

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Free asks the kernel for n ports on 127.0.0.1, holding every listener until all are chosen so the ports
// differ. They were free a moment ago: another process may take one before the caller binds it.
func Free(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port on 127.0.0.1: %w", err)
		}
		defer l.Close()
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return nil, fmt.Errorf("listener address %v is not TCP", l.Addr())
		}
		ports = append(ports, addr.Port)
	}
	return ports, nil
}

// lowestBase is the lowest port Base draws.
const lowestBase = 10000

// Base returns a base such that base..base+n-1 on 127.0.0.1 were all free a moment ago. It is drawn at
// random below the kernel's ephemeral range (ip_local_port_range), where the kernel never hands out ports
// by itself, so that neither a kernel-chosen port (Free, outgoing connections) nor, most likely, a
// concurrent test process lands in the run.
func Base(n int) (int, error) {
	if n < 1 {
		return 0, fmt.Errorf("a run of %d ports: want at least 1", n)
	}
	low := ephemeralLow()
	highest := low - n // the run ends below the ephemeral range
	if highest <= lowestBase {
		return 0, fmt.Errorf("no room for %d consecutive ports between %d and the ephemeral range at %d", n, lowestBase, low)
	}
	var last error
	for range 100 {
		base := lowestBase + rand.IntN(highest-lowestBase)
		if last = runFree(base, n); last == nil {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports on 127.0.0.1 in 100 tries (last: %w)", n, last)
}

// runFree binds base..base+n-1 on 127.0.0.1 all at once and releases them: nil when every one was free.
func runFree(base, n int) error {
	for p := base; p < base+n; p++ {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return err
		}
		defer l.Close()
	}
	return nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768 when it cannot be read).
func ephemeralLow() int {
	const fallback = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return fallback
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= lowestBase {
		return fallback
	}
	return low
}

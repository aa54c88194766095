package acctest

import (
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/internal/ports"
)

// The free-port helpers of every test (and of bench); the PostgreSQL fixture (pgfixture) places its
// servers with the same code. Ports are on 127.0.0.1 and were free a moment ago: another process may take
// one before the caller binds it.

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago, chosen by the kernel.
// A failure fails the test.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	p, err := ports.Free(n)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// FreePortBase returns a base such that base, base+1, ..., base+n-1 on 127.0.0.1 were all free a moment
// ago, for what takes a range of ports (the cluster resource's local port_base). The base lies below the
// kernel's ephemeral range, so no port the kernel hands out (FreePorts, outgoing connections) falls in
// the run. A failure fails the test.
func FreePortBase(t testing.TB, n int) int {
	t.Helper()
	base, err := ports.Base(n)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// FreePort is one port of FreePorts for code that runs outside a test (bench, moto's launcher).
func FreePort() (int, error) {
	p, err := ports.Free(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

// FindFreePortBase is FreePortBase for code that runs outside a test (bench).
func FindFreePortBase(n int) (int, error) { return ports.Base(n) }

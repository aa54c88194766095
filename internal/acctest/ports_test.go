package acctest_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

// TestFreePorts: FreePorts gives distinct bindable ports; FreePortBase a run of bindable ports.
func TestFreePorts(t *testing.T) {
	ports := acctest.FreePorts(t, 5)
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Errorf("FreePorts gave %d twice: %v", p, ports)
		}
		seen[p] = true
	}
	bindAll(t, ports)

	base := acctest.FreePortBase(t, 4)
	bindAll(t, []int{base, base + 1, base + 2, base + 3})

	if p, err := acctest.FreePort(); err != nil || p <= 0 {
		t.Errorf("FreePort = %d, %v", p, err)
	}
	if _, err := acctest.FindFreePortBase(0); err == nil {
		t.Error("FindFreePortBase(0) succeeded")
	}
}

// bindAll listens on every port on 127.0.0.1 at once.
func bindAll(t *testing.T, ports []int) {
	t.Helper()
	for _, p := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d of %v: %v", p, ports, err)
		}
		defer l.Close()
	}
}

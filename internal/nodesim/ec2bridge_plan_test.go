package nodesim

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestSubnetPlan(t *testing.T) {
	network := netip.MustParsePrefix("198.18.7.0/24")
	service := netip.MustParseAddr("198.18.7.1")
	for _, tc := range []struct {
		network netip.Prefix
		service netip.Addr
		n       int
		want    string // the subnets, or "error: <part of the message>"
	}{
		{network, service, 1, "[198.18.7.0/24]"},
		{network, service, 2, "[198.18.7.0/25 198.18.7.128/25]"},
		{network, service, 3, "[198.18.7.0/26 198.18.7.64/26 198.18.7.128/26]"},
		{network, service, 4, "[198.18.7.0/26 198.18.7.64/26 198.18.7.128/26 198.18.7.192/26]"},
		{network, service, 5, "[198.18.7.0/27 198.18.7.32/27 198.18.7.64/27 198.18.7.96/27 198.18.7.128/27]"},
		{network, service, 16, "16 subnets, the last 198.18.7.240/28"},
		{network, service, 17, "error: at most 16 zones"},
		// The service address must be one of the first three host addresses of its subnet.
		{network, netip.MustParseAddr("198.18.7.3"), 4, "[198.18.7.0/26 198.18.7.64/26 198.18.7.128/26 198.18.7.192/26]"},
		{network, netip.MustParseAddr("198.18.7.4"), 4, "error: 198.18.7.0/26 would let moto hand the service address 198.18.7.4"},
		{network, netip.MustParseAddr("198.18.7.66"), 2, "error: 198.18.7.0/25 would let moto"},
	} {
		t.Run(fmt.Sprintf("%d in %s around %s", tc.n, tc.network, tc.service), func(t *testing.T) {
			plan, err := subnetPlan(tc.network, tc.service, tc.n)
			if want, ok := strings.CutPrefix(tc.want, "error: "); ok {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("subnetPlan = %v, %v; want an error with %q", plan, err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprint(plan)
			if tc.n == 16 {
				got = fmt.Sprintf("%d subnets, the last %s", len(plan), plan[len(plan)-1])
			}
			if got != tc.want {
				t.Errorf("subnetPlan = %s, want %s", got, tc.want)
			}
		})
	}
}

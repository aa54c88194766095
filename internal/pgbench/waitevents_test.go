package pgbench_test

import (
	"math"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

func TestWaitEventKey(t *testing.T) {
	tests := []struct{ typ, event, want string }{
		{"", "", "CPU"},
		{"", "DataFileRead", "CPU"}, // no type means no wait
		{"IO", "DataFileRead", "IO:DataFileRead"},
		{"LWLock", "WALWrite", "LWLock:WALWrite"},
		{"IPC", "SyncRep", "IPC:SyncRep"},
		{"Lock", "", "Lock"},
	}
	for _, tt := range tests {
		if got := pgbench.WaitEventKey(tt.typ, tt.event); got != tt.want {
			t.Errorf("WaitEventKey(%q, %q) = %q, want %q", tt.typ, tt.event, got, tt.want)
		}
	}
}

func TestShares(t *testing.T) {
	tests := []struct {
		name   string
		counts map[string]int64
		want   map[string]float64
	}{
		{"nil", nil, map[string]float64{}},
		{"all zero", map[string]int64{"CPU": 0}, map[string]float64{}},
		{"the talk's EBS mix", map[string]int64{"IO:DataFileRead": 19, "LWLock:WALWrite": 11, "Lock:transactionid": 5, "CPU": 2},
			map[string]float64{"IO:DataFileRead": 19.0 / 37, "LWLock:WALWrite": 11.0 / 37, "Lock:transactionid": 5.0 / 37, "CPU": 2.0 / 37}},
		{"thirds", map[string]int64{"a": 1, "b": 1, "c": 1}, map[string]float64{"a": 1.0 / 3, "b": 1.0 / 3, "c": 1.0 / 3}},
		{"negative counts as zero", map[string]int64{"CPU": 3, "IO:DataFileRead": -1}, map[string]float64{"CPU": 1, "IO:DataFileRead": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pgbench.Shares(tt.counts)
			if got == nil || len(got) != len(tt.want) {
				t.Fatalf("Shares() = %v, want %v", got, tt.want)
			}
			var sum float64
			for k, w := range tt.want {
				if math.Abs(got[k]-w) > 1e-15 {
					t.Errorf("share of %s = %v, want %v", k, got[k], w)
				}
				sum += got[k]
			}
			if len(got) > 0 && math.Abs(sum-1) > 1e-12 {
				t.Errorf("shares sum to %v, want 1", sum)
			}
		})
	}
}

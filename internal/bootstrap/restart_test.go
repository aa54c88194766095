package bootstrap_test

import (
	"slices"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

func TestStandbyLimitsLowered(t *testing.T) {
	for _, tc := range []struct {
		name          string
		running, next map[string]string
		want          []string
	}{
		{"lowered", map[string]string{"max_connections": "100", "max_worker_processes": "8"}, map[string]string{"max_connections": "90", "max_worker_processes": "8"}, []string{"max_connections"}},
		{"raised", map[string]string{"max_connections": "100"}, map[string]string{"max_connections": "110"}, nil},
		{"names in any case, several lowered", map[string]string{"MAX_WAL_SENDERS": "10", "max_locks_per_transaction": "128"},
			map[string]string{"max_wal_senders": "5", "Max_Locks_Per_Transaction": "64"}, []string{"max_locks_per_transaction", "max_wal_senders"}},
		{"another setting lowered", map[string]string{"shared_buffers": "128MB", "work_mem": "8"}, map[string]string{"shared_buffers": "64MB", "work_mem": "4"}, nil},
		{"not a whole number", map[string]string{"max_connections": "100"}, map[string]string{"max_connections": "ninety"}, nil},
		{"only one side known", map[string]string{"max_connections": "100"}, map[string]string{}, nil},
	} {
		if got := bootstrap.StandbyLimitsLowered(tc.running, tc.next); !slices.Equal(got, tc.want) {
			t.Errorf("%s: StandbyLimitsLowered = %v, want %v", tc.name, got, tc.want)
		}
	}
}

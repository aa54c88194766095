package bootstrap_test

import (
	"maps"
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
		{"removed, PostgreSQL's default is the same", map[string]string{"max_connections": "100"}, map[string]string{}, nil},
		{"removed, PostgreSQL's default is lower", map[string]string{"max_connections": "200"}, map[string]string{}, []string{"max_connections"}},
		{"removed with an empty value", map[string]string{"max_worker_processes": "16"}, map[string]string{"max_worker_processes": " "}, []string{"max_worker_processes"}},
		{"not pending on the node", map[string]string{}, map[string]string{"max_connections": "50"}, nil},
	} {
		if got := bootstrap.StandbyLimitsLowered(tc.running, tc.next); !slices.Equal(got, tc.want) {
			t.Errorf("%s: StandbyLimitsLowered = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStandbyLimitsRaised(t *testing.T) {
	params := map[string]string{"Max_Connections": "90", "max_wal_senders": "10", "shared_buffers": "64MB"}
	primary := map[string]string{"max_connections": "100", "max_wal_senders": "5", "max_worker_processes": "8"}
	got, raised := bootstrap.StandbyLimitsRaised(params, primary)
	want := map[string]string{"max_connections": "100", "max_wal_senders": "10", "shared_buffers": "64MB"}
	if !maps.Equal(got, want) || !slices.Equal(raised, []string{"max_connections"}) {
		t.Errorf("StandbyLimitsRaised = %v, raised %v; want %v, raised [max_connections] (max_wal_senders is higher already, "+
			"max_worker_processes is not set here, shared_buffers is no standby limit)", got, raised, want)
	}
	if params["Max_Connections"] != "90" {
		t.Errorf("StandbyLimitsRaised changed its input: %v", params)
	}
	// The configuration no longer names max_connections: the standby would run PostgreSQL's 100.
	got, raised = bootstrap.StandbyLimitsRaised(map[string]string{"work_mem": "8MB"}, map[string]string{"max_connections": "200", "max_wal_senders": "10"})
	if want := map[string]string{"max_connections": "200", "work_mem": "8MB"}; !maps.Equal(got, want) || !slices.Equal(raised, []string{"max_connections"}) {
		t.Errorf("max_connections removed: StandbyLimitsRaised = %v, raised %v; want %v, raised [max_connections]", got, raised, want)
	}
}

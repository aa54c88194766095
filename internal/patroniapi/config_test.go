package patroniapi_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
)

// current is GET /config as Patroni 4.0.7 answers it after bootstrap.dcs (with keys Patroni adds).
const current = `{"ttl": 30, "loop_wait": 10, "retry_timeout": 10, "maximum_lag_on_failover": 1048576,
 "synchronous_mode": "quorum", "synchronous_node_count": 1, "synchronous_mode_strict": true, "failsafe_mode": true,
 "postgresql": {"use_pg_rewind": true, "use_slots": true,
   "parameters": {"max_connections": "100", "work_mem": "4MB", "random_page_cost": 1.1, "hot_standby": "on"},
   "pg_hba": ["local all all peer"]},
 "slots": {"keep": {"type": "physical"}}}`

func TestConfigPatch(t *testing.T) {
	var cur map[string]any
	if err := json.Unmarshal([]byte(current), &cur); err != nil {
		t.Fatal(err)
	}
	desired := func(mutate func(top, params map[string]any)) map[string]any {
		params := map[string]any{"max_connections": "100", "work_mem": "4MB", "random_page_cost": "1.1", "hot_standby": "on"}
		top := map[string]any{"ttl": 30, "loop_wait": 10, "retry_timeout": 10, "maximum_lag_on_failover": int64(1 << 20),
			"synchronous_mode": "quorum", "synchronous_node_count": 1, "synchronous_mode_strict": true, "failsafe_mode": true,
			"postgresql": map[string]any{"use_pg_rewind": true, "use_slots": true, "parameters": params, "pg_hba": []any{"local all all peer"}}}
		if mutate != nil {
			mutate(top, params)
		}
		return top
	}
	for _, tc := range []struct {
		name    string
		mutate  func(top, params map[string]any)
		patch   string
		changes []string
	}{
		{"equal, numbers and text alike, Patroni's own keys left", nil, "null", nil},
		{"a parameter changed, one added, one removed", func(_, p map[string]any) {
			p["work_mem"], p["shared_buffers"] = "64MB", "1GB"
			delete(p, "random_page_cost")
		}, `{"postgresql":{"parameters":{"random_page_cost":null,"shared_buffers":"1GB","work_mem":"64MB"}}}`,
			[]string{"postgresql.parameters.random_page_cost: 1.1 -> (removed)", "postgresql.parameters.shared_buffers: (unset) -> 1GB",
				"postgresql.parameters.work_mem: 4MB -> 64MB"}},
		{"pg_hba, a list", func(top, _ map[string]any) {
			top["postgresql"].(map[string]any)["pg_hba"] = []any{"local all all peer", "host all all 10.0.0.0/16 scram-sha-256"}
		}, `{"postgresql":{"pg_hba":["local all all peer","host all all 10.0.0.0/16 scram-sha-256"]}}`,
			[]string{"postgresql.pg_hba: [1 lines] -> [2 lines]"}},
		{"timings and the quorum", func(top, _ map[string]any) {
			top["ttl"], top["synchronous_node_count"], top["synchronous_mode_strict"] = 60, 2, false
		}, `{"synchronous_mode_strict":false,"synchronous_node_count":2,"ttl":60}`,
			[]string{"synchronous_mode_strict: true -> false", "synchronous_node_count: 1 -> 2", "ttl: 30 -> 60"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patch, changes := patroniapi.ConfigPatch(desired(tc.mutate), cur)
			b, _ := json.Marshal(patch)
			if string(b) != tc.patch {
				t.Errorf("patch = %s, want %s", b, tc.patch)
			}
			if !reflect.DeepEqual(changes, tc.changes) {
				t.Errorf("changes = %q, want %q", changes, tc.changes)
			}
		})
	}
	// A cluster whose configuration Patroni has not written yet: everything is a change.
	if patch, _ := patroniapi.ConfigPatch(desired(nil), nil); len(patch) != 9 {
		t.Errorf("against an empty configuration: %v", patch)
	}
}

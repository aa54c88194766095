package patroniapi_test

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/patroniapi"
)

func TestRestartValues(t *testing.T) {
	var reasons map[string]json.RawMessage
	// As Patroni 4 publishes it in GET /patroni and the member's DCS key.
	if err := json.Unmarshal([]byte(`{"max_connections": {"old_value": "100", "new_value": "90"}, "shared_buffers": {"old_value": "64MB", "new_value": "96MB"},
		"max_wal_senders": {"old_value": 10, "new_value": 5}, "odd": "changed"}`), &reasons); err != nil {
		t.Fatal(err)
	}
	running, next := patroniapi.RestartValues(reasons)
	if want := map[string]string{"max_connections": "100", "shared_buffers": "64MB", "max_wal_senders": "10"}; !maps.Equal(running, want) {
		t.Errorf("running = %v, want %v", running, want)
	}
	if want := map[string]string{"max_connections": "90", "shared_buffers": "96MB", "max_wal_senders": "5"}; !maps.Equal(next, want) {
		t.Errorf("next = %v, want %v", next, want)
	}
}

package localcluster_test

import (
	"os"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/latencydisk"
)

// TestMain lets this test binary serve as a node's latency layer: the platform starts its own program
// (here, this binary) as the layer's detached server.
func TestMain(m *testing.M) {
	latencydisk.MainIfServer()
	os.Exit(m.Run())
}

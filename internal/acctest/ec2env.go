package acctest

import (
	"context"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/nodesim"
)

// StartEC2Env is nodesim.NewEC2Env for a test (the EC2 platform without AWS: simulator, EC2 bridge, VPC,
// bucket, AMI): the simulator's lines go to t.Logf unless opts.Logf says otherwise, a failure fails the
// test, and the test's end closes it. ctx bounds the setup only. It needs root (network namespaces).
func StartEC2Env(ctx context.Context, t testing.TB, opts nodesim.EC2EnvOptions) *nodesim.EC2Env {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	e, err := nodesim.NewEC2Env(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the simulator: %v", err)
		}
	})
	return e
}

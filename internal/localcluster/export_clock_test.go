package localcluster

import (
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// PlanTLS is what the plan of s, a cluster that exists, says of its TLS (planTLSInto): the lines and the
// certificates' ends after the apply, decided at m's clock's now.
func PlanTLS(m *Manager, s Spec) (cluster.Plan, error) {
	var out cluster.Plan
	err := m.planTLSInto(&out, s, true, nil)
	return out, err
}

// PrepareTLS decides at m's clock's now what an apply does with s's TLS and writes the certificates it
// makes or renews, as an apply does before it changes the members (prepareTLS); it returns the plan's
// lines.
func PrepareTLS(m *Manager, s Spec) ([]string, error) {
	p, err := m.prepareTLS(s, nil)
	return p.Lines(), err
}

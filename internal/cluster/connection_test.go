package cluster_test

import (
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
)

// ConnectionOf: how clients connect is the platform's (every node on EC2, the one primary elsewhere), with
// TLS verified against the cluster's authority when it has TLS.
func TestConnectionOf(t *testing.T) {
	members := []cluster.Member{
		{Name: "n1", Role: cluster.RolePrimary, Host: "10.0.1.10", Port: 5432},
		{Name: "n2", Role: cluster.RoleStandby, Host: "10.0.2.10", Port: 5432},
	}
	for _, tc := range []struct {
		name     string
		members  []cluster.Member
		platform cluster.PlatformStatus
		tls      *cluster.TLSStatus
		rw, ro   string
		primary  string
	}{
		{"local: the primary", members, &localspec.Status{}, nil, "postgresql://postgres@10.0.1.10:5432/postgres", "", "n1"},
		{"local with TLS: verify-full with the authority's file", members, &localspec.Status{}, &cluster.TLSStatus{CAFile: "/d/.pgnvme-tls/ca.crt"},
			"postgresql://postgres@10.0.1.10:5432/postgres?sslmode=verify-full&sslrootcert=%2Fd%2F.pgnvme-tls%2Fca.crt", "", "n1"},
		{"local, no one primary: none", []cluster.Member{members[1]}, &localspec.Status{}, nil, "", "", ""},
		{"aws: every node, libpq chooses", members, &awsspec.Status{}, nil,
			"postgresql://postgres@10.0.1.10:5432,10.0.2.10:5432/postgres?target_session_attrs=read-write",
			"postgresql://postgres@10.0.1.10:5432,10.0.2.10:5432/postgres?target_session_attrs=prefer-standby", "n1"},
		{"aws with TLS, no primary now: the URIs stand", []cluster.Member{members[1]}, &awsspec.Status{}, &cluster.TLSStatus{CACertificate: "PEM"},
			"postgresql://postgres@10.0.2.10:5432/postgres?target_session_attrs=read-write&sslmode=verify-full",
			"postgresql://postgres@10.0.2.10:5432/postgres?target_session_attrs=prefer-standby&sslmode=verify-full", ""},
		{"platform unknown: the primary", members, nil, nil, "postgresql://postgres@10.0.1.10:5432/postgres", "", "n1"},
	} {
		c := cluster.ConnectionOf(tc.members, tc.platform, tc.tls)
		primary := ""
		if c.Primary != nil {
			primary = c.Primary.Name
		}
		_, aws := tc.platform.(*awsspec.Status)
		if c.ReadOnlyOffered != aws {
			t.Errorf("%s: ReadOnlyOffered = %v; want it only on aws", tc.name, c.ReadOnlyOffered)
		}
		if c.ReadWrite != tc.rw || c.ReadOnly != tc.ro || primary != tc.primary {
			t.Errorf("%s: ConnectionOf = %q, %q, primary %q; want %q, %q, %q", tc.name, c.ReadWrite, c.ReadOnly, primary, tc.rw, tc.ro, tc.primary)
		}
	}
}

// SynchronousKept: the state's synchronous value stands in the plan only when nothing that decides it
// changes.
func TestSynchronousKept(t *testing.T) {
	prior := []cluster.Member{
		{Name: "n1", Role: cluster.RolePrimary, State: cluster.StateRunning, Host: "127.0.0.1", Port: 5432},
		{Name: "n2", Role: cluster.RoleStandby, State: cluster.StateRunning, Host: "127.0.0.1", Port: 5433},
	}
	s := cluster.Spec{Name: "c"}
	s.Synchronous.Number = 1
	more := s
	more.Synchronous.Number = 2
	lost := append([]cluster.Member(nil), prior...)
	lost[1].State = cluster.StateMissing
	for _, tc := range []struct {
		name   string
		old, s cluster.Spec
		prior  []cluster.Member
		plan   cluster.Plan
		kept   bool
	}{
		{"nothing changes", s, s, prior, cluster.Plan{Members: prior}, true},
		{"a create", s, s, nil, cluster.Plan{Members: prior}, false},
		{"the synchronous block changes", s, more, prior, cluster.Plan{Members: prior}, false},
		{"a promotion is planned", s, s, prior, cluster.Plan{Members: prior, Promoting: true}, false},
		{"a member is repaired", s, s, lost, cluster.Plan{Members: prior}, false},
		{"a member is added", s, s, prior, cluster.Plan{Members: append(append([]cluster.Member(nil), prior...), cluster.Member{Name: "n3"})}, false},
	} {
		if got := cluster.SynchronousKept(tc.old, tc.s, tc.prior, tc.plan); got != tc.kept {
			t.Errorf("%s: SynchronousKept = %v, want %v", tc.name, got, tc.kept)
		}
	}
}

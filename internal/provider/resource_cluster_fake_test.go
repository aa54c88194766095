package provider_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/provider"
)

// fakePlatform keeps clusters in memory, so the glue is tested without a machine: it does what a platform
// promises (members keep their identity, a lost member is repaired alone) and records every call.
type fakePlatform struct {
	mu       sync.Mutex
	clusters map[string][]cluster.Member
	calls    []string
}

func newFakePlatform() *fakePlatform { return &fakePlatform{clusters: map[string][]cluster.Member{}} }

func (f *fakePlatform) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakePlatform) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// lose marks a member missing, as if its machine were gone.
func (f *fakePlatform) lose(name, node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.clusters[name] {
		if f.clusters[name][i].Name == node {
			f.clusters[name][i].State, f.clusters[name][i].Role = cluster.StateMissing, ""
		}
	}
}

func (f *fakePlatform) status(s cluster.Spec) cluster.Status {
	members := f.clusters[s.Name]
	st := cluster.Status{Members: append([]cluster.Member(nil), members...), PostgresMajor: 15, SynchronousKnown: true,
		Local: &cluster.LocalStatus{}}
	var standbys []string
	for _, m := range members {
		if m.Role == cluster.RoleStandby && m.State == cluster.StateRunning {
			standbys = append(standbys, m.Name)
		}
	}
	st.SynchronousStandbyNames = fmt.Sprintf("ANY %d (%s)", s.Synchronous.Number, strings.Join(standbys, ", "))
	st.Degraded = len(standbys) < s.Synchronous.Number
	return st
}

func (f *fakePlatform) Plan(_ context.Context, s cluster.Spec, prior []cluster.Member) (cluster.Plan, error) {
	f.record("plan")
	f.mu.Lock()
	defer f.mu.Unlock()
	p := cluster.Plan{PostgresMajor: 15, Local: &cluster.LocalStatus{}}
	var actions []string
	for i, m := range cluster.AssignLocal(s, prior) {
		m.Role, m.State = cluster.RoleStandby, cluster.StateRunning
		if i == 0 && len(prior) == 0 {
			m.Role = cluster.RolePrimary
		}
		for _, have := range f.clusters[s.Name] {
			if have.Name == m.Name && have.Role != "" {
				m.Role = have.Role
			}
			if have.Name == m.Name && have.State != cluster.StateRunning {
				actions = append(actions, fmt.Sprintf("%d. reseed %s: it is %s", len(actions)+1, m.Name, have.State))
			}
		}
		p.Members = append(p.Members, m)
	}
	p.Actions = strings.Join(actions, "\n")
	return p, nil
}

func (f *fakePlatform) Create(_ context.Context, s cluster.Spec) (cluster.Status, error) {
	f.record("create")
	f.mu.Lock()
	defer f.mu.Unlock()
	members := cluster.AssignLocal(s, nil)
	for i := range members {
		members[i].Role, members[i].State = cluster.RoleStandby, cluster.StateRunning
	}
	members[0].Role = cluster.RolePrimary
	f.clusters[s.Name] = members
	return f.status(s), nil
}

func (f *fakePlatform) Read(_ context.Context, s cluster.Spec, _ []cluster.Member) (cluster.Status, error) {
	f.record("read")
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.clusters[s.Name]; !ok {
		return cluster.Status{Members: []cluster.Member{{Name: s.Nodes[0].Name, State: cluster.StateMissing}}}, nil
	}
	return f.status(s), nil
}

func (f *fakePlatform) Update(_ context.Context, s cluster.Spec, _ []cluster.Member) (cluster.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, m := range f.clusters[s.Name] {
		if m.State != cluster.StateRunning {
			f.calls = append(f.calls, "repair "+m.Name)
			f.clusters[s.Name][i].State, f.clusters[s.Name][i].Role = cluster.StateRunning, cluster.RoleStandby
		}
	}
	return f.status(s), nil
}

func (f *fakePlatform) Delete(_ context.Context, s cluster.Spec, _ []cluster.Member) error {
	f.record("delete")
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.clusters, s.Name)
	return nil
}

func (f *fakePlatform) Import(_ context.Context, id string) (cluster.Spec, []cluster.Member, error) {
	return cluster.Spec{}, nil, fmt.Errorf("the fake platform imports nothing (%s)", id)
}

func fakeFactories(f *fakePlatform) map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"pgnvme": providerserver.NewProtocol6WithError(provider.NewWithPlatforms("test", map[cluster.Platform]provider.ClusterPlatform{cluster.PlatformLocal: f})()),
	}
}

// The glue alone, on a fake platform: create, a refresh that finds a lost node, the repair plan and apply,
// destroy. No PostgreSQL runs, so this is quick and shows the glue does nothing but convert and call.
func TestCluster_fakePlatform(t *testing.T) {
	start := time.Now()
	f := newFakePlatform()
	config := `
resource "pgnvme_cluster" "demo" {
  name = "tf-fake"
  local = { data_dir = "/nonexistent/tf-fake", port_base = 40000 }
}
`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: fakeFactories(f),
		CheckDestroy: func(*terraform.State) error {
			if _, ok := f.clusters["tf-fake"]; ok {
				return fmt.Errorf("the fake platform still holds the cluster after destroy")
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("id"), knownvalue.StringExact("tf-fake")),
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("postgres_major"), knownvalue.Int64Exact(15)),
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("nodes"), knownvalue.ListExact([]knownvalue.Check{
						nodeCheck("node-1", "primary", 40000), nodeCheck("node-2", "standby", 40001), nodeCheck("node-3", "standby", 40002),
					})),
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("connection_uri"), knownvalue.StringExact("postgresql://postgres@127.0.0.1:40000/postgres")),
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("synchronous_standby_names"), knownvalue.StringExact("ANY 1 (node-2, node-3)")),
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("local").AtMapKey("data_dirs").AtMapKey("node-2"), knownvalue.StringExact("/nonexistent/tf-fake/node-2")),
				},
			},
			{
				// node-3's machine is lost: the refresh shows it, the plan is an update, the apply repairs it alone.
				PreConfig: func() { f.lose("tf-fake", "node-3") },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(clusterAddr, plancheck.ResourceActionUpdate),
						priorStateCheck{addr: clusterAddr, f: func(attrs map[string]any) error {
							nodes, _ := attrs["nodes"].([]any)
							if len(nodes) != 3 || nodes[2].(map[string]any)["state"] != "missing" {
								return fmt.Errorf("the refresh should show node-3 missing: %v", nodes)
							}
							if attrs["synchronous_degraded"] != false {
								return fmt.Errorf("one standby streams under ANY 1: degraded = %v", attrs["synchronous_degraded"])
							}
							return nil
						}},
					},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("nodes").AtSliceIndex(2).AtMapKey("state"), knownvalue.StringExact("running")),
				},
				Check: func(*terraform.State) error {
					if !strings.Contains(strings.Join(f.Calls(), ","), "repair node-3") || strings.Contains(strings.Join(f.Calls(), ","), "repair node-2") {
						return fmt.Errorf("want node-3 alone repaired, calls: %v", f.Calls())
					}
					return nil
				},
			},
		},
	})
	t.Logf("fake-platform glue test: %s", time.Since(start).Round(time.Millisecond))
}

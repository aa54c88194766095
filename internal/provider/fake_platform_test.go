package provider

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
)

// FakePlatform keeps clusters in memory, so the glue is tested without a machine: it does what a platform
// promises (members keep their identity, a lost member is repaired alone) and records every call.
type FakePlatform struct {
	mu       sync.Mutex
	clusters map[string][]cluster.Member
	calls    []string
	// priors are what Plan and Update were given, in order.
	priors []cluster.Prior
	// archived counts the status reads: each finds one more segment in the archive, as a real archive
	// moves on between a plan and its apply.
	archived int
}

func NewFakePlatform() *FakePlatform { return &FakePlatform{clusters: map[string][]cluster.Member{}} }

func (f *FakePlatform) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *FakePlatform) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Priors are what Plan and Update were given, in order.
func (f *FakePlatform) Priors() []cluster.Prior {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]cluster.Prior(nil), f.priors...)
}

// Lose marks a member missing, as if its machine were gone.
func (f *FakePlatform) Lose(name, node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.clusters[name] {
		if f.clusters[name][i].Name == node {
			f.clusters[name][i].State, f.clusters[name][i].Role = cluster.StateMissing, ""
		}
	}
}

func (f *FakePlatform) status(s cluster.Spec) cluster.Status {
	members := f.clusters[s.Name]
	st := cluster.Status{Members: append([]cluster.Member(nil), members...), PostgresMajor: 15, SynchronousKnown: true,
		Platform: &localspec.Status{}}
	var standbys []string
	for _, m := range members {
		if m.Role == cluster.RoleStandby && m.State == cluster.StateRunning {
			standbys = append(standbys, m.Name)
		}
	}
	st.SynchronousStandbyNames = fmt.Sprintf("ANY %d (%s)", s.Synchronous.Number, strings.Join(standbys, ", "))
	st.Degraded = len(standbys) < s.Synchronous.Number
	f.archived++
	st.Archive = &archive.Health{LastArchived: fmt.Sprintf("00000001%016X", f.archived), Segments: f.archived}
	return st
}

func (f *FakePlatform) Plan(_ context.Context, s cluster.Spec, pr cluster.Prior) (cluster.Plan, error) {
	f.record("plan")
	prior := pr.Members
	f.mu.Lock()
	defer f.mu.Unlock()
	f.priors = append(f.priors, pr)
	p := cluster.Plan{PostgresMajor: 15, Platform: &localspec.Status{}}
	var actions []string
	for i, m := range localspec.Assign(s, prior) {
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

func (f *FakePlatform) Create(_ context.Context, s cluster.Spec) (cluster.Status, error) {
	f.record("create")
	f.mu.Lock()
	defer f.mu.Unlock()
	members := localspec.Assign(s, nil)
	for i := range members {
		members[i].Role, members[i].State = cluster.RoleStandby, cluster.StateRunning
	}
	members[0].Role = cluster.RolePrimary
	f.clusters[s.Name] = members
	return f.status(s), nil
}

func (f *FakePlatform) Read(_ context.Context, s cluster.Spec, _ cluster.Prior) (cluster.Status, error) {
	f.record("read")
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.clusters[s.Name]; !ok {
		return cluster.Status{Members: []cluster.Member{{Name: s.Nodes[0].Name, State: cluster.StateMissing}}}, nil
	}
	return f.status(s), nil
}

func (f *FakePlatform) Update(_ context.Context, s cluster.Spec, pr cluster.Prior) (cluster.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.priors = append(f.priors, pr)
	for i, m := range f.clusters[s.Name] {
		if m.State != cluster.StateRunning {
			f.calls = append(f.calls, "repair "+m.Name)
			f.clusters[s.Name][i].State, f.clusters[s.Name][i].Role = cluster.StateRunning, cluster.RoleStandby
		}
	}
	return f.status(s), nil
}

func (f *FakePlatform) Delete(_ context.Context, s cluster.Spec, _ cluster.Prior) error {
	f.record("delete")
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.clusters, s.Name)
	return nil
}

func (f *FakePlatform) Import(_ context.Context, id string) (cluster.Spec, []cluster.Member, error) {
	return cluster.Spec{}, nil, fmt.Errorf("the fake platform imports nothing (%s)", id)
}

// Has reports whether the fake holds cluster name.
func (f *FakePlatform) Has(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.clusters[name]
	return ok
}

package bootstrap_test

import (
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
)

// A parameter of another major is refused, naming the majors that know it and the cluster's; the same
// parameters pass on a major that knows them; a cluster's Problems hold it at parameters.<name>.
func TestParameterVersionProblems(t *testing.T) {
	params := map[string]string{"io_method": "worker", "IO_Workers": "3", "shared_buffers": "1GB", "force_parallel_mode": "off"}
	got := bootstrap.ParameterVersionProblems(params, 15)
	if len(got) != 2 || got["io_method"] == nil || got["IO_Workers"] == nil {
		t.Fatalf("on 15: %v", got)
	}
	for _, want := range []string{`"io_method" is one of PostgreSQL 18 and later (asynchronous I/O); this cluster runs PostgreSQL 15`, "postgres_major = 15"} {
		if !strings.Contains(got["io_method"].Error(), want) {
			t.Errorf("%q lacks %q", got["io_method"], want)
		}
	}
	got = bootstrap.ParameterVersionProblems(params, 18)
	if len(got) != 1 || !strings.Contains(got["force_parallel_mode"].Error(), "PostgreSQL 15 and earlier (renamed debug_parallel_query in 16)") {
		t.Errorf("on 18: %v", got)
	}
	c := bootstrap.Cluster{Name: "orders", PostgresMajor: 15, Nodes: []string{"a"}, Parameters: map[string]string{"io_method": "worker"}}
	found := false
	for _, p := range c.Problems() {
		if len(p.Path) == 2 && p.Path[0] == "parameters" && p.Path[1] == "io_method" {
			found = true
		}
	}
	if !found {
		t.Errorf("Problems of a 15 cluster with io_method: %v", c.Problems())
	}
}

// The table agrees with the installed PostgreSQL: each parameter in it is in a running server's own list
// (pg_settings) exactly when the table says the installed major knows it; and pgnvme_tuning for the
// installed major writes only parameters the server knows.
func TestParameterVersions_postgres(t *testing.T) {
	srv := pgfixture.Start(t, pgfixture.Options{})
	major := srv.Major
	known := map[string]bool{}
	for _, name := range strings.Split(srv.Psql(t, "postgres", "SELECT string_agg(name, ',') FROM pg_settings"), ",") {
		known[name] = true
	}
	if len(known) < 300 {
		t.Fatalf("postgres --describe-config listed %d parameters", len(known))
	}
	for name := range bootstrap.ParameterVersionsTable() {
		refused := bootstrap.ParameterVersionProblems(map[string]string{name: "x"}, major)[name] != nil
		if refused == known[name] {
			t.Errorf("PostgreSQL %d: %s is in the server's list: %v; the table refuses it: %v", major, name, known[name], refused)
		}
	}
	tuned, err := capacity.Tune(capacity.Hardware{VCPUs: 8, MemoryGiB: 64, DiskGiB: 500, PostgresMajor: major, MaxConnections: 200,
		Storage: capacity.StorageNVMe, Workload: capacity.WorkloadOLTP})
	if err != nil {
		t.Fatal(err)
	}
	for name := range tuned {
		if !known[name] {
			t.Errorf("pgnvme_tuning for PostgreSQL %d writes %s, which the server does not know", major, name)
		}
	}
	t.Logf("PostgreSQL %d: %d parameters; the table's %d entries agree", major, len(known), len(bootstrap.ParameterVersionsTable()))
}

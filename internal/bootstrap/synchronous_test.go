package bootstrap_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

func TestEffectiveSynchronousStandbyNames(t *testing.T) {
	sync := func(method quorum.Method, number int, d bootstrap.Durability) bootstrap.Cluster {
		c := cluster3()
		c.Synchronous = bootstrap.Synchronous{Method: method, Number: number, DataDurability: d, Commit: bootstrap.CommitOn}
		return c
	}
	for _, tc := range []struct {
		name    string
		cluster bootstrap.Cluster
		primary string
		healthy []string
		want    string
	}{
		{"required keeps the number with no standby", sync(quorum.MethodAny, 1, bootstrap.DurabilityRequired), "pg-a", nil, `ANY 1 ("pg-b", "pg-c")`},
		{"required keeps the number with one standby", sync(quorum.MethodAny, 2, bootstrap.DurabilityRequired), "pg-a", []string{"pg-b"}, `ANY 2 ("pg-b", "pg-c")`},
		{"preferred, all healthy", sync(quorum.MethodAny, 2, bootstrap.DurabilityPreferred), "pg-a", []string{"pg-c", "pg-b"}, `ANY 2 ("pg-b", "pg-c")`},
		{"preferred, one healthy", sync(quorum.MethodAny, 2, bootstrap.DurabilityPreferred), "pg-a", []string{"pg-c"}, `ANY 1 ("pg-b", "pg-c")`},
		{"preferred, none healthy", sync(quorum.MethodAny, 2, bootstrap.DurabilityPreferred), "pg-a", nil, ""},
		{"preferred, number above standbys", sync(quorum.MethodAny, 5, bootstrap.DurabilityPreferred), "pg-a", []string{"pg-b", "pg-c"}, `ANY 2 ("pg-b", "pg-c")`},
		{"preferred FIRST keeps priority order", sync(quorum.MethodFirst, 1, bootstrap.DurabilityPreferred), "pg-b", []string{"pg-c"}, `FIRST 1 ("pg-a", "pg-c")`},
		{"asynchronous", sync(quorum.MethodAny, 0, bootstrap.DurabilityRequired), "pg-a", []string{"pg-b", "pg-c"}, ""},
		{"names matched ignoring case", sync(quorum.MethodAny, 1, bootstrap.DurabilityPreferred), "PG-B", []string{"Pg-A"}, `ANY 1 ("pg-a", "pg-c")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bootstrap.EffectiveSynchronousStandbyNames(tc.cluster, tc.primary, tc.healthy)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if got != "" {
				if _, err := quorum.Parse(got); err != nil {
					t.Errorf("PostgreSQL would refuse %q: %v", got, err)
				}
			}
		})
	}
}

func TestEffectiveSynchronousStandbyNames_errors(t *testing.T) {
	c := cluster3()
	for _, tc := range []struct {
		name    string
		cluster bootstrap.Cluster
		primary string
		healthy []string
		want    string
	}{
		{"no primary", c, "", nil, "No primary was named; name the node that is the primary now."},
		{"unknown primary", c, "pg-z", nil, `The primary "pg-z" is not one of the cluster's nodes (pg-a, pg-b, pg-c)`},
		{"unknown standby", c, "pg-a", []string{"pg-x"}, `The healthy standby "pg-x" is not one of the cluster's nodes`},
		{"primary as standby", c, "pg-a", []string{"pg-a"}, `The primary "pg-a" is listed as a healthy standby; list only standbys.`},
		{"standby twice", c, "pg-a", []string{"pg-b", "PG-B"}, `The healthy standby "PG-B" is listed twice`},
		{"invalid cluster", bootstrap.Cluster{}, "pg-a", nil, "The cluster name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bootstrap.EffectiveSynchronousStandbyNames(tc.cluster, tc.primary, tc.healthy)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to say %q", err, tc.want)
			}
			checkSentences(t, err)
		})
	}
}

func TestClusterWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*bootstrap.Cluster)
		want []string
	}{
		{"ANY 1 of 2 required", func(*bootstrap.Cluster) {}, nil},
		{"every standby required", func(c *bootstrap.Cluster) { c.Synchronous.Number = 2 }, []string{"one standby down stops every commit"}},
		{"every standby preferred", func(c *bootstrap.Cluster) {
			c.Synchronous.Number = 2
			c.Synchronous.DataDurability = bootstrap.DurabilityPreferred
		}, nil},
		{"more than standbys preferred", func(c *bootstrap.Cluster) {
			c.Synchronous.Number = 3
			c.Synchronous.DataDurability = bootstrap.DurabilityPreferred
		}, []string{"commits wait for 2 until there are more nodes"}},
		{"FIRST 1 of 2", func(c *bootstrap.Cluster) { c.Synchronous.Method = quorum.MethodFirst }, []string{"FIRST waits for the standbys first in node order"}},
		{"commit local", func(c *bootstrap.Cluster) { c.Synchronous.Commit = bootstrap.CommitLocal }, []string{`synchronous_commit "local" makes commits wait for no standby`}},
		{"one node, preferred", func(c *bootstrap.Cluster) {
			c.Nodes = []string{"solo"}
			c.Synchronous.DataDurability = bootstrap.DurabilityPreferred
		}, []string{"The cluster has no standby"}},
		{"asynchronous, commit off", func(c *bootstrap.Cluster) {
			c.Synchronous.Number = 0
			c.Synchronous.Commit = bootstrap.CommitOff
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster3()
			tc.edit(&c)
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			got := c.Warnings()
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %q, want %d matching %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) || !strings.HasSuffix(got[i], ".") {
					t.Errorf("warning %q does not say %q in a sentence", got[i], w)
				}
			}
		})
	}
}

func TestRestartRequired(t *testing.T) {
	contexts := map[string]string{
		"shared_buffers":             "postmaster",
		"max_connections":            "postmaster",
		"work_mem":                   "user",
		"synchronous_standby_names":  "sighup",
		"log_min_duration_statement": "superuser",
		"log_connections":            "superuser-backend",
		"jit_provider":               "postmaster",
		"wal_block_size":             "internal",
		"ignore_system_indexes":      "backend",
	}
	restart, reload := bootstrap.RestartRequired(map[string]string{
		"work_mem": "8MB", "Shared_Buffers": "2GB", "synchronous_standby_names": "", "log_min_duration_statement": "1s",
		"log_connections": "on", "ignore_system_indexes": "off", "wal_block_size": "8192", "pg_stat_statements.max": "100",
		"max_connections": "200",
	}, contexts)
	wantRestart := []string{"Shared_Buffers", "max_connections", "pg_stat_statements.max", "wal_block_size"}
	wantReload := []string{"ignore_system_indexes", "log_connections", "log_min_duration_statement", "synchronous_standby_names", "work_mem"}
	if !slices.Equal(restart, wantRestart) {
		t.Errorf("restart = %q, want %q", restart, wantRestart)
	}
	if !slices.Equal(reload, wantReload) {
		t.Errorf("reload = %q, want %q", reload, wantReload)
	}
	if r, l := bootstrap.RestartRequired(nil, contexts); r != nil || l != nil {
		t.Errorf("nothing changed: restart %q, reload %q", r, l)
	}
}

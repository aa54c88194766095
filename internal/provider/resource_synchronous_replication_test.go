package provider_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

const syncAddr = "pgnvme_synchronous_replication.quorum"

func syncConfig(port int, body string) string {
	return fmt.Sprintf(`
resource "pgnvme_synchronous_replication" "quorum" {
  server {
    host = "127.0.0.1"
    port = %d
  }
%s
}
`, port, body)
}

// syncStates is "name|sync_state" per standby, ordered by name.
func syncStates(t *testing.T, c *acctest.Cluster) string {
	t.Helper()
	return c.Psql(t, c.Primary, "SELECT application_name || '|' || sync_state FROM pg_stat_replication ORDER BY 1")
}

// waitFor polls cond for up to d (acctest.WaitFor).
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	acctest.WaitFor(t, d, what, func() (bool, string) { return cond(), "not yet" })
}

// commitsUnderQuorum exercises ANY 1 (s1, s2) on the live cluster: with one standby down commits continue;
// with both down a commit waits in IPC:SyncRep (seen in pg_stat_activity, then cancelled, never blocking
// the test); with the standbys back commits flow again.
func commitsUnderQuorum(t *testing.T, c *acctest.Cluster) {
	t.Helper()
	c.Psql(t, c.Primary, "CREATE TABLE IF NOT EXISTS acked (n int PRIMARY KEY)")
	s1, s2 := c.Standbys[0], c.Standbys[1]

	c.StopNode(t, s1)
	start := time.Now()
	c.Psql(t, c.Primary, "INSERT INTO acked VALUES (1)")
	t.Logf("commit with s1 down took %s", time.Since(start).Round(time.Millisecond))

	c.StopNode(t, s2)
	done := make(chan error, 1)
	go func() {
		_, err := c.TryPsql(c.Primary, "INSERT INTO acked VALUES (2)")
		done <- err
	}()
	waitFor(t, 10*time.Second, "a commit waiting in IPC:SyncRep", func() bool {
		return c.Psql(t, c.Primary, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'IPC' AND wait_event = 'SyncRep' AND query LIKE 'INSERT INTO acked VALUES (2)%'") == "1"
	})
	select {
	case err := <-done:
		t.Fatalf("the commit returned with both standbys down (err %v): it should wait", err)
	default:
	}
	c.Psql(t, c.Primary, "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'")
	select {
	case err := <-done:
		// Cancelled: PostgreSQL only warns that the commit is local already, so psql succeeds.
		if err != nil {
			t.Fatalf("the cancelled commit failed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting commit did not end after pg_cancel_backend")
	}

	c.StartNode(t, s1)
	c.StartNode(t, s2)
	waitFor(t, 30*time.Second, "both standbys back in quorum", func() bool {
		return syncStates(t, c) == "s1|quorum\ns2|quorum"
	})
	start = time.Now()
	c.Psql(t, c.Primary, "INSERT INTO acked VALUES (3)")
	if got := c.Psql(t, c.Primary, "SELECT string_agg(n::text, ',' ORDER BY n) FROM acked"); got != "1,2,3" {
		t.Fatalf("acked rows = %s, want 1,2,3 (the cancelled commit 2 is local already)", got)
	}
	t.Logf("commit with both standbys back took %s", time.Since(start).Round(time.Millisecond))
}

func TestAccSynchronousReplication_quorum(t *testing.T) {
	cluster := acctest.StartCluster(t, 2, nil)
	port := cluster.Primary.Port
	config := syncConfig(port, `  standby_names = ["s1", "s2"]`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(syncAddr, tfjsonpath.New("synchronous_standby_names"), knownvalue.StringExact("ANY 1 (s1, s2)")),
					statecheck.ExpectKnownValue(syncAddr, tfjsonpath.New("id"), knownvalue.StringExact(fmt.Sprintf("127.0.0.1:%d/postgres", port))),
				},
				Check: func(*terraform.State) error {
					if got := syncStates(t, cluster); got != "s1|quorum\ns2|quorum" {
						return fmt.Errorf("sync states = %q, want both quorum", got)
					}
					commitsUnderQuorum(t, cluster)
					return nil
				},
			},
			{
				// Someone changes the setting by hand: the plan shows it, the apply restores it.
				PreConfig: func() {
					cluster.SetStandbyNames(t, "FIRST 1 (s1)")
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(syncAddr, plancheck.ResourceActionUpdate)},
				},
				Check: func(*terraform.State) error {
					if got := cluster.Psql(t, cluster.Primary, "SHOW synchronous_standby_names"); got != "ANY 1 (s1, s2)" {
						return fmt.Errorf("after the repair apply the server says %q", got)
					}
					return nil
				},
			},
			{
				ResourceName:      syncAddr,
				ImportState:       true,
				ImportStateId:     fmt.Sprintf("127.0.0.1:%d/postgres", port),
				ImportStateVerify: true,
			},
		},
		CheckDestroy: func(*terraform.State) error {
			if got := cluster.Psql(t, cluster.Primary, "SHOW synchronous_standby_names"); got != "" {
				return fmt.Errorf("after destroy synchronous_standby_names = %q, want reset", got)
			}
			return nil
		},
	})
}

func TestAccSynchronousReplication_first(t *testing.T) {
	cluster := acctest.StartCluster(t, 2, nil)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: syncConfig(cluster.Primary.Port, `
  method             = "first"
  number             = 1
  standby_names      = ["s1", "s2"]
  synchronous_commit = "remote_apply"
`),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(syncAddr, tfjsonpath.New("synchronous_standby_names"), knownvalue.StringExact("FIRST 1 (s1, s2)")),
			},
			Check: func(*terraform.State) error {
				if got := syncStates(t, cluster); got != "s1|sync\ns2|potential" {
					return fmt.Errorf("sync states = %q, want s1 sync and s2 potential", got)
				}
				if got := cluster.Psql(t, cluster.Primary, "SHOW synchronous_commit"); got != "remote_apply" {
					return fmt.Errorf("synchronous_commit = %q", got)
				}
				return nil
			},
		}},
	})
}

// Resetting the setting by hand removes the resource; the next plan creates it again.
func TestAccSynchronousReplication_disappears(t *testing.T) {
	cluster := acctest.StartCluster(t, 2, nil)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: syncConfig(cluster.Primary.Port, `  standby_names = ["s1", "s2"]`),
			Check: func(*terraform.State) error {
				cluster.SetStandbyNames(t, "")
				return nil
			},
			ExpectNonEmptyPlan: true,
		}},
	})
}

func TestAccSynchronousReplication_notPrimary(t *testing.T) {
	cluster := acctest.StartCluster(t, 1, nil)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      syncConfig(cluster.Standbys[0].Port, `  standby_names = ["s1"]`),
			ExpectError: regexpOf(`(?s)Not A Primary.*is a standby`),
		}},
	})
}

func TestAccSynchronousReplication_badInputs(t *testing.T) {
	cfg := func(body string) string { return syncConfig(5432, body) }
	runBadInputs(t, []badInput{
		{"number zero", cfg("standby_names = [\"s1\", \"s2\"]\nnumber = 0"), `(?s)number.*at least 1`},
		{"number above names", cfg("standby_names = [\"s1\", \"s2\"]\nnumber = 3"), `(?s)Invalid Synchronous Standbys.*number`},
		{"duplicate names", cfg(`standby_names = ["s1", "S1"]`), `(?s)Invalid Synchronous Standbys.*same standby`},
		{"empty name", cfg(`standby_names = ["s1", ""]`), `(?s)standby_names.*length`},
		{"no names", cfg(`standby_names = []`), `(?s)standby_names.*at least 1`},
		{"unknown method", cfg("standby_names = [\"s1\"]\nmethod = \"all\""), `(?s)method.*value must be one of`},
		{"unknown synchronous_commit", cfg("standby_names = [\"s1\"]\nsynchronous_commit = \"always\""), `(?s)synchronous_commit.*value must be one of`},
		{"unknown sslmode", `resource "pgnvme_synchronous_replication" "x" {
  server {
    host    = "127.0.0.1"
    sslmode = "sometimes"
  }
  standby_names = ["s1"]
}`, `(?s)sslmode.*value must be one of`},
		{"port out of range", `resource "pgnvme_synchronous_replication" "x" {
  server {
    host = "127.0.0.1"
    port = 70000
  }
  standby_names = ["s1"]
}`, `(?s)port.*between 1 and 65535`},
	})
}

// ANY n with n equal to the number of names applies (with a plan-time warning that one standby down stops
// every commit; the warning's text is tested in internal/quorum).
func TestAccSynchronousReplication_numberEqualsNames(t *testing.T) {
	cluster := acctest.StartCluster(t, 2, nil)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: syncConfig(cluster.Primary.Port, `
  standby_names = ["s1", "s2"]
  number        = 2
`),
			Check: func(*terraform.State) error {
				if got := syncStates(t, cluster); got != "s1|quorum\ns2|quorum" {
					return fmt.Errorf("sync states = %q", got)
				}
				if !strings.HasPrefix(cluster.Psql(t, cluster.Primary, "SHOW synchronous_standby_names"), "ANY 2") {
					return fmt.Errorf("not ANY 2")
				}
				return nil
			},
		}},
	})
}

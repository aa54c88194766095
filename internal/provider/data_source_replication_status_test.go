package provider_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

func standbyStatus(name string) knownvalue.Check {
	return knownvalue.ObjectPartial(map[string]knownvalue.Check{
		"application_name": knownvalue.StringExact(name),
		"client_addr":      knownvalue.StringExact("127.0.0.1"),
		"state":            knownvalue.StringExact("streaming"),
		"sync_state":       knownvalue.StringExact("quorum"),
		"sent_lsn":         knownvalue.StringRegexp(regexpOf(`^[0-9A-F]+/[0-9A-F]+$`)),
		"replay_lsn":       knownvalue.StringRegexp(regexpOf(`^[0-9A-F]+/[0-9A-F]+$`)),
	})
}

func TestAccReplicationStatusDataSource_cluster(t *testing.T) {
	cluster := acctest.StartCluster(t, 2, nil)
	cluster.SetStandbyNames(t, "ANY 1 (s1, s2)")
	waitFor(t, 10*time.Second, "quorum", func() bool { return syncStates(t, cluster) == "s1|quorum\ns2|quorum" })
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
data "pgnvme_replication_status" "primary" {
  server {
    host = "127.0.0.1"
    port = %d
  }
}

data "pgnvme_replication_status" "standby" {
  server {
    host = "127.0.0.1"
    port = %d
  }
}

output "lag_small" {
  value = alltrue([for s in data.pgnvme_replication_status.primary.standbys : s.lag_bytes >= 0 && s.lag_bytes < 16777216])
}
`, cluster.Primary.Port, cluster.Standbys[0].Port),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.pgnvme_replication_status.primary", tfjsonpath.New("is_primary"), knownvalue.Bool(true)),
				statecheck.ExpectKnownValue("data.pgnvme_replication_status.primary", tfjsonpath.New("synchronous_standby_names"), knownvalue.StringExact("ANY 1 (s1, s2)")),
				statecheck.ExpectKnownValue("data.pgnvme_replication_status.primary", tfjsonpath.New("standbys"),
					knownvalue.ListExact([]knownvalue.Check{standbyStatus("s1"), standbyStatus("s2")})),
				statecheck.ExpectKnownValue("data.pgnvme_replication_status.primary", tfjsonpath.New("archiver"), knownvalue.ObjectPartial(map[string]knownvalue.Check{
					"archived_count": knownvalue.Int64Exact(0),
					"failed_count":   knownvalue.Int64Exact(0),
				})),
				statecheck.ExpectKnownValue("data.pgnvme_replication_status.primary", tfjsonpath.New("current_wal_lsn"), knownvalue.StringRegexp(regexpOf(`^[0-9A-F]+/[0-9A-F]+$`))),
				statecheck.ExpectKnownValue("data.pgnvme_replication_status.standby", tfjsonpath.New("is_primary"), knownvalue.Bool(false)),
				statecheck.ExpectKnownValue("data.pgnvme_replication_status.standby", tfjsonpath.New("standbys"), knownvalue.ListExact([]knownvalue.Check{})),
				outputTrue("lag_small"),
			},
		}},
	})
}

func TestAccReplicationStatusDataSource_unreachable(t *testing.T) {
	port, err := acctest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	runBadInputs(t, []badInput{
		{"nothing listening", fmt.Sprintf(`data "pgnvme_replication_status" "x" {
  server {
    host = "127.0.0.1"
    port = %d
  }
}`, port), `(?s)Cannot Connect To PostgreSQL.*127.0.0.1:` + fmt.Sprint(port)},
		{"unknown sslmode", `data "pgnvme_replication_status" "x" {
  server {
    host    = "127.0.0.1"
    sslmode = "on"
  }
}`, `(?s)sslmode.*value must be one of`},
	})
}

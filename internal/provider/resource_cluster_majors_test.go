package provider_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
)

// majorsCluster is a one-node local cluster named name whose configuration adds extra (postgres_major,
// parameters) inside the resource.
func majorsCluster(name, dataDir string, portBase int, extra string) string {
	return fmt.Sprintf(`
resource "pgnvme_cluster" %[1]q {
  name       = %[1]q
  node_count = 1
%[4]s
  local {
    data_dir  = %[2]q
    port_base = %[3]d
  }
}
`, name, dataDir, portBase, extra)
}

// serverVersion is SHOW server_version on the server at port, logged so a run shows which major ran.
func serverVersion(t *testing.T, port int) string {
	t.Helper()
	v := psqlAt(t, port, "SHOW server_version")
	t.Logf("server on port %d: PostgreSQL %s", port, v)
	return v
}

// A machine with two majors runs two clusters side by side, each on its own major's binaries: one that
// names postgres_major = 15, and one that leaves it unset and gets the newest installed (the default major,
// recorded in state at create, so it stays when a newer major is installed later). A major that is not
// installed is refused at plan, naming the package, and nothing is created.
func TestAccCluster_twoMajors(t *testing.T) {
	old, def := clusterDir(t), clusterDir(t)
	oldBase := acctest.FreePortBase(t, 3)
	defBase, missingBase := oldBase+1, oldBase+2
	config := majorsCluster("tf-acc-pg15", old, oldBase, "  postgres_major = 15") + majorsCluster("tf-acc-default", def, defBase, "")
	missing := clusterDir(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy: func(s *terraform.State) error {
			if err := localClusterGone(old, oldBase, 1)(s); err != nil {
				return err
			}
			return localClusterGone(def, defBase, 1)(s)
		},
		Steps: []resource.TestStep{
			{
				Config:      majorsCluster("tf-acc-pg17", missing, missingBase, "  postgres_major = 17"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)PostgreSQL Version Not Installed.*PostgreSQL 17 is not installed.*postgresql-17`),
			},
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("pgnvme_cluster.tf-acc-pg15", tfjsonpath.New("postgres_major"), knownvalue.Int64Exact(15)),
					statecheck.ExpectKnownValue("pgnvme_cluster.tf-acc-default", tfjsonpath.New("postgres_major"),
						knownvalue.Int64Exact(capacity.DefaultPostgresMajor)),
				},
				Check: func(*terraform.State) error {
					if v := serverVersion(t, oldBase); !strings.HasPrefix(v, "15.") {
						return fmt.Errorf("the cluster with postgres_major = 15 runs PostgreSQL %s", v)
					}
					if v := serverVersion(t, defBase); !strings.HasPrefix(v, fmt.Sprintf("%d.", capacity.DefaultPostgresMajor)) {
						return fmt.Errorf("the cluster with postgres_major unset runs PostgreSQL %s, want the default major %d", v, capacity.DefaultPostgresMajor)
					}
					return nil
				},
			},
			{
				// Both clusters read back as they are: no change planned.
				Config:   config,
				PlanOnly: true,
			},
			{
				ResourceName:      "pgnvme_cluster.tf-acc-pg15",
				ImportState:       true,
				ImportStateId:     "local:" + old,
				ImportStateVerify: true,
				// An import writes the nodes and the synchronous block out in full (node blocks for node_count);
				// what matters here is postgres_major, read back from the cluster's manifest.
				ImportStateVerifyIgnore: []string{"node", "node_count", "synchronous"},
			},
		},
	})
}

// The default major's own parameters, for real: pgnvme_tuning's set for the default major (io_method and
// io_workers are PostgreSQL 18's) applied to a cluster of the default major, the nodes started with it;
// then io_method = io_uring (the server is built with liburing) applied by a restart of each node.
func TestAccCluster_defaultMajorTuning(t *testing.T) {
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 2)
	config := func(extra string) string {
		return `
data "pgnvme_tuning" "node" {
  vcpus      = 2
  memory_gib = 2
  disk_gib   = 20
  storage    = "nvme"
}
` + fmt.Sprintf(`
resource "pgnvme_cluster" "demo" {
  name       = "tf-acc"
  node_count = 2
  synchronous {
    method = "any"
    number = 1
  }
  parameters = merge(data.pgnvme_tuning.node.postgres_parameters, {%s})
  local {
    data_dir  = %q
    port_base = %d
  }
}
`, extra, dir, base)
	}
	show := func(port int, name string) string { return psqlAt(t, port, "SHOW "+name) }
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             localClusterGone(dir, base, 2),
		Steps: []resource.TestStep{
			{
				Config: config(""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("postgres_major"), knownvalue.Int64Exact(capacity.DefaultPostgresMajor)),
					statecheck.ExpectKnownValue(clusterAddr, tfjsonpath.New("parameters").AtMapKey("io_method"), knownvalue.StringExact("worker")),
				},
				Check: func(*terraform.State) error {
					for _, port := range []int{base, base + 1} {
						if v := serverVersion(t, port); !strings.HasPrefix(v, fmt.Sprintf("%d.", capacity.DefaultPostgresMajor)) {
							return fmt.Errorf("node on port %d runs PostgreSQL %s", port, v)
						}
						if got := show(port, "io_method"); got != "worker" {
							return fmt.Errorf("node on port %d: io_method %q, want the tuning's worker", port, got)
						}
						if got, want := show(port, "io_workers"), "3"; got != want {
							return fmt.Errorf("node on port %d: io_workers %q, want the tuning's %s (vCPUs / 2, at least 3)", port, got, want)
						}
					}
					return nil
				},
			},
			{
				Config: config(`io_method = "io_uring"`),
				Check: func(*terraform.State) error {
					for _, port := range []int{base, base + 1} {
						if got := show(port, "io_method"); got != "io_uring" {
							return fmt.Errorf("node on port %d: io_method %q after the apply, want io_uring", port, got)
						}
						t.Logf("node on port %d: io_method io_uring in effect", port)
					}
					return nil
				},
			},
		},
	})
}

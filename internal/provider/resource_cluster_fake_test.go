package provider_test

import (
	"fmt"
	"strings"
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

func fakeFactories(f *provider.FakePlatform) map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		"pgnvme": providerserver.NewProtocol6WithError(provider.NewWithPlatforms("test", map[cluster.Platform]provider.ClusterPlatform{cluster.PlatformLocal: f})()),
	}
}

// The glue alone, on a fake platform: create, a refresh that finds a lost node, the repair plan and apply,
// destroy. No PostgreSQL runs, so this is quick and shows the glue does nothing but convert and call.
func TestCluster_fakePlatform(t *testing.T) {
	start := time.Now()
	f := provider.NewFakePlatform()
	config := `
resource "pgnvme_cluster" "demo" {
  name = "tf-fake"
  local = { data_dir = "/nonexistent/tf-fake", port_base = 40000 }
}
`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: fakeFactories(f),
		CheckDestroy: func(*terraform.State) error {
			if f.Has("tf-fake") {
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
				PreConfig: func() { f.Lose("tf-fake", "node-3") },
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

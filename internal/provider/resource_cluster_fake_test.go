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
  local {
    data_dir  = "/nonexistent/tf-fake"
    port_base = 40000
  }
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

// A misspelt or unknown argument inside one of the cluster's blocks is an error at plan that names it.
// Terraform drops unknown keys of a nested attribute's object before the provider sees them
// (hashicorp/terraform#33570), which is why these are blocks: `aws = { deletion_protect = false }` would
// plan, with deletion protection on, and a password argument would be dropped without a word.
func TestCluster_unknownArgumentInBlock(t *testing.T) {
	awsCluster := func(aws, other string) string {
		return fmt.Sprintf(`
resource "pgnvme_cluster" "c" {
  name = "tf-acc-typo"
  node {
    name = "node-1"
    zone = "us-east-1a"
  }
  archive {
    walg_env = { WALG_S3_PREFIX = "s3://tf-acc-archive/clusters/typo" }
  }
  aws {
    instance_type = "m6id.large"
    subnet_ids    = { "us-east-1a" = "subnet-0123456789abcdef0" }
%s
  }
%s
}
`, aws, other)
	}
	localCluster := func(other, local string) string {
		return fmt.Sprintf(`
resource "pgnvme_cluster" "c" {
  name = "tf-acc-typo"
%s
  local {
    data_dir = "/nonexistent/tf-acc-typo"
%s
  }
}
`, other, local)
	}
	notExpected := func(name string) string {
		return `(?s)Unsupported argument.*An argument named "` + name + `" is not expected here`
	}
	typo := awsCluster("    deletion_protect   = false\n    superuser_password = \"x\"", "")
	runBadInputs(t, []badInput{
		{"aws deletion_protect", typo, notExpected("deletion_protect")},
		{"aws superuser_password", typo, notExpected("superuser_password")},
		{"aws patroni", awsCluster("    patroni {\n      tll = 20\n    }", ""), notExpected("tll")},
		{"node", awsCluster("", "  node {\n    name = \"node-2\"\n    zome = \"us-east-1b\"\n  }"), notExpected("zome")},
		{"synchronous", awsCluster("", "  synchronous {\n    numbr = 2\n  }"), notExpected("numbr")},
		{"archive", localCluster("  archive {\n    pgbackrest_option = { \"repo1-type\" = \"posix\" }\n  }", ""), notExpected("pgbackrest_option")},
		{"local", localCluster("", "    port_bas = 40000"), notExpected("port_bas")},
		{"local limits", localCluster("", "    limits {\n      memory_mb = 256\n    }"), notExpected("memory_mb")},
	})
}

// A block's required arguments are asked for where the block is written, and only there (they are Optional
// in the schema: the framework would otherwise ask for aws.instance_type on a local cluster).
func TestCluster_requiredArgumentInBlock(t *testing.T) {
	runBadInputs(t, []badInput{
		{"local without data_dir", "resource \"pgnvme_cluster\" \"c\" {\n  name = \"tf-acc-req\"\n  local {\n    port_base = 40000\n  }\n}\n",
			`(?s)Missing Required Argument.*"data_dir" is required in the local block`},
		{"aws without instance_type and subnet_ids", "resource \"pgnvme_cluster\" \"c\" {\n  name = \"tf-acc-req\"\n  aws {\n    deletion_protection = false\n  }\n}\n",
			`(?s)Missing Required Argument.*"instance_type" is required in the aws block`},
		{"aws without subnet_ids", "resource \"pgnvme_cluster\" \"c\" {\n  name = \"tf-acc-req\"\n  aws {\n    instance_type = \"m6id.large\"\n  }\n}\n",
			`(?s)Missing Required Argument.*"subnet_ids" is required in the aws block`},
	})
}

package provider_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

// pgnvme_tuning for the talk's machine gives the same parameters pgnvme_capacity_plan gives when it
// recommends that machine: both call the same rules.
func TestAccTuningDataSource_matchesCapacityPlan(t *testing.T) {
	noCredentials(t)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: `
data "pgnvme_capacity_plan" "talk" {
  region         = "us-east-1"
  dataset_gib    = 482
  min_vcpus      = 16
  min_memory_gib = 64
  architectures  = ["x86_64"]
}

data "pgnvme_tuning" "m6id" {
  vcpus      = data.pgnvme_capacity_plan.talk.recommended.vcpus
  memory_gib = data.pgnvme_capacity_plan.talk.recommended.memory_gib
  disk_gib   = 950 * 1e9 / pow(2, 30)
}

data "pgnvme_tuning" "ebs15" {
  vcpus          = 2
  memory_gib     = 8
  disk_gib       = 100
  storage        = "ebs"
  workload       = "analytics"
  postgres_major = 15
}

output "same" {
  value = data.pgnvme_tuning.m6id.postgres_parameters == data.pgnvme_capacity_plan.talk.postgres_parameters
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				outputTrue("same"),
				statecheck.ExpectKnownValue("data.pgnvme_tuning.ebs15", tfjsonpath.New("postgres_parameters"), knownvalue.MapPartial(map[string]knownvalue.Check{
					"shared_buffers":  knownvalue.StringExact("2GB"),
					"wal_compression": knownvalue.StringExact("lz4"),
				})),
			},
		}},
	})
}

func TestAccTuningDataSource_badInputs(t *testing.T) {
	tuning := func(body string) string { return "data \"pgnvme_tuning\" \"x\" {\n" + body + "\n}\n" }
	runBadInputs(t, []badInput{
		{"zero vcpus", tuning(`vcpus = 0
memory_gib = 8
disk_gib = 100`), `(?s)vcpus.*between 1 and 1024`},
		{"tiny memory", tuning(`vcpus = 2
memory_gib = 0.1
disk_gib = 100`), `(?s)memory_gib.*between 0.5`},
		{"zero disk", tuning(`vcpus = 2
memory_gib = 8
disk_gib = 0`), `(?s)disk_gib.*between 1`},
		{"unknown storage", tuning(`vcpus = 2
memory_gib = 8
disk_gib = 100
storage = "hdd"`), `(?s)storage.*value must be one of`},
		{"too few connections", tuning(`vcpus = 2
memory_gib = 8
disk_gib = 100
max_connections = 1`), `(?s)max_connections.*between 10 and 10000`},
		{"major too new", tuning(`vcpus = 2
memory_gib = 8
disk_gib = 100
postgres_major = 19`), `(?s)postgres_major.*between 13 and 18`},
		{"missing disk", tuning(`vcpus = 2
memory_gib = 8`), `(?s)Missing required argument.*disk_gib`},
	})
}

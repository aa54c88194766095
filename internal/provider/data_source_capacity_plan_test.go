package provider_test

import (
	"math"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

// The talk's workload: 482 GiB of heap and indexes, three nodes in three zones of us-east-1, at least 16
// vCPUs and 64 GiB. The figures are computed here by hand from the documented formula:
//
//	bloated  = dataset x bloat_factor                     = 482 x 1.2
//	wal      = max(16, 10% of bloated)                    = 57.84
//	required = (bloated + wal) / max_disk_utilization     = (578.4 + 57.84) / 0.75
//	util     = (bloated + wal) / nvme_total_gib
func TestAccCapacityPlanDataSource_talk(t *testing.T) {
	noCredentials(t)
	bloated := 482 * 1.2
	wal := math.Max(16, 0.10*bloated)
	required := (bloated + wal) / 0.75
	m6idGiB := 950e9 / (1 << 30)
	util := (bloated + wal) / m6idGiB

	const addr = "data.pgnvme_capacity_plan.talk"
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: `
provider "pgnvme" {
  region = "us-east-1"
}

data "pgnvme_capacity_plan" "talk" {
  dataset_gib    = 482
  min_vcpus      = 16
  min_memory_gib = 64
  architectures  = ["x86_64"]
  node_count     = 3
}

locals {
  plan = data.pgnvme_capacity_plan.talk
}

output "recommended_holds_requirement" {
  value = local.plan.recommended.nvme_total_gib >= local.plan.required_nvme_gib && local.plan.recommended.disk_utilization <= 0.75
}
output "every_candidate_fits" {
  value = alltrue([for c in local.plan.candidates : c.nvme_total_gib >= local.plan.required_nvme_gib && c.vcpus >= 16 && c.memory_gib >= 64 && length(c.zone_ids) >= 3])
}
output "m6id" {
  value = one([for c in local.plan.candidates : c if c.instance_type == "m6id.4xlarge"])
}

data "pgnvme_instance_types" "all" {}

locals {
  special = toset([for t in data.pgnvme_instance_types.all.instance_types : t.instance_type if t.special_purpose])
}

locals {
  previous = toset([for t in data.pgnvme_instance_types.all.instance_types : t.instance_type if t.previous_generation])
}

output "no_previous_generation" {
  value = length(local.previous) > 0 && length(setintersection(local.previous, [for c in local.plan.candidates : c.instance_type])) == 0
}

output "no_special_purpose" {
  value = length(local.special) > 0 && length(setintersection(local.special, [for c in local.plan.candidates : c.instance_type])) == 0
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("instance_type"), knownvalue.StringExact("m6id.4xlarge")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("projected_dataset_gib"), knownvalue.Float64Exact(482)),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("effective_wal_reserve_gib"), knownvalue.Float64Exact(roundTo(wal, 2))),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("required_nvme_gib"), knownvalue.Float64Exact(roundTo(required, 2))),
				statecheck.ExpectKnownOutputValue("m6id", knownvalue.ObjectPartial(map[string]knownvalue.Check{
					"nvme_total_gib":        knownvalue.Float64Exact(roundTo(m6idGiB, 2)),
					"disk_utilization":      knownvalue.Float64Exact(roundTo(util, 4)),
					"memory_to_working_set": knownvalue.Float64Exact(roundTo(64.0/482, 4)),
				})),
				outputTrue("recommended_holds_requirement"),
				outputTrue("every_candidate_fits"),
				outputTrue("no_special_purpose"),
				outputTrue("no_previous_generation"),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("postgres_parameters"), knownvalue.MapPartial(map[string]knownvalue.Check{
					"shared_buffers":         knownvalue.StringExact("16GB"),
					"effective_cache_size":   knownvalue.StringExact("48GB"),
					"random_page_cost":       knownvalue.StringExact("1.1"),
					"io_method":              knownvalue.StringExact("worker"),
					"max_slot_wal_keep_size": knownvalue.StringRegexp(regexpOf(`^\d+GB$`)),
				})),
			},
		}},
	})
}

// Growth over the horizon and pgbench_scale feed the same formula; zones restrict the candidates.
func TestAccCapacityPlanDataSource_growthAndScale(t *testing.T) {
	noCredentials(t)
	size := pgbench.SizeGiB(10000)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: `
data "pgnvme_capacity_plan" "grow" {
  region               = "us-west-2"
  dataset_gib          = 100
  growth_gib_per_month = 20
  horizon_months       = 24
  bloat_factor         = 1.5
  wal_reserve_gib      = 50
  max_disk_utilization = 0.5
  zone_ids             = ["usw2-az1", "usw2-az2"]
  node_count           = 2
  postgres_major       = 15
}

data "pgnvme_capacity_plan" "bench" {
  region        = "us-east-1"
  pgbench_scale = 10000
}

output "in_zones" {
  value = alltrue([for c in data.pgnvme_capacity_plan.grow.candidates : contains(c.zone_ids, "usw2-az1") && contains(c.zone_ids, "usw2-az2")])
}
output "no_io_method_on_15" {
  value = !contains(keys(data.pgnvme_capacity_plan.grow.postgres_parameters), "io_method")
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				// (100 + 20 x 24) = 580 projected; (580 x 1.5 + 50) / 0.5 = 1840.
				statecheck.ExpectKnownValue("data.pgnvme_capacity_plan.grow", tfjsonpath.New("projected_dataset_gib"), knownvalue.Float64Exact(580)),
				statecheck.ExpectKnownValue("data.pgnvme_capacity_plan.grow", tfjsonpath.New("required_nvme_gib"), knownvalue.Float64Exact(1840)),
				statecheck.ExpectKnownValue("data.pgnvme_capacity_plan.bench", tfjsonpath.New("current_dataset_gib"), knownvalue.Float64Exact(roundTo(size, 2))),
				outputTrue("in_zones"),
				outputTrue("no_io_method_on_15"),
			},
		}},
	})
}

func TestAccCapacityPlanDataSource_badInputs(t *testing.T) {
	plan := func(body string) string {
		return "data \"pgnvme_capacity_plan\" \"x\" {\n  region = \"us-east-1\"\n" + body + "\n}\n"
	}
	runBadInputs(t, []badInput{
		{"both sizes", plan(`dataset_gib = 10
pgbench_scale = 100`), `(?s)Invalid Attribute Combination.*dataset_gib`},
		{"neither size", plan(``), `(?s)Missing Attribute Configuration.*dataset_gib,pgbench_scale`},
		{"negative dataset", plan(`dataset_gib = -5`), `(?s)dataset_gib.*at least`},
		{"zero dataset", plan(`dataset_gib = 0`), `(?s)dataset_gib.*at least`},
		{"zero pgbench scale", plan(`pgbench_scale = 0`), `(?s)pgbench_scale.*at least 1`},
		{"negative growth", plan(`dataset_gib = 10
growth_gib_per_month = -1`), `(?s)growth_gib_per_month.*at least 0`},
		{"utilisation zero", plan(`dataset_gib = 10
max_disk_utilization = 0`), `(?s)Invalid Fraction.*max_disk_utilization is 0; it is a fraction above 0 and at most 1, such as\s+0.75 for 75%`},
		{"utilisation above one", plan(`dataset_gib = 10
max_disk_utilization = 1.2`), `(?s)Invalid Fraction.*max_disk_utilization is 1.2; it is a fraction above 0 and at most`},
		{"utilisation as a percentage", plan(`dataset_gib = 10
max_disk_utilization = 75`), `(?s)Invalid Fraction.*max_disk_utilization is 75; it is a fraction.*For 75%,\s+write\s+0.75`},
		{"bloat below one", plan(`dataset_gib = 10
bloat_factor = 0.9`), `(?s)bloat_factor.*between 1`},
		{"negative wal reserve", plan(`dataset_gib = 10
wal_reserve_gib = -1`), `(?s)wal_reserve_gib.*at least 0`},
		{"horizon too long", plan(`dataset_gib = 10
horizon_months = 121`), `(?s)horizon_months.*between 0 and 120`},
		{"unknown architecture", plan(`dataset_gib = 10
architectures = ["aarch64"]`), `(?s)architectures.*value must be one of`},
		{"duplicate zones", plan(`dataset_gib = 10
zones = ["us-east-1a", "us-east-1a", "us-east-1b"]`), `(?s)Duplicate List Value.*zones`},
		{"fewer zones than nodes", plan(`dataset_gib = 10
zone_ids = ["use1-az1", "use1-az2"]`), `(?s)Too Few Zones.*zone_ids`},
		{"node count out of range", plan(`dataset_gib = 10
node_count = 10`), `(?s)node_count.*between 1 and 9`},
		{"postgres major too old", plan(`dataset_gib = 10
postgres_major = 12`), `(?s)postgres_major.*between 13 and 18`},
		{"unknown workload", plan(`dataset_gib = 10
workload = "batch"`), `(?s)workload.*value must be one of`},
		{"unknown region", `data "pgnvme_capacity_plan" "x" {
  region      = "me-west-7"
  dataset_gib = 10
}`, `(?s)Region Not In Embedded Catalog.*me-west-7`},
		{"nothing big enough", plan(`dataset_gib = 200000
architectures = ["x86_64"]`), `(?s)No Instance Type Fits.*largest candidate`},
		{"filters exclude everything", plan(`dataset_gib = 10
min_vcpus = 1000`), `(?s)No Instance Type Meets The Filters.*relax`},
		// Before: "No instance type meets the hard filters (vCPUs, memory, architectures, families, zones)", not which.
		{"one filter binds", plan(`dataset_gib = 10
min_memory_gib = 100000`), `(?s)No Instance Type Meets The Filters.*What binds:\s+min_memory_gib\s+=\s+100000\s+\(\d+\s+types?\s+without\s+it\)`},
		{"several filters bind together", plan(`dataset_gib = 10
min_memory_gib = 100000
min_vcpus = 1000`), `(?s)No Instance Type Meets The Filters.*No single filter\s+binds`},
	})
}

// Without min_vcpus, a plan considers types with 2 vCPUs or more (a database node needs a core for queries
// and one for the rest), and says so in recommendation_reason; min_vcpus = 1 lets single-vCPU types in, and
// the smallest that holds 200 GiB then has 1 vCPU (in the embedded catalog: is4gen.medium).
func TestAccCapacityPlanDataSource_vcpuFloor(t *testing.T) {
	noCredentials(t)
	cfg := func(extra string) string {
		return `
provider "pgnvme" {
  region = "us-east-1"
}

data "pgnvme_capacity_plan" "small" {
  dataset_gib = 200
` + extra + `
}

output "vcpus" {
  value = data.pgnvme_capacity_plan.small.recommended.vcpus
}
`
	}
	const addr = "data.pgnvme_capacity_plan.small"
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				Config: cfg(""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("vcpus", knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("recommendation_reason"), knownvalue.StringRegexp(regexpOf(
						`^[a-z0-9]+\.[a-z0-9]+ is the smallest of \d+ candidates that hold \d+\.\d GiB of NVMe per node: fewest vCPUs, then least memory, then least NVMe, with at least 2 vCPUs \(min_vcpus unset`))),
				},
			},
			{
				Config: cfg("  min_vcpus = 1"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("vcpus", knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("instance_type"), knownvalue.StringExact("is4gen.medium")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("recommendation_reason"), knownvalue.StringRegexp(regexpOf(`with at least 1 vCPU \(min_vcpus\)\.$`))),
				},
			},
		},
	})
}

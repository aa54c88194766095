package provider_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

// The filters of the bench query: at least 900 GiB NVMe, x86_64, offered in three zones of us-east-1.
const bigNVMeFilters = `
  min_nvme_gib        = 900
  architectures       = ["x86_64"]
  offered_in_zone_ids = ["use1-az1", "use1-az2", "use1-az4"]
`

func TestAccInstanceTypesDataSource_embedded(t *testing.T) {
	noCredentials(t)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: `
provider "pgnvme" {
  region = "us-east-1"
}

data "pgnvme_instance_types" "talk" {
  min_vcpus      = 16
  min_memory_gib = 64
  families       = ["m6id"]
}

data "pgnvme_instance_types" "big" {` + bigNVMeFilters + `}

data "pgnvme_instance_types" "by_name" {
  offered_in_zones = ["us-east-1a", "us-east-1b"]
  min_nvme_gib     = 100
  max_nvme_gib     = 500
}

data "pgnvme_instance_types" "general" {
  families                = ["g5", "m6id"]
  exclude_special_purpose = true
}

data "pgnvme_instance_types" "g5_only" {
  families = ["g5"]
}

locals {
  m6id = one([for t in data.pgnvme_instance_types.talk.instance_types : t if t.instance_type == "m6id.4xlarge"])
  big  = data.pgnvme_instance_types.big.instance_types
  mid  = data.pgnvme_instance_types.by_name.instance_types
}

output "m6id" { value = local.m6id }
output "gpu_flagged" {
  value = length(data.pgnvme_instance_types.g5_only.instance_types) > 0 && alltrue([for t in data.pgnvme_instance_types.g5_only.instance_types : t.special_purpose && contains(t.accelerators, "gpu")])
}
data "pgnvme_instance_types" "current" {
  exclude_previous_generation = true
}

data "pgnvme_instance_types" "i2" {
  families = ["i2"]
}

output "previous_flagged" {
  value = length(data.pgnvme_instance_types.i2.instance_types) > 0 && alltrue([for t in data.pgnvme_instance_types.i2.instance_types : t.previous_generation]) && !anytrue([for t in data.pgnvme_instance_types.current.instance_types : t.previous_generation])
}

output "named_family_kept" {
  value = anytrue([for t in data.pgnvme_instance_types.general.instance_types : t.family == "g5"])
}
output "big_all_fit" {
  value = length(local.big) > 0 && alltrue([for t in local.big :
    t.nvme_total_gib >= 900 && contains(t.architectures, "x86_64") &&
    length(setintersection(t.zone_ids, ["use1-az1", "use1-az2", "use1-az4"])) == 3
  ])
}
output "big_sorted" {
  value = alltrue([for i in range(1, length(local.big)) : local.big[i - 1].nvme_total_gib <= local.big[i].nvme_total_gib])
}
output "no_hdd_only_types" {
  value = alltrue([for t in local.big : !contains(["d2", "d3", "d3en", "h1"], t.family)])
}
output "by_name_range" {
  value = length(local.mid) > 0 && alltrue([for t in local.mid : t.nvme_total_gib >= 100 && t.nvme_total_gib <= 500 && contains(t.zones, "us-east-1a") && contains(t.zones, "us-east-1b")])
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("m6id", knownvalue.ObjectPartial(map[string]knownvalue.Check{
					"instance_type":       knownvalue.StringExact("m6id.4xlarge"),
					"family":              knownvalue.StringExact("m6id"),
					"vcpus":               knownvalue.Int64Exact(16),
					"memory_gib":          knownvalue.Float64Exact(64),
					"nvme_disks":          knownvalue.Int64Exact(1),
					"nvme_disk_gb":        knownvalue.Int64Exact(950),
					"nvme_total_gib":      knownvalue.Float64Exact(884.76), // 950e9 / 2^30
					"nvme_support":        knownvalue.StringExact("required"),
					"architectures":       knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("x86_64")}),
					"accelerators":        knownvalue.ListExact([]knownvalue.Check{}),
					"special_purpose":     knownvalue.Bool(false),
					"previous_generation": knownvalue.Bool(false),
				})),
				outputTrue("big_all_fit"),
				outputTrue("gpu_flagged"),
				outputTrue("named_family_kept"),
				outputTrue("previous_flagged"),
				outputTrue("big_sorted"),
				outputTrue("no_hdd_only_types"),
				outputTrue("by_name_range"),
				statecheck.ExpectKnownValue("data.pgnvme_instance_types.big", tfjsonpath.New("catalog_date"), knownvalue.StringRegexp(dateRegexp)),
				statecheck.ExpectKnownValue("data.pgnvme_instance_types.big", tfjsonpath.New("catalog_origin"), knownvalue.StringRegexp(anyText)),
			},
		}},
	})
}

// A round trip, not a check against AWS: the embedded snapshot was generated from moto (`make catalog`
// against moto 5.2.1, see its catalog_origin), so comparing it with source = "ec2" on moto is circular as
// evidence about EC2. What it does prove is that the two paths agree on the same answers: the live reader
// (paging, InstanceStorageInfo, offerings by zone ID) and the snapshot generator, encoder and decoder turn one
// set of DescribeInstanceTypes/DescribeInstanceTypeOfferings/DescribeAvailabilityZones answers into identical
// instance types and zones. Neither the facts nor the zone offerings are compared with AWS here.
func TestAccInstanceTypesDataSource_snapshotRoundTripsThroughMoto(t *testing.T) {
	motoEnv(t)
	moto := acctest.StartMoto(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: motoProvider(moto) + `
data "pgnvme_instance_types" "embedded" {` + bigNVMeFilters + `}

data "pgnvme_instance_types" "live" {
  source = "ec2"` + bigNVMeFilters + `}

data "pgnvme_instance_types" "live_eu" {
  source         = "ec2"
  region         = "eu-west-1"
  min_vcpus      = 64
}

data "pgnvme_instance_types" "embedded_eu" {
  region         = "eu-west-1"
  min_vcpus      = 64
}

output "same_names" {
  value = length(data.pgnvme_instance_types.live.names) > 0 && data.pgnvme_instance_types.live.names == data.pgnvme_instance_types.embedded.names
}
output "same_facts" {
  value = data.pgnvme_instance_types.live.instance_types == data.pgnvme_instance_types.embedded.instance_types
}
output "same_eu" {
  value = length(data.pgnvme_instance_types.live_eu.names) > 0 && data.pgnvme_instance_types.live_eu.instance_types == data.pgnvme_instance_types.embedded_eu.instance_types
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				outputTrue("same_names"),
				outputTrue("same_facts"),
				outputTrue("same_eu"),
				statecheck.ExpectKnownValue("data.pgnvme_instance_types.live", tfjsonpath.New("catalog_origin"), knownvalue.StringRegexp(regexpOf(`live: EC2 .* us-east-1 via http://127\.0\.0\.1:`))),
			},
		}},
	})
}

// With source = "ec2" and no credentials the error says what is missing; the embedded default needs none.
func TestAccInstanceTypesDataSource_ec2NeedsCredentials(t *testing.T) {
	noCredentials(t)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: `
provider "pgnvme" {
  region = "us-east-1"
  endpoints {
    sts = "http://127.0.0.1:1"
    ec2 = "http://127.0.0.1:1"
  }
}
data "pgnvme_instance_types" "live" {
  source = "ec2"
}
`,
			ExpectError: regexpOf(`(?s)EC2 Catalog Read Failed.*credentials`),
		}},
	})
}

func TestAccInstanceTypesDataSource_badInputs(t *testing.T) {
	runBadInputs(t, []badInput{
		{"unknown source", `data "pgnvme_instance_types" "x" {
  region = "us-east-1"
  source = "pricing"
}`, `(?s)source.*value must be one of`},
		{"malformed region", `data "pgnvme_instance_types" "x" { region = "us-east-1a" }`, `(?s)Invalid Region.*not an AWS region name`},
		{"region not in snapshot", `data "pgnvme_instance_types" "x" { region = "sa-east-1" }`, `(?s)Region Not In Embedded Catalog.*source = "ec2"`},
		{"no region anywhere", `data "pgnvme_instance_types" "x" {}`, `(?s)Missing Region.*AWS_REGION`},
		{"negative min nvme", `data "pgnvme_instance_types" "x" {
  region       = "us-east-1"
  min_nvme_gib = -1
}`, `(?s)min_nvme_gib.*at least 0`},
		{"max below min", `data "pgnvme_instance_types" "x" {
  region       = "us-east-1"
  min_nvme_gib = 1000
  max_nvme_gib = 500
}`, `(?s)Invalid NVMe Range.*max_nvme_gib`},
		{"zero vcpus", `data "pgnvme_instance_types" "x" {
  region    = "us-east-1"
  min_vcpus = 0
}`, `(?s)min_vcpus.*at least 1`},
		{"unknown architecture", `data "pgnvme_instance_types" "x" {
  region        = "us-east-1"
  architectures = ["amd64"]
}`, `(?s)architectures.*value must be one of`},
		{"duplicate zone ids", `data "pgnvme_instance_types" "x" {
  region              = "us-east-1"
  offered_in_zone_ids = ["use1-az1", "use1-az1"]
}`, `(?s)Duplicate List Value.*offered_in_zone_ids`},
		{"unknown zone", `data "pgnvme_instance_types" "x" {
  region           = "us-east-1"
  offered_in_zones = ["us-east-1z"]
}`, `(?s)Invalid Zones.*us-east-1z`},
		{"zone and its id", `data "pgnvme_instance_types" "x" {
  region              = "us-east-1"
  offered_in_zones    = ["us-east-1a"]
  offered_in_zone_ids = ["use1-az6"]
}`, `(?s)Invalid Zones`},
		{"family allowed and excluded", `data "pgnvme_instance_types" "x" {
  region           = "us-east-1"
  families         = ["i4i", "m6id"]
  exclude_families = ["m6id"]
}`, `(?s)Family Both Allowed And Excluded.*m6id`},
		{"family with size", `data "pgnvme_instance_types" "x" {
  region   = "us-east-1"
  families = ["m6id.4xlarge"]
}`, `(?s)families.*instance family`},
		{"bad endpoint", `provider "pgnvme" {
  endpoints { ec2 = "127.0.0.1:5000" }
}
data "pgnvme_instance_types" "x" { region = "us-east-1" }`, `(?s)Invalid Endpoint.*scheme and host`},
	})
}

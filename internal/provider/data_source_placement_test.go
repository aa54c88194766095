package provider_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

func node(name, zone, zoneID string) knownvalue.Check {
	return knownvalue.ObjectExact(map[string]knownvalue.Check{
		"name":    knownvalue.StringExact(name),
		"zone":    knownvalue.StringExact(zone),
		"zone_id": knownvalue.StringExact(zoneID),
	})
}

// m6id.4xlarge is offered in use1-az1, az2, az4, az5 and az6 (embedded catalog): the three lowest zone IDs
// are chosen, deterministically, and the quorum survives the loss of any one of them.
func TestAccPlacementDataSource_threeZones(t *testing.T) {
	noCredentials(t)
	const addr = "data.pgnvme_placement.talk"
	checks := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("primary"), node("node-1", "us-east-1b", "use1-az1")),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("standbys"), knownvalue.ListExact([]knownvalue.Check{
			node("node-2", "us-east-1c", "use1-az2"),
			node("node-3", "us-east-1d", "use1-az4"),
		})),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("distinct_zones"), knownvalue.Int64Exact(3)),
		statecheck.ExpectKnownValue(addr, tfjsonpath.New("survives_zone_loss"), knownvalue.Bool(true)),
		statecheck.ExpectKnownValue("data.pgnvme_placement.named", tfjsonpath.New("nodes"), knownvalue.ListExact([]knownvalue.Check{
			// Zone IDs sorted: use1-az4 (us-east-1d), use1-az5 (us-east-1f), use1-az6 (us-east-1a).
			node("pg-a", "us-east-1d", "use1-az4"),
			node("pg-b", "us-east-1f", "use1-az5"),
			node("pg-c", "us-east-1a", "use1-az6"),
		})),
		outputTrue("distinct"),
	}
	config := `
provider "pgnvme" {
  region = "us-east-1"
}

data "pgnvme_placement" "talk" {
  instance_type = "m6id.4xlarge"
}

data "pgnvme_placement" "named" {
  instance_type = "m6id.4xlarge"
  node_names    = ["pg-a", "pg-b", "pg-c"]
  zones         = ["us-east-1a", "us-east-1d", "us-east-1f"]
}

output "distinct" {
  value = length(distinct([for n in data.pgnvme_placement.talk.nodes : n.zone_id])) == 3
}
`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{Config: config, ConfigStateChecks: checks},
			// Same input, same answer: a second plan sees no change.
			{Config: config, PlanOnly: true},
		},
	})
}

// m8gd.4xlarge is offered in two zones of eu-west-1: three nodes only fit when sharing is allowed, and then
// losing the shared zone is not survivable.
func TestAccPlacementDataSource_sharedZones(t *testing.T) {
	noCredentials(t)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				Config: `
data "pgnvme_placement" "few" {
  region        = "eu-west-1"
  instance_type = "m8gd.4xlarge"
}
`,
				ExpectError: regexpOf(`(?s)Too Few Zones.*m8gd.4xlarge|(?s)Too Few Zones.*allow_shared_zones`),
			},
			{
				Config: `
data "pgnvme_placement" "few" {
  region             = "eu-west-1"
  instance_type      = "m8gd.4xlarge"
  allow_shared_zones = true
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.pgnvme_placement.few", tfjsonpath.New("distinct_zones"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue("data.pgnvme_placement.few", tfjsonpath.New("survives_zone_loss"), knownvalue.Bool(false)),
				},
			},
		},
	})
}

func TestAccPlacementDataSource_badInputs(t *testing.T) {
	runBadInputs(t, []badInput{
		{"type offered in one zone", `data "pgnvme_placement" "x" {
  region        = "us-east-1"
  instance_type = "dl1.24xlarge"
}`, `(?s)Too Few Zones`},
		{"unknown instance type", `data "pgnvme_placement" "x" {
  region        = "us-east-1"
  instance_type = "m6i.4xlarge"
}`, `(?s)Instance Type Not Available.*local SSD`},
		{"malformed instance type", `data "pgnvme_placement" "x" {
  region        = "us-east-1"
  instance_type = "m6id"
}`, `(?s)instance_type.*instance type name`},
		{"node count zero", `data "pgnvme_placement" "x" {
  region        = "us-east-1"
  instance_type = "m6id.4xlarge"
  node_count    = 0
}`, `(?s)node_count.*between 1 and 9`},
		{"names do not match count", `data "pgnvme_placement" "x" {
  region        = "us-east-1"
  instance_type = "m6id.4xlarge"
  node_names    = ["a", "b"]
}`, `(?s)Wrong Number Of Node Names.*node_names`},
		{"duplicate node names", `data "pgnvme_placement" "x" {
  region        = "us-east-1"
  instance_type = "m6id.4xlarge"
  node_names    = ["a", "b", "a"]
}`, `(?s)Duplicate List Value.*node_names`},
		{"empty node name", `data "pgnvme_placement" "x" {
  region        = "us-east-1"
  instance_type = "m6id.4xlarge"
  node_names    = ["a", "b", ""]
}`, `(?s)node_names.*lower-case letter`},
		{"synchronous number too high", `data "pgnvme_placement" "x" {
  region             = "us-east-1"
  instance_type      = "m6id.4xlarge"
  synchronous_number = 3
}`, `(?s)Synchronous Number Too High.*at most 2`},
		{"zones and zone ids", `data "pgnvme_placement" "x" {
  region        = "us-east-1"
  instance_type = "m6id.4xlarge"
  zones         = ["us-east-1a"]
  zone_ids      = ["use1-az1"]
}`, `(?s)Invalid Attribute Combination`},
		{"zones where the type is not offered", `data "pgnvme_placement" "x" {
  region        = "us-east-1"
  instance_type = "m6id.4xlarge"
  zone_ids      = ["use1-az3", "use1-az1", "use1-az2"]
}`, `(?s)Too Few Zones`},
	})
}

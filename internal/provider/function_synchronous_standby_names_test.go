package provider_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

func TestAccSynchronousStandbyNamesFunction_render(t *testing.T) {
	noCredentials(t)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		TerraformVersionChecks:   requireFunctions(),
		Steps: []resource.TestStep{{
			Config: `
output "any"    { value = provider::pgnvme::synchronous_standby_names("any", 1, ["s1", "s2"]) }
output "first"  { value = provider::pgnvme::synchronous_standby_names("first", 2, ["a", "b", "c"]) }
output "quoted" { value = provider::pgnvme::synchronous_standby_names("any", 1, ["Standby A", "it\"s", "any"]) }
output "star"   { value = provider::pgnvme::synchronous_standby_names("any", 1, ["*"]) }
output "round_trip" {
  value = provider::pgnvme::parse_synchronous_standby_names(
    provider::pgnvme::synchronous_standby_names("any", 1, ["Standby A", "it\"s"])
  ).names == tolist(["Standby A", "it\"s"])
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("any", knownvalue.StringExact("ANY 1 (s1, s2)")),
				statecheck.ExpectKnownOutputValue("first", knownvalue.StringExact("FIRST 2 (a, b, c)")),
				statecheck.ExpectKnownOutputValue("quoted", knownvalue.StringExact(`ANY 1 ("Standby A", "it""s", "any")`)),
				statecheck.ExpectKnownOutputValue("star", knownvalue.StringExact("ANY 1 (*)")),
				outputTrue("round_trip"),
			},
		}},
	})
}

func TestAccParseSynchronousStandbyNamesFunction_forms(t *testing.T) {
	noCredentials(t)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		TerraformVersionChecks:   requireFunctions(),
		Steps: []resource.TestStep{{
			Config: `
output "quorum" { value = provider::pgnvme::parse_synchronous_standby_names("any 1 (s1, \"S 2\")") }
output "legacy" { value = provider::pgnvme::parse_synchronous_standby_names("2 (a, b, c)") }
output "bare"   { value = provider::pgnvme::parse_synchronous_standby_names("s1, s2") }
output "async"  { value = provider::pgnvme::parse_synchronous_standby_names("") }
`,
			ConfigStateChecks: []statecheck.StateCheck{
				parsedNames("quorum", "any", 1, "s1", "S 2"),
				parsedNames("legacy", "first", 2, "a", "b", "c"),
				parsedNames("bare", "first", 1, "s1", "s2"),
				parsedNames("async", "", 0),
			},
		}},
	})
}

func TestAccSynchronousStandbyNamesFunction_badInputs(t *testing.T) {
	runBadInputs(t, []badInput{
		{"number zero", `output "x" { value = provider::pgnvme::synchronous_standby_names("any", 0, ["s1"]) }`, `(?s)number.*at least 1`},
		{"number above names", `output "x" { value = provider::pgnvme::synchronous_standby_names("any", 3, ["s1", "s2"]) }`, `(?s)number.*names`},
		{"empty names", `output "x" { value = provider::pgnvme::synchronous_standby_names("any", 1, []) }`, `(?s)name`},
		{"empty name", `output "x" { value = provider::pgnvme::synchronous_standby_names("any", 1, ["s1", ""]) }`, `(?s)empty`},
		{"duplicate names", `output "x" { value = provider::pgnvme::synchronous_standby_names("any", 1, ["s1", "S1"]) }`, `(?s)same standby`},
		{"unknown method", `output "x" { value = provider::pgnvme::synchronous_standby_names("some", 1, ["s1"]) }`, `(?s)method`},
		{"malformed value", `output "x" { value = provider::pgnvme::parse_synchronous_standby_names("ANY (s1)") }`, `(?s)Invalid function argument`},
		{"pgbench scale of zero GiB", `output "x" { value = provider::pgnvme::pgbench_scale(0) }`, `(?s)gib must be greater than 0`},
		{"pgbench size of scale zero", `output "x" { value = provider::pgnvme::pgbench_size_gib(0) }`, `(?s)scale must be at least 1`},
	})
}

// parsedNames checks that output is parse_synchronous_standby_names's object of method, number and names.
func parsedNames(output, method string, number int64, names ...string) statecheck.StateCheck {
	checks := make([]knownvalue.Check, len(names))
	for i, n := range names {
		checks[i] = knownvalue.StringExact(n)
	}
	return statecheck.ExpectKnownOutputValue(output, knownvalue.ObjectExact(map[string]knownvalue.Check{
		"method": knownvalue.StringExact(method),
		"number": knownvalue.Int64Exact(number),
		"names":  knownvalue.ListExact(checks),
	}))
}

package provider_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

func TestAccPgbenchScaleFunctions_roundTrip(t *testing.T) {
	noCredentials(t)
	scale := pgbench.ScaleForGiB(482)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		TerraformVersionChecks:   requireFunctions(),
		Steps: []resource.TestStep{{
			Config: `
output "scale" { value = provider::pgnvme::pgbench_scale(482) }
output "covers" { value = provider::pgnvme::pgbench_size_gib(provider::pgnvme::pgbench_scale(482)) >= 482 }
output "tight"  { value = provider::pgnvme::pgbench_size_gib(provider::pgnvme::pgbench_scale(482) - 1) < 482 }
output "size"   { value = provider::pgnvme::pgbench_size_gib(1000) }
`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownOutputValue("scale", knownvalue.Int64Exact(int64(scale))),
				outputTrue("covers"),
				outputTrue("tight"),
				statecheck.ExpectKnownOutputValue("size", knownvalue.Float64Exact(roundTo(float64(1000*pgbench.BytesPerScale)/(1<<30), 3))),
			},
		}},
	})
	t.Logf("482 GiB = pgbench scale %d", scale)
}

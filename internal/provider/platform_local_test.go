package provider_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/provider"
)

// A provider built for macOS, Windows or FreeBSD has no local platform: a configuration with a local block
// fails at plan saying the platform needs Linux and what to do instead.
func TestCluster_localNeedsLinux(t *testing.T) {
	for goos, name := range map[string]string{"darwin": `macOS\s+\(darwin\)`, "windows": `Windows\s+\(windows\)`, "freebsd": `FreeBSD\s+\(freebsd\)`} {
		t.Run(goos, func(t *testing.T) {
			platforms := map[cluster.Platform]provider.ClusterPlatform{cluster.PlatformLocal: provider.NewNoLocalPlatform(goos)}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: map[string]func() (tfprotov6.ProviderServer, error){
					"pgnvme": providerserver.NewProtocol6WithError(provider.NewWithPlatforms("test", platforms)()),
				},
				Steps: []resource.TestStep{{
					Config: `
resource "pgnvme_cluster" "demo" {
  name = "tf-acc-nolocal"
  local {
    data_dir = "/var/lib/pgnvme/tf-acc-nolocal"
  }
}
`,
					ExpectError: regexpOf(`(?s)Error: Local Platform Needs Linux.*pgnvme_cluster\.demo.*runs on\s+` + name + `.*Run\s+Terraform\s+on\s+Linux.*aws\s+block`),
				}},
			})
		})
	}
}

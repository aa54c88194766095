package provider_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

const bootstrapAddr = "data.pgnvme_node_bootstrap.n"

func nodeBootstrapConfig(body string) string {
	return fmt.Sprintf(`
data "pgnvme_node_bootstrap" "n" {
  name          = "orders"
  nodes = [
    { name = "node-1", private_ip = "10.0.1.10", zone = "eu-west-1a" },
    { name = "node-2", private_ip = "10.0.2.10", zone = "eu-west-1b" },
    { name = "node-3", private_ip = "10.0.3.10", zone = "eu-west-1c" },
  ]
  region        = "eu-west-1"
  allowed_cidrs = ["10.0.0.0/16"]
%s
}
`, body)
}

func TestAccNodeBootstrapDataSource_basic(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: nodeBootstrapConfig(`
  node          = "node-2"
  instance_type = "m6id.4xlarge"
  parameters    = { shared_buffers = "16GB" }
  archive {
    walg_env = { WALG_S3_PREFIX = "s3://orders-wal/orders", AWS_REGION = "eu-west-1" }
  }
`),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(bootstrapAddr, tfjsonpath.New("etcd_member"), knownvalue.Bool(true)),
				statecheck.ExpectKnownValue(bootstrapAddr, tfjsonpath.New("ssm_parameter_names"), knownvalue.MapExact(map[string]knownvalue.Check{
					"superuser":   knownvalue.StringExact("/pgnvme/orders/superuser-password"),
					"replication": knownvalue.StringExact("/pgnvme/orders/replication-password"),
					"restapi":     knownvalue.StringExact("/pgnvme/orders/restapi-password"),
				})),
			},
			Check: func(s *terraform.State) error {
				attrs := s.RootModule().Resources[bootstrapAddr].Primary.Attributes
				ud := attrs["user_data"]
				if !strings.HasPrefix(ud, "#cloud-config\n") {
					return fmt.Errorf("user_data does not start with #cloud-config: %.40q", ud)
				}
				for _, want := range []string{"10.0.2.10", "NVMe_Instance_Storage", "s3://orders-wal/orders", "/pgnvme/orders/superuser-password"} {
					if !strings.Contains(ud, want) {
						return fmt.Errorf("user_data does not mention %q", want)
					}
				}
				y := attrs["patroni_yaml"]
				for _, want := range []string{`synchronous_mode: "quorum"`, "synchronous_node_count: 1", "synchronous_mode_strict: true", `scope: "orders"`} {
					if !strings.Contains(y, want) {
						return fmt.Errorf("patroni_yaml lacks %q:\n%s", want, y)
					}
				}
				gz, err := base64.StdEncoding.DecodeString(attrs["user_data_base64gzip"])
				if err != nil {
					return err
				}
				if len(gz) > 16384 {
					return fmt.Errorf("the compressed user-data is %d bytes, above EC2's 16384", len(gz))
				}
				r, err := gzip.NewReader(bytes.NewReader(gz))
				if err != nil {
					return err
				}
				plain, err := io.ReadAll(r)
				if err != nil || string(plain) != ud {
					return fmt.Errorf("user_data_base64gzip is not user_data compressed (%w)", err)
				}
				return nil
			},
		}},
	})
}

func TestAccNodeBootstrapDataSource_badInputs(t *testing.T) {
	c := nodeBootstrapConfig
	ok := "  node = \"node-1\"\n  instance_type = \"m6id.4xlarge\"\n"
	runBadInputs(t, []badInput{
		{"unknown major", c(ok + "  postgres_major = 12\n"), `(?s)postgres_major.*between 13 and 18`},
		{"type without instance store", c("  node = \"node-1\"\n  instance_type = \"m6i.large\"\n"), `(?s)Instance Type Without Instance Store.*m6i.large`},
		{"node not in nodes", c("  node = \"node-9\"\n  instance_type = \"m6id.4xlarge\"\n"), `(?s)Unknown Node.*node-9`},
		{"secret as a value", c(ok + "  archive {\n    walg_env = { WALG_S3_PREFIX = \"s3://b/p\", AWS_SECRET_ACCESS_KEY = \"abc\" }\n  }\n"), `(?s)Node Bootstrap Not Rendered.*AWS_SECRET_ACCESS_KEY`},
		{"first method", c(ok + "  synchronous {\n    method = \"first\"\n  }\n"), `(?s)synchronous.method`},
		{"number above standbys", c(ok + "  synchronous {\n    number = 3\n  }\n"), `(?s)Node Bootstrap Not Rendered.*more than the cluster's 2 standbys`},
		{"not an IPv4 address", strings.Replace(c(ok), "10.0.3.10", "10.0.3", 1), `(?s)private_ip.*IPv4`},
		{"node outside allowed_cidrs", strings.Replace(c(ok), "10.0.3.10", "192.168.3.10", 1), `(?s)Node Bootstrap Not Rendered.*192.168.3.10`},
		{"duplicate node names", strings.Replace(c(ok), "node-3", "node-2", 1), `(?s)Node Bootstrap Not Rendered.*node-2`},
		{"ttl too short for loop_wait", c(ok + "  patroni {\n    ttl           = 20\n    loop_wait     = 10\n    retry_timeout = 10\n  }\n"), `(?s)Node Bootstrap Not Rendered.*loop_wait`},
	})
}

// A misspelt or unknown argument in synchronous, archive or patroni is an error at validate that names it.
// They are blocks: Terraform drops an unknown key of a nested attribute's object before the provider sees it
// (hashicorp/terraform#33570), so `patroni = { tll = 60 }` rendered Patroni's default ttl. A misspelt key of a
// nodes element is refused too: each of its three keys is required, so the correct one is missing.
func TestNodeBootstrapDataSource_unknownArgumentInBlock(t *testing.T) {
	c := nodeBootstrapConfig
	ok := "  node = \"node-1\"\n  instance_type = \"m6id.4xlarge\"\n"
	notExpected := func(name string) string {
		return `(?s)Unsupported argument.*An argument named "` + name + `" is not expected here`
	}
	runBadInputs(t, []badInput{
		{"synchronous", c(ok + "  synchronous {\n    numbr = 2\n  }\n"), notExpected("numbr")},
		{"archive", c(ok + "  archive {\n    walg_envs = { WALG_S3_PREFIX = \"s3://b/p\" }\n  }\n"), notExpected("walg_envs")},
		{"patroni", c(ok + "  patroni {\n    tll = 60\n  }\n"), notExpected("tll")},
		{"patroni as an attribute", c(ok + "  patroni = { ttl = 60 }\n"), `(?s)Unsupported argument.*An argument named "patroni" is not expected here.*block of type "patroni"`},
		{"nodes", strings.Replace(c(ok), "private_ip = \"10.0.3.10\"", "privat_ip = \"10.0.3.10\"", 1), `(?s)Inappropriate value for attribute "nodes": element 2: attribute "private_ip"\s+is required`},
	})
}

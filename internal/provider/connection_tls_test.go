package provider_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

// The connection blocks' TLS files through Terraform, against a server that takes TLS 1.3 only and
// clients by certificate (acctest.StartTLSPostgres): pgnvme_pgbench (its own session, and the pgbench CLI
// it runs, which gets the files as PGSSLROOTCERT, PGSSLCERT and PGSSLKEY) and pgnvme_replication_status
// connect with verify-full; without the client certificate the server refuses; a certificate without its
// key is refused at plan.
func TestAccConnectionTLS(t *testing.T) {
	tp := acctest.StartTLSPostgres(t)
	t.Setenv("PGSSLROOTCERT", "")
	t.Setenv("PGSSLCERT", "")
	t.Setenv("PGSSLKEY", "")
	server := func(files string) string {
		return fmt.Sprintf("server {\n    host = \"127.0.0.1\"\n    port = %d\n    sslmode = \"verify-full\"\n    sslrootcert = %q\n%s  }\n",
			tp.Server.Port(), tp.CAFile, files)
	}
	full := fmt.Sprintf("    sslcert = %q\n    sslkey = %q\n", tp.ClientCert, tp.ClientKey)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				Config: fmt.Sprintf(`
data "pgnvme_pgbench" "tls" {
  %s
  builtin            = "select-only"
  initialize         = true
  scale              = 1
  clients            = 1
  duration_seconds   = 2
  sample_wait_events = false
}

data "pgnvme_replication_status" "tls" {
  %s
}
`, server(full), server(full)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.pgnvme_pgbench.tls", tfjsonpath.New("tps"), knownvalue.Float64Func(func(v float64) error {
						if v <= 0 {
							return fmt.Errorf("tps %v", v)
						}
						return nil
					})),
					statecheck.ExpectKnownValue("data.pgnvme_replication_status.tls", tfjsonpath.New("is_primary"), knownvalue.Bool(true)),
				},
			},
			{
				Config:      "data \"pgnvme_replication_status\" \"tls\" {\n  " + server("") + "}\n",
				ExpectError: regexpOf(`(?s)Cannot Connect To PostgreSQL.*certificate`),
			},
			{
				Config:      "data \"pgnvme_replication_status\" \"tls\" {\n  " + server(fmt.Sprintf("    sslcert = %q\n", tp.ClientCert)) + "}\n",
				ExpectError: regexpOf(`(?s)sslcert and sslkey`),
			},
		},
	})
}

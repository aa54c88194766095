//go:build !unix

package provider

import (
	"context"
	"runtime"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
)

// pgbenchRunner is empty where pgbench does not run (Configure still hands it to the data source).
type pgbenchRunner struct{}

func newPgbenchRunner() *pgbenchRunner { return &pgbenchRunner{} }

// Read fails where internal/localnode, which runs pgbench, does not build (Windows): it starts and stops
// processes with Unix calls.
func (d *pgbenchDataSource) Read(_ context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	resp.Diagnostics.AddError("pgbench Needs Linux, macOS or FreeBSD",
		"pgnvme_pgbench runs pgbench on the machine that runs Terraform through the provider's process code, which is built for "+
			"Unix systems only, and this provider runs on "+runtime.GOOS+". Run Terraform on Linux, macOS or FreeBSD for this data "+
			"source, or run pgbench against the server yourself.")
}

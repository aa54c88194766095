// Command terraform-provider-pgnvme serves the pgnvme Terraform provider: PostgreSQL on local NVMe
// instance storage, planned, placed, replicated, archived and benchmarked as code.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/latencydisk"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/provider"
)

// version is set by the release build (goreleaser: -X main.version={{.Version}}).
var version = "dev"

func main() {
	// The provider's own binary is also each local node's latency layer (local.limits' latencies): a
	// detached process that outlives the plugin, started with latencydisk.ServerArg first.
	latencydisk.MainIfServer()
	var debug bool
	flag.BoolVar(&debug, "debug", false, "set to true to run the provider with support for debuggers like delve")
	flag.Parse()

	opts := providerserver.ServeOpts{
		Address: "registry.terraform.io/pgnvme/pgnvme",
		Debug:   debug,
	}
	if err := providerserver.Serve(context.Background(), provider.New(version), opts); err != nil {
		log.Fatal(err.Error())
	}
}

// Command terraform-provider-pgnvme serves the pgnvme Terraform provider: PostgreSQL on local NVMe
// instance storage, planned, placed, replicated, archived and benchmarked as code.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/provider"
)

// version is set by the release build (goreleaser: -X main.version={{.Version}}).
var version = "dev"

func main() {
	runIfLatencyLayer() // the provider's binary is also a local node's latency layer (main_linux.go)
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

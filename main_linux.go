package main

import "github.com/pgnvme/terraform-provider-pgnvme/internal/latencydisk"

// runIfLatencyLayer serves as a local node's latency layer (local.limits' latencies) and exits when the
// program was started as one (latencydisk.ServerArg first): the provider's own binary is also that
// detached process, which outlives the plugin. Otherwise it returns at once.
func runIfLatencyLayer() { latencydisk.MainIfServer() }

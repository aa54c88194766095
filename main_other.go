//go:build !linux

package main

// runIfLatencyLayer returns at once: the latency layer belongs to the local platform, which needs Linux
// (main_linux.go), so nothing here starts one.
func runIfLatencyLayer() {}

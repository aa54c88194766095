package localspec

import "github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"

// osNames are the names users know the other release systems by.
var osNames = map[string]string{"darwin": "macOS", "windows": "Windows", "freebsd": "FreeBSD"}

// SupportedOn is nil when the local platform runs on goos (a runtime.GOOS value), and otherwise the error,
// at the local block, that says it needs Linux and what to do instead. It runs on Linux only: its nodes are
// PostgreSQL processes on the machine that runs Terraform, found and checked through /proc, limited with
// cgroups, given their own devices as loop devices and their latencies through a FUSE layer, so the provider
// builds it (internal/localcluster) for Linux only. Elsewhere the provider answers every use of the local
// platform with this error: pgnvme_cluster's local block at plan, and pgnvme_restore_drill, whose scratch
// node the local platform runs.
func SupportedOn(goos string) *cluster.FieldError {
	if goos == "linux" {
		return nil
	}
	name := goos
	if n, ok := osNames[goos]; ok {
		name = n + " (" + goos + ")"
	}
	return cluster.Errorf([]string{"local"}, "Local Platform Needs Linux",
		"The local platform (pgnvme_cluster's local block, and the scratch node of pgnvme_restore_drill) runs PostgreSQL as processes "+
			"on the machine that runs Terraform and manages them through Linux interfaces (/proc, cgroups, loop devices, FUSE); "+
			"this provider runs on %s, so it has no local platform. Run Terraform on Linux to use it, or run the cluster on EC2: an aws "+
			"block instead of local works from any system.", name)
}

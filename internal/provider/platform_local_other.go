//go:build !linux

package provider

import (
	"runtime"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
)

// newLocalPlatform is pgnvme_cluster's local platform where there is none: it needs Linux
// (platform_local_linux.go), and here every use of it fails with localspec.SupportedOn's error.
func newLocalPlatform() ClusterPlatform {
	return noLocalPlatform{why: localspec.SupportedOn(runtime.GOOS)}
}

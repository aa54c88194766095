package provider

import "github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"

// NewNoLocalPlatform is the local platform a provider built for goos has when goos is not Linux (what
// platform_local_other.go hands in there), for tests on this machine.
func NewNoLocalPlatform(goos string) ClusterPlatform {
	return noLocalPlatform{why: localspec.SupportedOn(goos)}
}

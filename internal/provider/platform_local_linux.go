package provider

import "github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"

// newLocalPlatform is pgnvme_cluster's local platform: on Linux, the one internal/localcluster implements
// (platform_local_other.go is its answer elsewhere).
func newLocalPlatform() ClusterPlatform { return localcluster.NewPlatform() }

package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
)

// The types read from pgnvme_cluster's schema cover every block, and every attribute type in them has a
// null and an unknown value (valueOf panics on a type it does not know: a new attribute type must be
// added there, and this test says so before a user could see it).
func TestClusterTypesFromSchema(t *testing.T) {
	for name, ts := range map[string]map[string]attr.Type{
		"nodes": clusterNodeAttrTypes, "node": clusterNodeInputAttrTypes, "synchronous": clusterSynchronousAttrTypes,
		"archive": clusterArchiveAttrTypes, "local": clusterLocalAttrTypes, "local.limits": clusterLimitsAttrTypes,
		"primary": clusterPrimaryAttrTypes, "aws": clusterAWSAttrTypes, "aws.patroni": clusterAWSPatroniAttrTypes,
	} {
		if len(ts) == 0 {
			t.Errorf("%s: no attribute types", name)
		}
		for attrName, at := range ts {
			if n, u := nullOf(at), unknownOf(at); !n.IsNull() || !u.IsUnknown() || !n.Type(context.Background()).Equal(at) {
				t.Errorf("%s.%s: null %v, unknown %v of %s", name, attrName, n, u, at)
			}
		}
	}
	for _, out := range []string{"instance_ids", "private_ips", "load_balancer_dns_name", "pending_restart"} {
		if !clusterAWSOutputs[out] {
			t.Errorf("aws.%s is not among the aws block's outputs %v", out, clusterAWSOutputs)
		}
	}
	for _, in := range []string{"instance_type", "ami_id", "deletion_protection", "patroni"} {
		if clusterAWSOutputs[in] {
			t.Errorf("aws.%s, an input, is among the outputs", in)
		}
	}
	if !clusterLocalOutputs["data_dirs"] || !clusterLocalOutputs["durability_watcher_running"] || clusterLocalOutputs["data_dir"] {
		t.Errorf("local outputs %v", clusterLocalOutputs)
	}
}

package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// The types of pgnvme_cluster's blocks and nested attributes, read from its schema: written once there.
var (
	clusterTypes                  = clusterSchema().Type().(types.ObjectType).AttrTypes
	clusterNodeAttrTypes          = elemAttrTypes(clusterTypes["nodes"])
	clusterNodeInputAttrTypes     = elemAttrTypes(clusterTypes["node"])
	clusterSynchronousAttrTypes   = objectAttrTypes(clusterTypes["synchronous"])
	clusterArchiveAttrTypes       = objectAttrTypes(clusterTypes["archive"])
	clusterRestoreAttrTypes       = objectAttrTypes(clusterTypes["restore"])
	clusterRestoredAttrTypes      = objectAttrTypes(clusterTypes["restored"])
	clusterLocalAttrTypes         = objectAttrTypes(clusterTypes["local"])
	clusterLimitsAttrTypes        = objectAttrTypes(clusterLocalAttrTypes["limits"])
	clusterPrimaryAttrTypes       = objectAttrTypes(clusterTypes["primary"])
	clusterAWSAttrTypes           = objectAttrTypes(clusterTypes["aws"])
	clusterAWSPatroniAttrTypes    = objectAttrTypes(clusterAWSAttrTypes["patroni"])
	clusterTLSAttrTypes           = objectAttrTypes(clusterTypes["tls"])
	clusterArchiveStatusAttrTypes = objectAttrTypes(clusterTypes["archive_status"])
	// clusterAWSOutputs are the aws block's outputs (computed, not configurable): the platform reports them.
	clusterAWSOutputs = outputNames(clusterAWSSchema().Attributes)
	// clusterTLSOutputs are the tls block's outputs.
	clusterTLSOutputs = outputNames(clusterTLSSchema().Attributes)
	// clusterLocalOutputs are the local block's outputs.
	clusterLocalOutputs = outputNames(clusterSchema().Blocks["local"].(schema.SingleNestedBlock).Attributes)
)

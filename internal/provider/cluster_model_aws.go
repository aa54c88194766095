package provider

import (
	"context"
	"fmt"
	"maps"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
)

// Conversions of pgnvme_cluster's aws block; no decisions here.

type awsModel struct {
	Region             types.String `tfsdk:"region"`
	InstanceType       types.String `tfsdk:"instance_type"`
	AMIID              types.String `tfsdk:"ami_id"`
	AMIParameter       types.String `tfsdk:"ami_ssm_parameter"`
	SubnetIDs          types.Map    `tfsdk:"subnet_ids"`
	SecurityGroupIDs   types.List   `tfsdk:"security_group_ids"`
	AllowedCIDRs       types.List   `tfsdk:"allowed_cidrs"`
	IAMInstanceProfile types.String `tfsdk:"iam_instance_profile"`
	NodePolicyJSON     types.String `tfsdk:"node_policy_json"`
	KeyName            types.String `tfsdk:"key_name"`
	PlacementGroup     types.String `tfsdk:"placement_group"`
	RootVolumeGiB      types.Int64  `tfsdk:"root_volume_gib"`
	MetadataHopLimit   types.Int64  `tfsdk:"metadata_hop_limit"`
	Patroni            types.Object `tfsdk:"patroni"`
	APIAddress         types.String `tfsdk:"api_address"`
	Tags               types.Map    `tfsdk:"tags"`
	DeletionProtection types.Bool   `tfsdk:"deletion_protection"`
	InstanceIDs        types.Map    `tfsdk:"instance_ids"`
	NetworkInterfaces  types.Map    `tfsdk:"network_interface_ids"`
	PrivateIPs         types.Map    `tfsdk:"private_ips"`
	SecurityGroupID    types.String `tfsdk:"security_group_id"`
	InstanceProfile    types.String `tfsdk:"instance_profile"`
	SSMParameterPath   types.String `tfsdk:"ssm_parameter_path"`
	LoadBalancer       types.Bool   `tfsdk:"load_balancer"`
	LoadBalancerDNS    types.String `tfsdk:"load_balancer_dns_name"`
	ConfigApplied      types.Bool   `tfsdk:"configuration_applied"`
	PendingRestart     types.List   `tfsdk:"pending_restart"`
}

// awsInput is the aws block as the neutral input; ok is false while an input is unknown. The computed
// ami_id is "" while unknown (the platform resolves it).
func awsInput(ctx context.Context, v types.Object, diags *diag.Diagnostics) (*awsspec.Input, bool) {
	if v.IsUnknown() {
		return nil, false
	}
	if v.IsNull() {
		return nil, true
	}
	var m awsModel
	diags.Append(v.As(ctx, &m, basetypes.ObjectAsOptions{UnhandledUnknownAsEmpty: true})...)
	for name, u := range v.Attributes() {
		if hasUnknown(u) && !clusterAWSOutputs[name] && name != "ami_id" { // ami_id: "" while unknown, the platform resolves it
			return nil, false
		}
	}
	if m.InstanceType.IsNull() || m.SubnetIDs.IsNull() { // required: their validators say so (a block's attributes cannot be Required)
		return nil, false
	}
	in := &awsspec.Input{}
	expand(ctx, m, in, diags)
	return in, true
}

// setAWSStatus records the platform's own outputs in m's aws block; with st nil they are unknown (a plan
// that creates objects).
func setAWSStatus(ctx context.Context, m *clusterModel, st *awsspec.Status, diags *diag.Diagnostics) {
	if !known(m.AWS) {
		return
	}
	attrs := m.AWS.Attributes()
	str := func(v string) types.String {
		if v == "" {
			return types.StringNull()
		}
		return types.StringValue(v)
	}
	if st == nil {
		for k := range clusterAWSOutputs {
			attrs[k] = unknownOf(clusterAWSAttrTypes[k])
		}
	} else {
		attrs["instance_ids"] = stringMap(ctx, orEmpty(st.InstanceIDs), diags)
		attrs["network_interface_ids"] = stringMap(ctx, orEmpty(st.NetworkInterfaceID), diags)
		attrs["private_ips"] = stringMap(ctx, orEmpty(st.PrivateIPs), diags)
		attrs["security_group_id"], attrs["instance_profile"], attrs["ssm_parameter_path"] = str(st.SecurityGroupID), str(st.InstanceProfile), str(st.SSMPath)
		attrs["load_balancer_dns_name"] = str(st.LoadBalancerDNSName)
		attrs["configuration_applied"] = types.BoolNull()
		if st.ConfigKnown {
			attrs["configuration_applied"] = types.BoolValue(st.ConfigApplied)
		}
		pending, d := types.ListValueFrom(ctx, types.StringType, append([]string{}, st.PendingRestart...))
		diags.Append(d...)
		attrs["pending_restart"] = pending
		if st.AMIID != "" && !known(attrs["ami_id"]) {
			attrs["ami_id"] = types.StringValue(st.AMIID)
		}
	}
	var d diag.Diagnostics
	m.AWS, d = types.ObjectValue(clusterAWSAttrTypes, attrs)
	diags.Append(d...)
}

// awsObject is an imported cluster's aws block (its inputs; the outputs follow from the first refresh).
func awsObject(ctx context.Context, a *awsspec.Block, diags *diag.Diagnostics) types.Object {
	inputs := maps.Clone(clusterAWSAttrTypes)
	maps.DeleteFunc(inputs, func(name string, _ attr.Type) bool { return clusterAWSOutputs[name] })
	attrs := nullAttrs(clusterAWSAttrTypes)
	maps.Copy(attrs, flatten(ctx, a, inputs, map[string]string{"ami_ssm_parameter": "AMIParameter"}, diags))
	out, d := types.ObjectValue(clusterAWSAttrTypes, attrs)
	diags.Append(d...)
	return out
}

// orEmpty is v, or an empty map for nil (a known, empty map value rather than null).
func orEmpty(v map[string]string) map[string]string {
	if v == nil {
		return map[string]string{}
	}
	return v
}

// planAWS plans the aws block's outputs: the AMI the platform resolved, and what stays as recorded
// (interfaces, addresses, created groups and profile) unless the apply makes it; instance IDs are unknown
// while the apply replaces nodes.
func planAWS(ctx context.Context, plan *clusterModel, state clusterModel, planned cluster.Plan, exists, reconfigures bool, diags *diag.Diagnostics) {
	if !known(plan.AWS) {
		return
	}
	attrs := plan.AWS.Attributes()
	if !exists || !known(state.AWS) {
		setAWSStatus(ctx, plan, nil, diags)
		attrs = plan.AWS.Attributes()
	} else {
		old := state.AWS.Attributes()
		for k := range clusterAWSOutputs {
			attrs[k] = old[k]
		}
		lb, _ := attrs["load_balancer"].(types.Bool)
		switch {
		case !lb.ValueBool():
			attrs["load_balancer_dns_name"] = types.StringNull()
		case !known(old["load_balancer_dns_name"]):
			attrs["load_balancer_dns_name"] = types.StringUnknown()
		}
		if planned.Replaces {
			attrs["instance_ids"] = types.MapUnknown(types.StringType)
		}
		if planned.Membership {
			attrs["network_interface_ids"], attrs["private_ips"] = types.MapUnknown(types.StringType), types.MapUnknown(types.StringType)
		}
		if reconfigures { // cluster.Reconfigures
			// Configured and restarted by the apply: what Patroni then reports.
			attrs["configuration_applied"], attrs["pending_restart"] = types.BoolUnknown(), types.ListUnknown(types.StringType)
		}
	}
	if as := awsspec.StatusOf(planned.Platform); as != nil {
		if !known(attrs["ami_id"]) && as.AMIID != "" {
			attrs["ami_id"] = types.StringValue(as.AMIID)
		}
		if as.SSMPath != "" {
			attrs["ssm_parameter_path"] = types.StringValue(as.SSMPath)
		}
	}
	var d diag.Diagnostics
	plan.AWS, d = types.ObjectValue(clusterAWSAttrTypes, attrs)
	diags.Append(d...)
}

// asGiven leaves what the configuration did not set as it left it (null), so that an imported cluster
// whose configuration relies on defaults plans no change: the configuration as given is what the platform
// kept (the aws platform's spec parameter).
func asGiven(m *clusterModel, g cluster.Input, diags *diag.Diagnostics) {
	var d diag.Diagnostics
	if g.PostgresMajor > 0 {
		m.PostgresMajor = types.Int64Value(int64(g.PostgresMajor))
	}
	if g.Nodes == nil {
		m.Node = types.ListNull(types.ObjectType{AttrTypes: clusterNodeInputAttrTypes})
		if g.NodeCount != nil {
			m.NodeCount = types.Int64Value(int64(*g.NodeCount))
		}
	}
	str := func(v string) types.String {
		if v == "" {
			return types.StringNull()
		}
		return types.StringValue(v)
	}
	if sy := g.Synchronous; sy == (cluster.SynchronousInput{}) {
		m.Synchronous = types.ObjectNull(clusterSynchronousAttrTypes)
	} else {
		number := types.Int64Null()
		if sy.Number != nil {
			number = types.Int64Value(int64(*sy.Number))
		}
		m.Synchronous, d = types.ObjectValue(clusterSynchronousAttrTypes, map[string]attr.Value{
			"method": str(sy.Method), "number": number, "data_durability": str(sy.DataDurability), "commit": str(sy.Commit),
		})
		diags.Append(d...)
	}
	if g.Archive != nil && g.Archive.BackupOnCreate == nil && known(m.Archive) {
		attrs := m.Archive.Attributes()
		attrs["backup_on_create"] = types.BoolNull()
		m.Archive, d = types.ObjectValue(clusterArchiveAttrTypes, attrs)
		diags.Append(d...)
	}
	if ga := awsspec.InputOf(g); ga != nil && known(m.AWS) {
		attrs := m.AWS.Attributes()
		attrs["ami_id"] = str(ga.AMIID) // computed: the first refresh records the image the nodes run
		attrs["metadata_hop_limit"] = types.Int64Null()
		if ga.MetadataHopLimit != 0 {
			attrs["metadata_hop_limit"] = types.Int64Value(int64(ga.MetadataHopLimit))
		}
		m.AWS, d = types.ObjectValue(clusterAWSAttrTypes, attrs)
		diags.Append(d...)
	}
}

// nullAttrs is every attribute of types, null.
func nullAttrs(ts map[string]attr.Type) map[string]attr.Value {
	out := make(map[string]attr.Value, len(ts))
	for name, t := range ts {
		out[name] = nullOf(t)
	}
	return out
}

// nullOf and unknownOf are the null and the unknown value of t (the types pgnvme_cluster's blocks use).
func nullOf(t attr.Type) attr.Value { return valueOf(t, false) }

func unknownOf(t attr.Type) attr.Value { return valueOf(t, true) }

func valueOf(t attr.Type, unknown bool) attr.Value {
	switch t := t.(type) {
	case types.MapType:
		if unknown {
			return types.MapUnknown(t.ElemType)
		}
		return types.MapNull(t.ElemType)
	case types.ListType:
		if unknown {
			return types.ListUnknown(t.ElemType)
		}
		return types.ListNull(t.ElemType)
	case types.ObjectType:
		if unknown {
			return types.ObjectUnknown(t.AttrTypes)
		}
		return types.ObjectNull(t.AttrTypes)
	}
	switch t {
	case types.StringType:
		if unknown {
			return types.StringUnknown()
		}
		return types.StringNull()
	case types.BoolType:
		if unknown {
			return types.BoolUnknown()
		}
		return types.BoolNull()
	case types.Int64Type:
		if unknown {
			return types.Int64Unknown()
		}
		return types.Int64Null()
	case types.Float64Type:
		if unknown {
			return types.Float64Unknown()
		}
		return types.Float64Null()
	}
	panic(fmt.Sprintf("no null or unknown value for %s: add its type here (a provider bug)", t))
}

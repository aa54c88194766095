package provider

import (
	"context"
	"maps"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
)

// Conversions between pgnvme_cluster's local block and localspec.Block (cluster_model_aws.go is the aws
// block's).

type localModel struct {
	DataDir        types.String `tfsdk:"data_dir"`
	PortBase       types.Int64  `tfsdk:"port_base"`
	RunAsUser      types.String `tfsdk:"run_as_user"`
	Limits         types.Object `tfsdk:"limits"`
	DataDirs       types.Map    `tfsdk:"data_dirs"`
	WatcherRunning types.Bool   `tfsdk:"durability_watcher_running"`
	BackupsRunning types.Bool   `tfsdk:"backup_scheduler_running"`
	Cgroups        types.Map    `tfsdk:"cgroups"`
	BlockDevices   types.Map    `tfsdk:"block_devices"`
}

// localInput is the local block as given (nil when unset), by field name (localspec.Block's, and for limits
// localspec.Limits'); ok is false while an input is unknown.
func localInput(ctx context.Context, v types.Object, diags *diag.Diagnostics) (*localspec.Block, bool) {
	if v.IsNull() {
		return nil, true
	}
	if inputUnknown(v, clusterLocalOutputs) {
		return nil, false
	}
	var l localModel
	diags.Append(v.As(ctx, &l, basetypes.ObjectAsOptions{UnhandledUnknownAsEmpty: true})...)
	if l.DataDir.IsNull() { // required: its validator says so (a block's attributes cannot be Required)
		return nil, false
	}
	out := &localspec.Block{}
	expand(ctx, l, out, diags)
	return out, true
}

// localObject is l as the local block: the inputs as given (zero values null, as a configuration that leaves
// them out), the outputs null (the platform's status sets them).
func localObject(ctx context.Context, l *localspec.Block, diags *diag.Diagnostics) types.Object {
	inputs := maps.Clone(clusterLocalAttrTypes)
	maps.DeleteFunc(inputs, func(name string, _ attr.Type) bool { return clusterLocalOutputs[name] })
	attrs := nullAttrs(clusterLocalAttrTypes)
	maps.Copy(attrs, flatten(ctx, l, inputs, nil, diags))
	o, d := types.ObjectValue(clusterLocalAttrTypes, attrs)
	diags.Append(d...)
	return o
}

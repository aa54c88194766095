package provider

import (
	"context"

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

type limitsModel struct {
	MemoryMiB         types.Int64   `tfsdk:"memory_mib"`
	ReadIOPS          types.Int64   `tfsdk:"read_iops"`
	WriteIOPS         types.Int64   `tfsdk:"write_iops"`
	ReadMiBPerSecond  types.Int64   `tfsdk:"read_mib_per_second"`
	WriteMiBPerSecond types.Int64   `tfsdk:"write_mib_per_second"`
	DiskGiB           types.Int64   `tfsdk:"disk_gib"`
	ReadLatencyMS     types.Float64 `tfsdk:"read_latency_ms"`
	WriteLatencyMS    types.Float64 `tfsdk:"write_latency_ms"`
	FlushLatencyMS    types.Float64 `tfsdk:"flush_latency_ms"`
}

// latencies are m's latencies with their field in the neutral model.
func (m limitsModel) latencies(l *localspec.Limits) []struct {
	v   types.Float64
	dst *float64
} {
	return []struct {
		v   types.Float64
		dst *float64
	}{{m.ReadLatencyMS, &l.ReadLatencyMS}, {m.WriteLatencyMS, &l.WriteLatencyMS}, {m.FlushLatencyMS, &l.FlushLatencyMS}}
}

// fields are m's values with their limit in the neutral model.
func (m limitsModel) fields(l *localspec.Limits) []struct {
	v   types.Int64
	dst *int64
} {
	return []struct {
		v   types.Int64
		dst *int64
	}{
		{m.MemoryMiB, &l.MemoryMiB}, {m.ReadIOPS, &l.ReadIOPS}, {m.WriteIOPS, &l.WriteIOPS},
		{m.ReadMiBPerSecond, &l.ReadMiBPerSecond}, {m.WriteMiBPerSecond, &l.WriteMiBPerSecond}, {m.DiskGiB, &l.DiskGiB},
	}
}

// limitsInput is local.limits as the neutral input (nil when unset); ok is false while a value is unknown.
func limitsInput(ctx context.Context, v types.Object, diags *diag.Diagnostics) (*localspec.Limits, bool) {
	if v.IsUnknown() {
		return nil, false
	}
	if v.IsNull() {
		return nil, true
	}
	var lm limitsModel
	diags.Append(v.As(ctx, &lm, basetypes.ObjectAsOptions{})...)
	out := &localspec.Limits{}
	for _, f := range lm.fields(out) {
		if f.v.IsUnknown() {
			return nil, false
		}
		*f.dst = f.v.ValueInt64()
	}
	for _, f := range lm.latencies(out) {
		if f.v.IsUnknown() {
			return nil, false
		}
		*f.dst = f.v.ValueFloat64()
	}
	return out, true
}

// limitsObject is l as local.limits: zero values null (as a configuration that leaves them out).
func limitsObject(l *localspec.Limits, diags *diag.Diagnostics) types.Object {
	if l == nil {
		return types.ObjectNull(clusterLimitsAttrTypes)
	}
	v := func(n int64) types.Int64 {
		if n == 0 {
			return types.Int64Null()
		}
		return types.Int64Value(n)
	}
	ms := func(f float64) types.Float64 {
		if f == 0 {
			return types.Float64Null()
		}
		return types.Float64Value(f)
	}
	out, d := types.ObjectValue(clusterLimitsAttrTypes, map[string]attr.Value{
		"memory_mib": v(l.MemoryMiB), "read_iops": v(l.ReadIOPS), "write_iops": v(l.WriteIOPS),
		"read_mib_per_second": v(l.ReadMiBPerSecond), "write_mib_per_second": v(l.WriteMiBPerSecond), "disk_gib": v(l.DiskGiB),
		"read_latency_ms": ms(l.ReadLatencyMS), "write_latency_ms": ms(l.WriteLatencyMS), "flush_latency_ms": ms(l.FlushLatencyMS),
	})
	diags.Append(d...)
	return out
}

// localInput is the local block as given (nil when unset); ok is false while a value it needs is unknown.
func localInput(ctx context.Context, v types.Object, diags *diag.Diagnostics) (*localspec.Block, bool) {
	if v.IsNull() {
		return nil, true
	}
	var l localModel
	diags.Append(v.As(ctx, &l, basetypes.ObjectAsOptions{UnhandledUnknownAsEmpty: true})...)
	if l.DataDir.IsUnknown() || l.PortBase.IsUnknown() || l.RunAsUser.IsUnknown() {
		return nil, false
	}
	if l.DataDir.IsNull() { // required: its validator says so (a block's attributes cannot be Required)
		return nil, false
	}
	limits, ok := limitsInput(ctx, l.Limits, diags)
	if !ok {
		return nil, false
	}
	return &localspec.Block{DataDir: l.DataDir.ValueString(), PortBase: int(l.PortBase.ValueInt64()), RunAsUser: l.RunAsUser.ValueString(), Limits: limits}, true
}

// localObject is l as the local block, its outputs null (the platform's status sets them).
func localObject(l *localspec.Block, diags *diag.Diagnostics) types.Object {
	runAs := types.StringNull()
	if l.RunAsUser != "" {
		runAs = types.StringValue(l.RunAsUser)
	}
	o, d := types.ObjectValue(clusterLocalAttrTypes, map[string]attr.Value{
		"data_dir": types.StringValue(l.DataDir), "port_base": types.Int64Value(int64(l.PortBase)), "run_as_user": runAs,
		"limits": limitsObject(l.Limits, diags), "data_dirs": types.MapNull(types.StringType), "durability_watcher_running": types.BoolNull(), "backup_scheduler_running": types.BoolNull(),
		"cgroups": types.MapNull(types.StringType), "block_devices": types.MapNull(types.StringType),
	})
	diags.Append(d...)
	return o
}

package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
)

// Conversions between pgnvme_cluster's Terraform values and the neutral cluster model. No decisions here:
// defaults and rules are internal/cluster's, what a platform does is the platform's.

type clusterModel struct {
	ID                      types.String `tfsdk:"id"`
	Name                    types.String `tfsdk:"name"`
	PostgresMajor           types.Int64  `tfsdk:"postgres_major"`
	NodeCount               types.Int64  `tfsdk:"node_count"`
	Node                    types.List   `tfsdk:"node"`
	Synchronous             types.Object `tfsdk:"synchronous"`
	Parameters              types.Map    `tfsdk:"parameters"`
	Archive                 types.Object `tfsdk:"archive"`
	Backup                  types.Object `tfsdk:"backup"`
	Restore                 types.Object `tfsdk:"restore"`
	Local                   types.Object `tfsdk:"local"`
	AWS                     types.Object `tfsdk:"aws"`
	Nodes                   types.List   `tfsdk:"nodes"`
	Primary                 types.Object `tfsdk:"primary"`
	ConnectionURI           types.String `tfsdk:"connection_uri"`
	ReadOnlyConnectionURI   types.String `tfsdk:"read_only_connection_uri"`
	SynchronousStandbyNames types.String `tfsdk:"synchronous_standby_names"`
	SynchronousDegraded     types.Bool   `tfsdk:"synchronous_degraded"`
	ArchiveStatus           types.Object `tfsdk:"archive_status"`
	Restored                types.Object `tfsdk:"restored"`
	AcceptDataLossAtLSN     types.String `tfsdk:"accept_data_loss_at_lsn"`
	TLS                     types.Object `tfsdk:"tls"`
}

type clusterNodeInput struct {
	Name types.String `tfsdk:"name"`
	Zone types.String `tfsdk:"zone"`
}

type synchronousInput struct {
	Method         types.String `tfsdk:"method"`
	Number         types.Int64  `tfsdk:"number"`
	DataDurability types.String `tfsdk:"data_durability"`
	Commit         types.String `tfsdk:"commit"`
}

type archiveInput struct {
	PgBackRestOptions types.Map     `tfsdk:"pgbackrest_options"`
	WALGEnv           types.Map     `tfsdk:"walg_env"`
	BackupOnCreate    types.Bool    `tfsdk:"backup_on_create"`
	MaxBacklogGiB     types.Float64 `tfsdk:"max_backlog_gib"`
}

type clusterNodeOutput struct {
	Name  string `tfsdk:"name"`
	Zone  string `tfsdk:"zone"`
	Role  string `tfsdk:"role"`
	Host  string `tfsdk:"host"`
	Port  int64  `tfsdk:"port"`
	State string `tfsdk:"state"`
}

// clusterSpec is the configuration m as the neutral spec, defaults filled in; ok is false while anything
// it needs is unknown (at validation and early planning). An unknown postgres_major (computed) is 0: the
// platform's choice.
func clusterSpec(ctx context.Context, m clusterModel, diags *diag.Diagnostics) (cluster.Spec, bool) {
	if m.Name.IsUnknown() || m.NodeCount.IsUnknown() || m.Node.IsUnknown() ||
		m.Synchronous.IsUnknown() || m.Parameters.IsUnknown() || m.Archive.IsUnknown() || m.Local.IsUnknown() || m.AWS.IsUnknown() {
		return cluster.Spec{}, false
	}
	in := cluster.Input{Name: m.Name.ValueString(), AcceptDataLossAtLSN: m.AcceptDataLossAtLSN.ValueString()}
	if known(m.PostgresMajor) {
		in.PostgresMajor = int(m.PostgresMajor.ValueInt64())
	}
	if known(m.NodeCount) {
		n := int(m.NodeCount.ValueInt64())
		in.NodeCount = &n
	}
	if !m.Node.IsNull() {
		var nodes []clusterNodeInput
		diags.Append(m.Node.ElementsAs(ctx, &nodes, false)...)
		in.Nodes = []cluster.Node{}
		for _, n := range nodes {
			if n.Name.IsUnknown() || n.Zone.IsUnknown() {
				return cluster.Spec{}, false
			}
			in.Nodes = append(in.Nodes, cluster.Node{Name: n.Name.ValueString(), Zone: n.Zone.ValueString()})
		}
	}
	if !m.Synchronous.IsNull() {
		var sy synchronousInput
		diags.Append(m.Synchronous.As(ctx, &sy, basetypes.ObjectAsOptions{})...)
		if sy.Method.IsUnknown() || sy.Number.IsUnknown() || sy.DataDurability.IsUnknown() || sy.Commit.IsUnknown() {
			return cluster.Spec{}, false
		}
		in.Synchronous = cluster.SynchronousInput{Method: sy.Method.ValueString(), DataDurability: sy.DataDurability.ValueString(), Commit: sy.Commit.ValueString()}
		if !sy.Number.IsNull() {
			n := int(sy.Number.ValueInt64())
			in.Synchronous.Number = &n
		}
	}
	if !m.Parameters.IsNull() {
		in.Parameters = map[string]string{}
		diags.Append(m.Parameters.ElementsAs(ctx, &in.Parameters, false)...)
	}
	if !m.Archive.IsNull() {
		var a archiveInput
		diags.Append(m.Archive.As(ctx, &a, basetypes.ObjectAsOptions{})...)
		if a.PgBackRestOptions.IsUnknown() || a.WALGEnv.IsUnknown() || a.BackupOnCreate.IsUnknown() || a.MaxBacklogGiB.IsUnknown() {
			return cluster.Spec{}, false
		}
		in.Archive = &cluster.ArchiveInput{}
		if !a.PgBackRestOptions.IsNull() {
			diags.Append(a.PgBackRestOptions.ElementsAs(ctx, &in.Archive.PgBackRestOptions, false)...)
		}
		if !a.WALGEnv.IsNull() {
			diags.Append(a.WALGEnv.ElementsAs(ctx, &in.Archive.WALGEnv, false)...)
		}
		if !a.BackupOnCreate.IsNull() {
			b := a.BackupOnCreate.ValueBool()
			in.Archive.BackupOnCreate = &b
		}
		if !a.MaxBacklogGiB.IsNull() {
			g := a.MaxBacklogGiB.ValueFloat64()
			in.Archive.MaxBacklogGiB = &g
		}
	}
	b, ok := backupSpecInput(ctx, m.Backup, diags)
	if !ok {
		return cluster.Spec{}, false
	}
	in.Backup = b
	if in.Restore, ok = restoreSpecInput(ctx, m.Restore, diags); !ok {
		return cluster.Spec{}, false
	}
	if in.TLS, ok = tlsSpecInput(ctx, m.TLS, diags); !ok {
		return cluster.Spec{}, false
	}
	local, ok := localInput(ctx, m.Local, diags)
	if !ok {
		return cluster.Spec{}, false
	}
	if local != nil {
		in.Blocks = append(in.Blocks, local)
	}
	aws, ok := awsInput(ctx, m.AWS, diags)
	if !ok {
		return cluster.Spec{}, false
	}
	if aws != nil {
		in.Blocks = append(in.Blocks, aws)
	}
	return cluster.FromInput(in), !diags.HasError()
}

// appliedSpec is clusterSpec for an apply, refresh or destroy, where everything is known: anything
// unknown there is a provider bug, reported as one.
func appliedSpec(ctx context.Context, m clusterModel, diags *diag.Diagnostics) (cluster.Spec, bool) {
	s, ok := clusterSpec(ctx, m, diags)
	if !ok && !diags.HasError() {
		diags.AddError("Unknown Cluster Configuration", "Part of the cluster's configuration is unknown at apply time. This is a bug in the provider; please report it.")
	}
	return s, ok && !diags.HasError()
}

// priorOf is what the state records (exists: there is a state): the configuration last applied and the
// members.
func priorOf(ctx context.Context, state clusterModel, exists bool, diags *diag.Diagnostics) cluster.Prior {
	if !exists {
		return cluster.Prior{}
	}
	pr := cluster.Prior{Members: priorMembers(ctx, state, diags)}
	var d diag.Diagnostics // a state that does not convert is no prior configuration; its members still count
	if s, ok := clusterSpec(ctx, state, &d); ok && !d.HasError() {
		pr.Spec = &s
	}
	return pr
}

// priorMembers are the members recorded in state (their identities never change).
func priorMembers(ctx context.Context, m clusterModel, diags *diag.Diagnostics) []cluster.Member {
	if !known(m.Nodes) {
		return nil
	}
	var nodes []clusterNodeOutput
	diags.Append(m.Nodes.ElementsAs(ctx, &nodes, false)...)
	dirs := map[string]string{}
	if known(m.Local) {
		var l localModel
		diags.Append(m.Local.As(ctx, &l, basetypes.ObjectAsOptions{UnhandledUnknownAsEmpty: true})...)
		if known(l.DataDirs) {
			diags.Append(l.DataDirs.ElementsAs(ctx, &dirs, false)...)
		}
	}
	out := make([]cluster.Member, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, cluster.Member{Name: n.Name, Zone: n.Zone, Role: n.Role, State: n.State, Host: n.Host, Port: int(n.Port), DataDir: dirs[n.Name]})
	}
	return out
}

// setMembers records members, how clients connect (cluster.ConnectionOf: platform is the platform's own
// status, tls the cluster's TLS as read) and the platform's own outputs in m. When primaryUnknown is set (a
// promotion is planned), the roles and the endpoint are unknown.
func setMembers(ctx context.Context, m *clusterModel, members []cluster.Member, platform cluster.PlatformStatus, tls *cluster.TLSStatus, primaryUnknown bool, diags *diag.Diagnostics) {
	local := localspec.StatusOf(platform)
	nodeType := types.ObjectType{AttrTypes: clusterNodeAttrTypes}
	out := make([]clusterNodeOutput, 0, len(members))
	dirs, cgroups, devices := map[string]string{}, map[string]string{}, map[string]string{}
	for _, mb := range members {
		out = append(out, clusterNodeOutput{Name: mb.Name, Zone: mb.Zone, Role: mb.Role, Host: mb.Host, Port: int64(mb.Port), State: mb.State})
		if mb.DataDir != "" {
			dirs[mb.Name] = mb.DataDir
		}
		if mb.Cgroup != "" {
			cgroups[mb.Name] = mb.Cgroup
		}
		if mb.BlockDevice != "" {
			devices[mb.Name] = mb.BlockDevice
		}
	}
	conn := cluster.ConnectionOf(members, platform, tls)
	var d diag.Diagnostics
	m.Primary, m.ConnectionURI, m.ReadOnlyConnectionURI = types.ObjectNull(clusterPrimaryAttrTypes), stringOrNull(conn.ReadWrite), stringOrNull(conn.ReadOnly)
	if primaryUnknown {
		m.Nodes = types.ListUnknown(nodeType)
		m.Primary = types.ObjectUnknown(clusterPrimaryAttrTypes)
		m.ConnectionURI = types.StringUnknown()
		if conn.ReadOnlyOffered {
			m.ReadOnlyConnectionURI = types.StringUnknown()
		}
	} else {
		m.Nodes, d = types.ListValueFrom(ctx, nodeType, out)
		diags.Append(d...)
		if p := conn.Primary; p != nil {
			m.Primary, d = types.ObjectValue(clusterPrimaryAttrTypes, map[string]attr.Value{"host": types.StringValue(p.Host), "port": types.Int64Value(int64(p.Port))})
			diags.Append(d...)
		}
	}
	if local != nil && known(m.Local) {
		attrs := m.Local.Attributes()
		attrs["data_dirs"], d = types.MapValueFrom(ctx, types.StringType, dirs)
		diags.Append(d...)
		attrs["durability_watcher_running"] = types.BoolValue(local.DurabilityWatcherRunning)
		attrs["backup_scheduler_running"] = types.BoolValue(local.BackupSchedulerRunning)
		attrs["cgroups"], attrs["block_devices"] = mapOrNull(ctx, cgroups, diags), mapOrNull(ctx, devices, diags)
		m.Local, d = types.ObjectValue(clusterLocalAttrTypes, attrs)
		diags.Append(d...)
	}
}

// setStatus records what the platform observed in m. A synchronous value that could not be read is null
// (with the platform's warning), never an older value reported as current.
func setStatus(ctx context.Context, m *clusterModel, st cluster.Status, diags *diag.Diagnostics) {
	setMembers(ctx, m, st.Members, st.Platform, st.TLS, false, diags)
	if as := awsspec.StatusOf(st.Platform); as != nil {
		setAWSStatus(ctx, m, as, diags)
	}
	m.ID = m.Name
	if st.PostgresMajor > 0 && !known(m.PostgresMajor) {
		m.PostgresMajor = types.Int64Value(int64(st.PostgresMajor))
	}
	m.SynchronousStandbyNames, m.SynchronousDegraded = types.StringNull(), types.BoolNull()
	if st.SynchronousKnown {
		m.SynchronousStandbyNames = types.StringValue(st.SynchronousStandbyNames)
		m.SynchronousDegraded = types.BoolValue(st.Degraded)
	}
	for _, w := range st.Warnings {
		diags.AddWarning("Cluster Partly Read", w)
	}
	if st.Restored != nil || !known(m.Restored) {
		m.Restored = restoredValue(ctx, st.Restored, diags) // else the platform does not know: what state recorded stays
	}
	m.ArchiveStatus = archiveStatusValue(ctx, st.Archive, diags)
	setTLS(ctx, m, st.TLS, false, diags)
	if h := st.Archive; h != nil {
		tflog.Info(ctx, "read the archive", map[string]any{"last_archived_wal": h.LastArchived, "archived_segments": h.Segments,
			"first_missing_wal": h.Hole, "unarchived_segments": h.Unarchived, "primary_read": h.Known, "archiving_ok": h.ArchivingOK, "backups": len(h.Backups),
			"verification": h.Verification})
		for _, w := range st.Archive.Warnings {
			diags.AddAttributeWarning(path.Root("archive_status"), w.Summary, w.Detail)
		}
	}
}

// setTLS records the cluster's TLS st in m's tls block (setMembers, in the connection URIs). Without st its outputs are
// unknown in a plan (planning) and null in a state.
func setTLS(ctx context.Context, m *clusterModel, st *cluster.TLSStatus, planning bool, diags *diag.Diagnostics) {
	in, ok := tlsSpecInput(ctx, m.TLS, diags)
	if !ok || in == nil {
		return
	}
	m.TLS = tlsObject(ctx, in, st, !planning, diags)
}

// backlogValue is max_backlog_gib for a bound in MiB (null for none).
func backlogValue(mib int) types.Float64 {
	if mib == 0 {
		return types.Float64Null()
	}
	return types.Float64Value(float64(mib) / 1024)
}

// modelFromSpec is an imported cluster's configuration and members as a model.
func modelFromSpec(ctx context.Context, s cluster.Spec, prior []cluster.Member, diags *diag.Diagnostics) clusterModel {
	var d diag.Diagnostics
	m := clusterModel{ID: types.StringValue(s.Name), Name: types.StringValue(s.Name), PostgresMajor: types.Int64Null(), NodeCount: types.Int64Null(),
		Parameters: types.MapNull(types.StringType), Archive: types.ObjectNull(clusterArchiveAttrTypes), Local: types.ObjectNull(clusterLocalAttrTypes),
		AWS:                     types.ObjectNull(clusterAWSAttrTypes),
		SynchronousStandbyNames: types.StringNull(), SynchronousDegraded: types.BoolNull(), ArchiveStatus: types.ObjectNull(clusterArchiveStatusAttrTypes),
		Restore: types.ObjectNull(clusterRestoreAttrTypes), Restored: types.ObjectNull(clusterRestoredAttrTypes), AcceptDataLossAtLSN: types.StringNull()}
	nodes := make([]clusterNodeInput, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		nodes = append(nodes, clusterNodeInput{Name: types.StringValue(n.Name), Zone: types.StringValue(n.Zone)})
	}
	m.Node, d = types.ListValueFrom(ctx, types.ObjectType{AttrTypes: clusterNodeInputAttrTypes}, nodes)
	diags.Append(d...)
	sy := s.Synchronous
	m.Synchronous, d = types.ObjectValue(clusterSynchronousAttrTypes, map[string]attr.Value{
		"method": types.StringValue(string(sy.Method)), "number": types.Int64Value(int64(sy.Number)),
		"data_durability": types.StringValue(string(sy.DataDurability)), "commit": types.StringValue(sy.Commit),
	})
	diags.Append(d...)
	if len(s.Parameters) > 0 {
		m.Parameters, d = types.MapValueFrom(ctx, types.StringType, s.Parameters)
		diags.Append(d...)
	}
	if a := s.Archive; a != nil {
		m.Archive, d = types.ObjectValue(clusterArchiveAttrTypes, map[string]attr.Value{
			"pgbackrest_options": mapOrNull(ctx, a.PgBackRestOptions, diags), "walg_env": mapOrNull(ctx, a.WALGEnv, diags),
			"backup_on_create": types.BoolValue(a.BackupOnCreate), "max_backlog_gib": backlogValue(a.MaxBacklogMiB),
		})
		diags.Append(d...)
	}
	if l := localspec.Of(s); l != nil {
		m.Local = localObject(ctx, l, diags)
	}
	if a := awsspec.Of(s); a != nil {
		m.AWS = awsObject(ctx, a, diags)
	}
	m.Backup = types.ObjectNull(objectAttrTypes(clusterTypes["backup"]))
	m.TLS = tlsObject(ctx, tlsInputOf(s.TLS), nil, true, diags)
	if s.Given != nil {
		m.Backup = backupObject(ctx, s.Given.Backup, diags)
		asGiven(&m, *s.Given, diags)
	}
	setMembers(ctx, &m, prior, nil, nil, false, diags)
	return m
}

func mapOrNull(ctx context.Context, v map[string]string, diags *diag.Diagnostics) types.Map {
	if len(v) == 0 {
		return types.MapNull(types.StringType)
	}
	out, d := types.MapValueFrom(ctx, types.StringType, v)
	diags.Append(d...)
	return out
}

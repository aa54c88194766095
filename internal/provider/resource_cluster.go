package provider

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

var (
	_ resource.Resource                   = (*clusterResource)(nil)
	_ resource.ResourceWithImportState    = (*clusterResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*clusterResource)(nil)
	_ resource.ResourceWithValidateConfig = (*clusterResource)(nil)
)

const (
	defaultPortBase  = 54320
	defaultNodeCount = 3
	localHost        = "127.0.0.1"
)

// NewClusterResource is the constructor of pgnvme_cluster.
func NewClusterResource() resource.Resource { return &clusterResource{} }

type clusterResource struct{}

type clusterModel struct {
	ID                      types.String `tfsdk:"id"`
	Name                    types.String `tfsdk:"name"`
	PostgresMajor           types.Int64  `tfsdk:"postgres_major"`
	NodeCount               types.Int64  `tfsdk:"node_count"`
	Node                    types.List   `tfsdk:"node"`
	Synchronous             types.Object `tfsdk:"synchronous"`
	Parameters              types.Map    `tfsdk:"parameters"`
	Archive                 types.Object `tfsdk:"archive"`
	Local                   types.Object `tfsdk:"local"`
	Nodes                   types.List   `tfsdk:"nodes"`
	Primary                 types.Object `tfsdk:"primary"`
	ConnectionURI           types.String `tfsdk:"connection_uri"`
	SynchronousStandbyNames types.String `tfsdk:"synchronous_standby_names"`
	SynchronousDegraded     types.Bool   `tfsdk:"synchronous_degraded"`
	WatcherRunning          types.Bool   `tfsdk:"durability_watcher_running"`
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
	PgBackRestOptions types.Map  `tfsdk:"pgbackrest_options"`
	WALGEnv           types.Map  `tfsdk:"walg_env"`
	BackupOnCreate    types.Bool `tfsdk:"backup_on_create"`
}

type localInput struct {
	DataDir   types.String `tfsdk:"data_dir"`
	PortBase  types.Int64  `tfsdk:"port_base"`
	RunAsUser types.String `tfsdk:"run_as_user"`
}

type clusterNodeOutput struct {
	Name    string `tfsdk:"name"`
	Zone    string `tfsdk:"zone"`
	Role    string `tfsdk:"role"`
	Host    string `tfsdk:"host"`
	Port    int64  `tfsdk:"port"`
	DataDir string `tfsdk:"data_dir"`
	State   string `tfsdk:"state"`
}

func (r *clusterResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_cluster"
}

// desiredNames returns the configured node names and zones, in priority order.
func desiredNames(ctx context.Context, m clusterModel, diags *diag.Diagnostics) ([]string, map[string]string, bool) {
	zones := map[string]string{}
	if m.NodeCount.IsUnknown() || m.Node.IsUnknown() {
		return nil, nil, false
	}
	if !m.Node.IsNull() {
		var nodes []clusterNodeInput
		diags.Append(m.Node.ElementsAs(ctx, &nodes, false)...)
		var names []string
		for _, n := range nodes {
			if n.Name.IsUnknown() || n.Zone.IsUnknown() {
				return nil, nil, false
			}
			names = append(names, n.Name.ValueString())
			zones[n.Name.ValueString()] = stringOr(n.Zone, "local")
		}
		return names, zones, true
	}
	count := int(int64Or(m.NodeCount, defaultNodeCount))
	names := make([]string, count)
	for i := range names {
		names[i] = fmt.Sprintf("node-%d", i+1)
		zones[names[i]] = "local"
	}
	return names, zones, true
}

// clusterSpec builds the platform spec from the configuration; existing are the members in state, whose
// ports and data directories never change. ok is false while something is unknown.
func clusterSpec(ctx context.Context, m clusterModel, existing []clusterNodeOutput, diags *diag.Diagnostics) (localcluster.Spec, bool) {
	names, zones, ok := desiredNames(ctx, m, diags)
	if !ok || m.Local.IsUnknown() || m.Synchronous.IsUnknown() || m.Parameters.IsUnknown() || m.Archive.IsUnknown() || m.Name.IsUnknown() {
		return localcluster.Spec{}, false
	}
	var local localInput
	diags.Append(m.Local.As(ctx, &local, basetypes.ObjectAsOptions{})...)
	if local.DataDir.IsUnknown() || local.PortBase.IsUnknown() || local.RunAsUser.IsUnknown() {
		return localcluster.Spec{}, false
	}
	root := filepath.Clean(local.DataDir.ValueString())
	base := int(int64Or(local.PortBase, defaultPortBase))
	s := localcluster.Spec{Name: m.Name.ValueString(), RunAsUser: local.RunAsUser.ValueString()}

	prior := make([]localcluster.Member, 0, len(existing))
	for _, n := range existing {
		prior = append(prior, localcluster.Member{Name: n.Name, Zone: n.Zone, Port: int(n.Port), DataDir: n.DataDir})
	}
	s.Members = localcluster.AssignMembers(names, zones, prior, root, base)

	sync := synchronousInput{}
	if !m.Synchronous.IsNull() {
		diags.Append(m.Synchronous.As(ctx, &sync, basetypes.ObjectAsOptions{})...)
	}
	defNumber := int64(1)
	if len(names) == 1 {
		defNumber = 0
	}
	s.Synchronous = bootstrap.Synchronous{
		Method:         quorum.Method(stringOr(sync.Method, "any")),
		Number:         int(int64Or(sync.Number, defNumber)),
		DataDurability: bootstrap.Durability(stringOr(sync.DataDurability, "required")),
		Commit:         stringOr(sync.Commit, "on"),
	}
	if !m.Parameters.IsNull() {
		params := map[string]string{}
		diags.Append(m.Parameters.ElementsAs(ctx, &params, false)...)
		s.Parameters = params
	}
	if !m.Archive.IsNull() {
		var a archiveInput
		diags.Append(m.Archive.As(ctx, &a, basetypes.ObjectAsOptions{})...)
		arch := &bootstrap.Archive{BackupOnCreate: a.BackupOnCreate.IsNull() || a.BackupOnCreate.ValueBool()}
		if !a.PgBackRestOptions.IsNull() {
			arch.PgBackRestOptions = map[string]string{}
			diags.Append(a.PgBackRestOptions.ElementsAs(ctx, &arch.PgBackRestOptions, false)...)
		}
		if !a.WALGEnv.IsNull() {
			arch.WALGEnv = map[string]string{}
			diags.Append(a.WALGEnv.ElementsAs(ctx, &arch.WALGEnv, false)...)
		}
		s.Archive = arch
	}
	return s, !diags.HasError()
}

func (r *clusterResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m clusterModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	names, _, ok := desiredNames(ctx, m, &resp.Diagnostics)
	if !ok {
		return
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[strings.ToLower(n)] {
			resp.Diagnostics.AddAttributeError(path.Root("node"), "Duplicate Node Name",
				fmt.Sprintf("The node name %q appears twice (names are compared ignoring case, as PostgreSQL compares application names). Give every node its own name.", n))
			return
		}
		seen[strings.ToLower(n)] = true
	}
	if !m.Archive.IsNull() && !m.Archive.IsUnknown() {
		var a archiveInput
		resp.Diagnostics.Append(m.Archive.As(ctx, &a, basetypes.ObjectAsOptions{})...)
		if a.PgBackRestOptions.IsNull() && a.WALGEnv.IsNull() {
			resp.Diagnostics.AddAttributeError(path.Root("archive"), "Missing Archive Options",
				"archive needs pgbackrest_options (the local platform's archiver), e.g. pgnvme_archive_bucket.x.pgbackrest_options "+
					"plus credentials, or repo1-type = \"posix\" with repo1-path for a local repository. Remove archive to run without one.")
			return
		}
		if !a.WALGEnv.IsNull() {
			resp.Diagnostics.AddAttributeError(path.Root("archive").AtName("walg_env"), "WAL-G On The Local Platform",
				"The local platform archives with pgBackRest; WAL-G is the archiver of the EC2 platform. Use "+
					"archive.pgbackrest_options (for a bucket: pgnvme_archive_bucket.x.pgbackrest_options plus credentials).")
		}
	}
	s, ok := clusterSpec(ctx, m, nil, &resp.Diagnostics)
	if !ok {
		return
	}
	if err := localcluster.Validate(s); err != nil {
		at := path.Root("synchronous")
		if strings.Contains(err.Error(), "parameter") {
			at = path.Root("parameters")
		}
		resp.Diagnostics.AddAttributeError(at, "Invalid Cluster", err.Error())
	}
}

func (r *clusterResource) manager(ctx context.Context, s localcluster.Spec, diags *diag.Diagnostics) *localcluster.Manager {
	m, err := localcluster.NewManager(s.RunAsUser)
	if err != nil {
		diags.AddAttributeError(path.Root("local"), "PostgreSQL Not Available",
			"The local platform runs the installed PostgreSQL binaries (Debian: apt-get install postgresql-15). "+err.Error())
		return nil
	}
	return m
}

// setObserved records statuses into the model's computed attributes.
func setObserved(ctx context.Context, m *clusterModel, root string, st []localcluster.Status, value string, degraded bool, diags *diag.Diagnostics) {
	out := make([]clusterNodeOutput, 0, len(st))
	primaryPort := int64(0)
	for _, s := range st {
		out = append(out, clusterNodeOutput{Name: s.Name, Zone: s.Zone, Role: s.Role, Host: localHost, Port: int64(s.Port), DataDir: s.DataDir, State: s.State})
		if s.Role == "primary" && s.State == "running" {
			primaryPort = int64(s.Port)
		}
	}
	var d diag.Diagnostics
	m.Nodes, d = types.ListValueFrom(ctx, types.ObjectType{AttrTypes: clusterNodeAttrTypes}, out)
	diags.Append(d...)
	m.Primary, d = types.ObjectValue(clusterPrimaryAttrTypes, map[string]attr.Value{
		"host": types.StringValue(localHost), "port": types.Int64Value(primaryPort),
	})
	diags.Append(d...)
	m.ConnectionURI = types.StringValue(fmt.Sprintf("postgresql://postgres@%s:%d/postgres", localHost, primaryPort))
	m.SynchronousStandbyNames = types.StringValue(value)
	m.SynchronousDegraded = types.BoolValue(degraded)
	m.ID = types.StringValue(root)
}

func stateNodes(ctx context.Context, l types.List, diags *diag.Diagnostics) []clusterNodeOutput {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var out []clusterNodeOutput
	diags.Append(l.ElementsAs(ctx, &out, false)...)
	return out
}

func (r *clusterResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan clusterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	var existing []clusterNodeOutput
	var state clusterModel
	if !req.State.Raw.IsNull() {
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		existing = stateNodes(ctx, state.Nodes, &resp.Diagnostics)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	s, ok := clusterSpec(ctx, plan, existing, &resp.Diagnostics)
	if !ok {
		return
	}
	mgr := r.manager(ctx, s, &resp.Diagnostics)
	if mgr == nil {
		return
	}
	major, err := mgr.PostgresMajor(ctx)
	if err != nil {
		resp.Diagnostics.AddError("PostgreSQL Not Available", err.Error())
		return
	}
	if plan.PostgresMajor.IsUnknown() || plan.PostgresMajor.IsNull() {
		plan.PostgresMajor = types.Int64Value(int64(major))
	} else if int(plan.PostgresMajor.ValueInt64()) != major {
		resp.Diagnostics.AddAttributeError(path.Root("postgres_major"), "PostgreSQL Version Not Installed",
			fmt.Sprintf("postgres_major is %d, but the local platform runs the installed PostgreSQL %d. Install %d or set postgres_major = %d.",
				plan.PostgresMajor.ValueInt64(), major, plan.PostgresMajor.ValueInt64(), major))
		return
	}
	root, err := localcluster.DataDirRoot(s)
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("local"), "Invalid Cluster", err.Error())
		return
	}
	if req.State.Raw.IsNull() {
		// A new cluster: check now that it can be created here (ports free, data_dir writable), so a bad
		// configuration fails at plan time and nothing is half-created.
		if err := mgr.Preflight(ctx, s); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("local"), "Cannot Create Cluster Here", err.Error())
			return
		}
	}

	// Planned nodes: every desired member running. Repairs of lost members appear as changes from what the
	// refresh saw to "running"; the plan says which actions the apply will take.
	known := map[string]string{}
	for _, n := range existing {
		known[n.Name] = n.Role
	}
	var actions []topology.Action
	if len(existing) > 0 {
		desired := topology.Desired{}
		for _, mem := range s.Members {
			desired.Nodes = append(desired.Nodes, mem.Name)
		}
		observed := observedFromState(existing)
		if needsRepair(existing) {
			// Something is lost: look at the live nodes (WAL positions, timelines) so the plan names exactly
			// what the apply will do.
			st, err := mgr.Observe(ctx, s)
			if err != nil {
				resp.Diagnostics.AddError("Reading The Cluster Failed", err.Error())
				return
			}
			observed = localcluster.Observed(st)
		}
		actions, err = topology.Plan(desired, observed)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("nodes"), "Cluster Cannot Be Repaired Automatically", err.Error())
			return
		}
		if len(actions) > 0 {
			resp.Diagnostics.AddWarning("Cluster Changes Planned",
				"The apply will take these actions, one at a time:\n"+topology.Summary(actions))
		}
	}
	planned, promoting := localcluster.Planned(s, known, actions, len(existing) == 0)
	primaryPort := 0
	out := make([]clusterNodeOutput, 0, len(planned))
	for _, p := range planned {
		if p.Role == "primary" {
			primaryPort = p.Port
		}
		out = append(out, clusterNodeOutput{Name: p.Name, Zone: p.Zone, Role: p.Role, Host: localHost, Port: int64(p.Port), DataDir: p.DataDir, State: p.State})
	}
	var d diag.Diagnostics
	if promoting {
		// Which node becomes primary is decided again at apply from the live WAL positions.
		plan.Nodes = types.ListUnknown(types.ObjectType{AttrTypes: clusterNodeAttrTypes})
		plan.Primary = types.ObjectUnknown(clusterPrimaryAttrTypes)
		plan.ConnectionURI = types.StringUnknown()
	} else {
		plan.Nodes, d = types.ListValueFrom(ctx, types.ObjectType{AttrTypes: clusterNodeAttrTypes}, out)
		resp.Diagnostics.Append(d...)
		plan.Primary, d = types.ObjectValue(clusterPrimaryAttrTypes, map[string]attr.Value{
			"host": types.StringValue(localHost), "port": types.Int64Value(int64(primaryPort)),
		})
		resp.Diagnostics.Append(d...)
		plan.ConnectionURI = types.StringValue(fmt.Sprintf("postgresql://postgres@%s:%d/postgres", localHost, primaryPort))
	}
	plan.ID = types.StringValue(root)
	plan.WatcherRunning = types.BoolValue(localcluster.WatcherWanted(s))
	// The synchronous value and whether it is degraded are known after the apply (they depend on health).
	plan.SynchronousStandbyNames = types.StringUnknown()
	plan.SynchronousDegraded = types.BoolUnknown()
	if !req.State.Raw.IsNull() && len(existing) > 0 && !state.SynchronousStandbyNames.IsNull() &&
		nodesEqual(existing, out) && plan.Synchronous.Equal(state.Synchronous) {
		plan.SynchronousStandbyNames = state.SynchronousStandbyNames
		plan.SynchronousDegraded = state.SynchronousDegraded
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func nodesEqual(a, b []clusterNodeOutput) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func needsRepair(nodes []clusterNodeOutput) bool {
	for _, n := range nodes {
		if n.State != "running" || n.Role == "" {
			return true
		}
	}
	return false
}

// observedFromState turns the refreshed nodes into topology input (no LSNs: the apply observes again).
func observedFromState(nodes []clusterNodeOutput) []topology.Observed {
	out := make([]topology.Observed, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, topology.Observed{Name: n.Name, State: topology.NodeState(n.State), Role: n.Role, FlushLSN: "0/0", ReplayLSN: "0/0", Timeline: 1})
	}
	return out
}

func (r *clusterResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan clusterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, ok := clusterSpec(ctx, plan, nil, &resp.Diagnostics)
	if !ok {
		return
	}
	mgr := r.manager(ctx, s, &resp.Diagnostics)
	if mgr == nil {
		return
	}
	if err := mgr.Preflight(ctx, s); err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("local"), "Cannot Create Cluster Here",
			"Nothing was created. "+err.Error())
		return
	}
	tflog.Info(ctx, "creating local cluster", map[string]any{"name": s.Name, "nodes": len(s.Members)})
	created, err := mgr.Create(ctx, s)
	root, _ := localcluster.DataDirRoot(s) // checked at plan time
	if err != nil {
		resp.Diagnostics.AddError("Cluster Creation Failed", fmt.Sprintf("Created %s before this error; they are "+
			"recorded in state and the next apply repairs or replaces them.\n\n%s", strings.Join(created, ", "), err))
		if len(created) == 0 {
			return
		}
	}
	r.observeInto(ctx, mgr, s, &plan, root, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// observeInto enforces durability for the current health, then records every member's state.
func (r *clusterResource) observeInto(ctx context.Context, mgr *localcluster.Manager, s localcluster.Spec, m *clusterModel, root string, diags *diag.Diagnostics) {
	value, degraded, err := mgr.EnforceDurability(ctx, s)
	if err != nil {
		diags.AddWarning("Synchronous Setting Not Checked", err.Error())
	}
	st, err := mgr.Observe(ctx, s)
	if err != nil {
		diags.AddError("Reading The Cluster Failed", err.Error())
		return
	}
	setObserved(ctx, m, root, st, value, degraded, diags)
	running, err := mgr.WatcherRunning(s)
	if err != nil {
		diags.AddWarning("Durability Watcher Not Checked", err.Error())
	}
	m.WatcherRunning = types.BoolValue(running)
}

func (r *clusterResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state clusterModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	root := state.ID.ValueString()
	if state.Local.IsNull() {
		// Import: rebuild the configuration from the manifest the cluster keeps in its data directory.
		if !r.importInto(ctx, &state, root, &resp.Diagnostics) {
			return
		}
	}
	s, ok := clusterSpec(ctx, state, stateNodes(ctx, state.Nodes, &resp.Diagnostics), &resp.Diagnostics)
	if !ok {
		return
	}
	mgr := r.manager(ctx, s, &resp.Diagnostics)
	if mgr == nil {
		return
	}
	st, err := mgr.Observe(ctx, s)
	if err != nil {
		resp.Diagnostics.AddError("Reading The Cluster Failed", err.Error())
		return
	}
	gone := true
	for _, n := range st {
		if n.State != "missing" {
			gone = false
		}
	}
	if gone {
		tflog.Warn(ctx, "every node of the cluster is gone; removing it from state", map[string]any{"data_dir": root})
		resp.State.RemoveResource(ctx)
		return
	}
	if state.PostgresMajor.IsNull() || state.PostgresMajor.IsUnknown() {
		major, err := mgr.PostgresMajor(ctx)
		if err != nil {
			resp.Diagnostics.AddError("PostgreSQL Not Available", err.Error())
			return
		}
		state.PostgresMajor = types.Int64Value(int64(major))
	}
	value, degraded := mgr.SynchronousNow(ctx, s, st, state.SynchronousStandbyNames.ValueString())
	setObserved(ctx, &state, root, st, value, degraded, &resp.Diagnostics)
	running, err := mgr.WatcherRunning(s)
	if err != nil {
		resp.Diagnostics.AddWarning("Durability Watcher Not Checked", err.Error())
	}
	state.WatcherRunning = types.BoolValue(running)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *clusterResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state clusterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, ok := clusterSpec(ctx, plan, stateNodes(ctx, state.Nodes, &resp.Diagnostics), &resp.Diagnostics)
	if !ok {
		return
	}
	mgr := r.manager(ctx, s, &resp.Diagnostics)
	if mgr == nil {
		return
	}
	root, _ := localcluster.DataDirRoot(s) // checked at plan time
	st, err := mgr.Observe(ctx, s)
	if err != nil {
		resp.Diagnostics.AddError("Reading The Cluster Failed", err.Error())
		return
	}
	desired := topology.Desired{}
	for _, mem := range s.Members {
		desired.Nodes = append(desired.Nodes, mem.Name)
	}
	actions, err := topology.Plan(desired, localcluster.Observed(st))
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("nodes"), "Cluster Cannot Be Repaired Automatically", err.Error())
		return
	}
	if len(actions) > 0 {
		tflog.Info(ctx, "reconciling the cluster", map[string]any{"actions": topology.Summary(actions)})
		if err := mgr.Reconcile(ctx, s, actions); err != nil {
			resp.Diagnostics.AddError("Cluster Repair Failed", fmt.Sprintf("%s\n\nThe state records what was observed; apply again to continue.", err))
			r.observeInto(ctx, mgr, s, &plan, root, &resp.Diagnostics)
			resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
			return
		}
	}
	restarted, err := mgr.ApplySettings(ctx, s)
	if err != nil {
		resp.Diagnostics.AddError("Applying Settings Failed", err.Error())
	} else if len(restarted) > 0 {
		tflog.Info(ctx, "restarted nodes one at a time", map[string]any{"order": strings.Join(restarted, ", ")})
	}
	r.observeInto(ctx, mgr, s, &plan, root, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *clusterResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state clusterModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, ok := clusterSpec(ctx, state, stateNodes(ctx, state.Nodes, &resp.Diagnostics), &resp.Diagnostics)
	if !ok {
		return
	}
	mgr := r.manager(ctx, s, &resp.Diagnostics)
	if mgr == nil {
		return
	}
	tflog.Info(ctx, "destroying local cluster", map[string]any{"name": s.Name})
	if err := mgr.Destroy(ctx, s); err != nil {
		resp.Diagnostics.AddError("Cluster Deletion Failed", err.Error())
	}
}

func (r *clusterResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if !filepath.IsAbs(req.ID) {
		resp.Diagnostics.AddError("Invalid Import ID", "Import pgnvme_cluster by its local.data_dir, an absolute path, e.g. `terraform import pgnvme_cluster.demo /var/lib/pgnvme/demo`.")
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), filepath.Clean(req.ID))...)
}

// importInto fills an imported state's arguments from the cluster's manifest.
func (r *clusterResource) importInto(ctx context.Context, m *clusterModel, root string, diags *diag.Diagnostics) bool {
	spec, err := localcluster.ReadManifest(root)
	if err != nil {
		if errors.Is(err, localcluster.ErrNoManifest) {
			diags.AddError("Not A pgnvme Cluster", fmt.Sprintf("%s holds no pgnvme cluster manifest: import takes the local.data_dir of a cluster this provider created. %s", root, err))
			return false
		}
		diags.AddError("Cluster Manifest Unreadable", err.Error())
		return false
	}
	var d diag.Diagnostics
	m.Name = types.StringValue(spec.Name)
	m.NodeCount = types.Int64Null()
	nodes := make([]attr.Value, 0, len(spec.Members))
	existing := make([]clusterNodeOutput, 0, len(spec.Members))
	for _, mem := range spec.Members {
		o, dd := types.ObjectValue(map[string]attr.Type{"name": types.StringType, "zone": types.StringType},
			map[string]attr.Value{"name": types.StringValue(mem.Name), "zone": types.StringValue(mem.Zone)})
		diags.Append(dd...)
		nodes = append(nodes, o)
		existing = append(existing, clusterNodeOutput{Name: mem.Name, Zone: mem.Zone, Host: localHost, Port: int64(mem.Port), DataDir: mem.DataDir})
	}
	m.Node, d = types.ListValue(types.ObjectType{AttrTypes: map[string]attr.Type{"name": types.StringType, "zone": types.StringType}}, nodes)
	diags.Append(d...)
	m.Nodes, d = types.ListValueFrom(ctx, types.ObjectType{AttrTypes: clusterNodeAttrTypes}, existing)
	diags.Append(d...)
	syncNull := types.ObjectNull(map[string]attr.Type{"method": types.StringType, "number": types.Int64Type, "data_durability": types.StringType, "commit": types.StringType})
	m.Synchronous, d = types.ObjectValue(syncNull.AttributeTypes(ctx), map[string]attr.Value{
		"method": types.StringValue(string(spec.Synchronous.Method)), "number": types.Int64Value(int64(spec.Synchronous.Number)),
		"data_durability": types.StringValue(string(spec.Synchronous.DataDurability)), "commit": types.StringValue(spec.Synchronous.Commit),
	})
	diags.Append(d...)
	if len(spec.Parameters) > 0 {
		m.Parameters, d = types.MapValueFrom(ctx, types.StringType, spec.Parameters)
		diags.Append(d...)
	} else {
		m.Parameters = types.MapNull(types.StringType)
	}
	archTypes := map[string]attr.Type{"pgbackrest_options": types.MapType{ElemType: types.StringType}, "walg_env": types.MapType{ElemType: types.StringType}, "backup_on_create": types.BoolType}
	m.Archive = types.ObjectNull(archTypes)
	if a := spec.Archive; a != nil {
		opts, dd := types.MapValueFrom(ctx, types.StringType, a.PgBackRestOptions)
		diags.Append(dd...)
		m.Archive, d = types.ObjectValue(archTypes, map[string]attr.Value{
			"pgbackrest_options": opts, "walg_env": types.MapNull(types.StringType), "backup_on_create": types.BoolValue(a.BackupOnCreate),
		})
		diags.Append(d...)
	}
	base := int64(0)
	for _, mem := range spec.Members {
		if base == 0 || int64(mem.Port) < base {
			base = int64(mem.Port)
		}
	}
	runAs := types.StringNull()
	if spec.RunAsUser != "" {
		runAs = types.StringValue(spec.RunAsUser)
	}
	m.Local, d = types.ObjectValue(map[string]attr.Type{"data_dir": types.StringType, "port_base": types.Int64Type, "run_as_user": types.StringType},
		map[string]attr.Value{"data_dir": types.StringValue(root), "port_base": types.Int64Value(base), "run_as_user": runAs})
	diags.Append(d...)
	return !diags.HasError()
}

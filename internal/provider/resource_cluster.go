package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
)

var (
	_ resource.Resource                     = (*clusterResource)(nil)
	_ resource.ResourceWithConfigure        = (*clusterResource)(nil)
	_ resource.ResourceWithImportState      = (*clusterResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*clusterResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*clusterResource)(nil)
	_ resource.ResourceWithConfigValidators = (*clusterResource)(nil)
)

// ClusterPlatform is what pgnvme_cluster needs of a platform (internal/localcluster is the local one).
// Every method takes the neutral spec; prior are the members recorded in state, whose identities (ports,
// data directories, addresses) never change. Errors that are a cluster.FieldError are reported at their
// attribute.
type ClusterPlatform interface {
	// Plan checks that the apply can do what s asks (for a new cluster: that it can be created here, or
	// resumed) and says what the members will look like, with the repair or replacement steps it takes.
	Plan(ctx context.Context, s cluster.Spec, prior cluster.Prior) (cluster.Plan, error)
	// Create builds the cluster; on error the status holds what exists (no members: nothing was made).
	Create(ctx context.Context, s cluster.Spec) (cluster.Status, error)
	// Read observes the cluster and changes nothing.
	Read(ctx context.Context, s cluster.Spec, prior cluster.Prior) (cluster.Status, error)
	// Update repairs lost members, replaces those whose machine must change (one at a time), and applies
	// settings.
	Update(ctx context.Context, s cluster.Spec, prior cluster.Prior) (cluster.Status, error)
	// Delete removes every member and what the platform made for them; never the archive.
	Delete(ctx context.Context, s cluster.Spec, prior cluster.Prior) error
	// Import rebuilds the configuration and members from a platform import ID.
	Import(ctx context.Context, id string) (cluster.Spec, []cluster.Member, error)
}

// NewClusterResource is the constructor of pgnvme_cluster.
func NewClusterResource() resource.Resource { return &clusterResource{} }

type clusterResource struct {
	platforms map[cluster.Platform]ClusterPlatform
}

func (r *clusterResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_cluster"
}

func (r *clusterResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	c, ok := req.ProviderData.(*Clients)
	if !ok {
		resp.Diagnostics.AddError("Unexpected Provider Data", fmt.Sprintf("pgnvme_cluster got %T instead of *Clients. This is a bug in the provider; please report it.", req.ProviderData))
		return
	}
	r.platforms = c.Platforms
}

func (r *clusterResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	// Both blocks at once is Conflicting's to report; neither, ValidateConfig's (in the product's words, not the
	// framework's "exactly one of these attributes must be configured").
	return []resource.ConfigValidator{resourcevalidator.Conflicting(path.MatchRoot("local"), path.MatchRoot("aws"))}
}

// platform is the platform s runs on.
func (r *clusterResource) platform(s cluster.Spec, diags *diag.Diagnostics) ClusterPlatform {
	p, ok := r.platforms[s.Platform()]
	if !ok {
		diags.AddError("Platform Not Available", fmt.Sprintf("The provider has no %q platform configured. This is a bug in the provider; please report it.", s.Platform()))
		return nil
	}
	return p
}

// applied is m's spec and platform for an apply, refresh or destroy; p is nil after an error.
func (r *clusterResource) applied(ctx context.Context, m clusterModel, diags *diag.Diagnostics) (cluster.Spec, ClusterPlatform) {
	s, ok := appliedSpec(ctx, m, diags)
	if !ok {
		return s, nil
	}
	return s, r.platform(s, diags)
}

func (r *clusterResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m clusterModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.Local.IsNull() && m.AWS.IsNull() {
		resp.Diagnostics.AddError("Missing Platform Block",
			"pgnvme_cluster runs on one platform, given by its block: local { data_dir = \"/var/lib/pgnvme/<name>\" } runs the nodes as "+
				"PostgreSQL processes on the machine that runs Terraform; aws { instance_type = ..., subnet_ids = {...} } runs them on EC2 "+
				"instances with instance-store NVMe. Add one of them.")
		return
	}
	s, ok := clusterSpec(ctx, m, &resp.Diagnostics)
	if !ok || s.Platform() == "" { // both blocks: Conflicting's to report
		return
	}
	for _, fe := range cluster.Validate(s) {
		resp.Diagnostics.AddAttributeError(attrPath(fe.Path), fe.Summary, fe.Detail)
	}
}

func (r *clusterResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.platforms == nil {
		return
	}
	var plan, state clusterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if !req.State.Raw.IsNull() {
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	s, ok := clusterSpec(ctx, plan, &resp.Diagnostics)
	if !ok {
		return
	}
	p := r.platform(s, &resp.Diagnostics)
	if p == nil {
		return
	}
	pr := priorOf(ctx, state, !req.State.Raw.IsNull(), &resp.Diagnostics)
	prior := pr.Members
	var old cluster.Spec // the configuration last applied
	if !req.State.Raw.IsNull() {
		var d diag.Diagnostics
		if o, ok := clusterSpec(ctx, state, &d); ok {
			old = o
			errs, warnings := cluster.ChangeChecks(old, s)
			for _, fe := range warnings {
				resp.Diagnostics.AddAttributeWarning(attrPath(fe.Path), fe.Summary, fe.Detail)
			}
			for _, fe := range errs {
				resp.Diagnostics.AddAttributeError(attrPath(fe.Path), fe.Summary, fe.Detail)
			}
			if len(errs) > 0 {
				return
			}
		}
	}
	if req.State.Raw.IsNull() && plan.Restore.IsNull() {
		plan.Restored = types.ObjectNull(clusterRestoredAttrTypes)
	}
	if req.State.Raw.IsNull() { // what the warnings are about (a restore's source) matters at create only
		for _, fe := range cluster.Warnings(s) {
			resp.Diagnostics.AddAttributeWarning(attrPath(fe.Path), fe.Summary, fe.Detail)
		}
	}
	if len(prior) > 0 && replaceForLimits(ctx, old, s, &plan, resp) {
		return
	}
	planned, err := p.Plan(ctx, s, pr)
	if err != nil {
		addClusterError(&resp.Diagnostics, "Cluster Cannot Be Planned",
			"The platform could not check what this apply would do; nothing was changed. Fix what follows and plan again.", err)
		return
	}
	if planned.Actions != "" {
		resp.Diagnostics.AddWarning("Cluster Changes Planned", "The apply will take these actions, one at a time:\n"+planned.Actions)
	}
	if !known(plan.PostgresMajor) && planned.PostgresMajor > 0 {
		plan.PostgresMajor = types.Int64Value(int64(planned.PostgresMajor))
	}
	plan.ID = plan.Name
	setMembers(ctx, &plan, planned.Members, planned.Platform, planned.TLS, planned.Promoting, &resp.Diagnostics)
	if awsspec.StatusOf(planned.Platform) != nil {
		planAWS(ctx, &plan, state, planned, len(prior) > 0, cluster.Reconfigures(old, s, planned), &resp.Diagnostics)
	}
	setTLS(ctx, &plan, planned.TLS, true, &resp.Diagnostics)
	if l := localspec.Of(s); l != nil && known(plan.Local) && localspec.DevicesPending(l.Limits, planned.Members, len(prior) > 0) {
		attrs := plan.Local.Attributes()
		attrs["block_devices"] = types.MapUnknown(types.StringType)
		var d diag.Diagnostics
		plan.Local, d = types.ObjectValue(clusterLocalAttrTypes, attrs)
		resp.Diagnostics.Append(d...)
	}
	// The synchronous value and whether it is degraded depend on health: known after the apply, unless
	// nothing that decides them changes.
	plan.SynchronousStandbyNames, plan.SynchronousDegraded = types.StringUnknown(), types.BoolUnknown()
	if known(state.SynchronousStandbyNames) && cluster.SynchronousKept(old, s, prior, planned) {
		plan.SynchronousStandbyNames, plan.SynchronousDegraded = state.SynchronousStandbyNames, state.SynchronousDegraded
	}
	// archive_status is read, never planned: a plan that changes nothing keeps the refreshed value; any
	// apply reads it again, so it is known only after the apply (the archive moves on meanwhile).
	plan.ArchiveStatus = types.ObjectUnknown(clusterArchiveStatusAttrTypes)
	if !req.State.Raw.IsNull() {
		plan.ArchiveStatus = state.ArchiveStatus
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		if resp.Plan.Raw.Equal(req.State.Raw) {
			return
		}
		plan.ArchiveStatus = types.ObjectUnknown(clusterArchiveStatusAttrTypes)
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// replaceForLimits marks the plan as a replacement when the limits' change needs new nodes
// (localspec.ReplacementReason): every computed value unknown, and the reason in a warning. Terraform then
// plans the new cluster as a create (where the platform checks it) and the apply destroys the old one first.
func replaceForLimits(ctx context.Context, old, s cluster.Spec, plan *clusterModel, resp *resource.ModifyPlanResponse) bool {
	var d diag.Diagnostics
	ol, nl := localspec.Of(old), localspec.Of(s)
	if ol == nil || nl == nil {
		return false
	}
	why := localspec.ReplacementReason(ol.Limits, nl.Limits)
	if why == "" {
		return false
	}
	resp.RequiresReplace = append(resp.RequiresReplace, path.Root("local").AtName("limits"))
	resp.Diagnostics.AddAttributeWarning(path.Root("local").AtName("limits"), "Cluster Will Be Replaced",
		"This change to local.limits needs new nodes: "+why+". The apply destroys every node of the cluster, data included, and creates it again.")
	plan.ID = plan.Name
	plan.Nodes = types.ListUnknown(types.ObjectType{AttrTypes: clusterNodeAttrTypes})
	plan.Primary, plan.ConnectionURI = types.ObjectUnknown(clusterPrimaryAttrTypes), types.StringUnknown()
	plan.SynchronousStandbyNames, plan.SynchronousDegraded = types.StringUnknown(), types.BoolUnknown()
	plan.ArchiveStatus = types.ObjectUnknown(clusterArchiveStatusAttrTypes)
	setTLS(ctx, plan, nil, true, &resp.Diagnostics)
	if known(plan.Local) {
		attrs := plan.Local.Attributes()
		for k := range clusterLocalOutputs {
			attrs[k] = unknownOf(clusterLocalAttrTypes[k])
		}
		plan.Local, d = types.ObjectValue(clusterLocalAttrTypes, attrs)
		resp.Diagnostics.Append(d...)
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, plan)...)
	return true
}

func (r *clusterResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan clusterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	s, p := r.applied(ctx, plan, &resp.Diagnostics)
	if p == nil {
		return
	}
	tflog.Info(ctx, "creating cluster", map[string]any{"name": s.Name, "platform": string(s.Platform()), "nodes": len(s.Nodes)})
	st, err := p.Create(ctx, s)
	recordApply(ctx, plan, st, err, "Cluster Creation Failed",
		"Creating the cluster failed. What was created is recorded in state; apply again to finish it (or destroy it).", &resp.State, &resp.Diagnostics)
}

// recordApply records what an apply left: the status in state (unless nothing exists), and err under
// summary with what to do.
func recordApply(ctx context.Context, m clusterModel, st cluster.Status, err error, summary, what string, state *tfsdk.State, diags *diag.Diagnostics) {
	if err != nil {
		addClusterError(diags, summary, what, err)
		if len(st.Members) == 0 {
			return
		}
	}
	setStatus(ctx, &m, st, diags)
	diags.Append(state.Set(ctx, &m)...)
}

func (r *clusterResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state clusterModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	s, p := r.applied(ctx, state, &resp.Diagnostics)
	if p == nil {
		return
	}
	st, err := p.Read(ctx, s, cluster.Prior{Spec: &s, Members: priorMembers(ctx, state, &resp.Diagnostics)})
	if err != nil {
		addClusterError(&resp.Diagnostics, "Reading The Cluster Failed",
			"The cluster could not be observed, so the refresh changed nothing in state. Check that its machines are reachable, then refresh again.", err)
		return
	}
	if st.Gone() {
		tflog.Warn(ctx, "every node of the cluster is gone; removing it from state", map[string]any{"name": s.Name})
		resp.State.RemoveResource(ctx)
		return
	}
	setStatus(ctx, &state, st, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *clusterResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state clusterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	s, p := r.applied(ctx, plan, &resp.Diagnostics)
	if p == nil {
		return
	}
	st, err := p.Update(ctx, s, priorOf(ctx, state, true, &resp.Diagnostics))
	recordApply(ctx, plan, st, err, "Cluster Update Failed",
		"The apply stopped part-way. The state records what was observed; apply again to continue.", &resp.State, &resp.Diagnostics)
}

func (r *clusterResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state clusterModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	s, p := r.applied(ctx, state, &resp.Diagnostics)
	if p == nil {
		return
	}
	if err := p.Delete(ctx, s, cluster.Prior{Spec: &s, Members: priorMembers(ctx, state, &resp.Diagnostics)}); err != nil {
		addClusterError(&resp.Diagnostics, "Cluster Deletion Failed",
			"Some of the cluster could not be removed and it stays in state. Fix what follows and destroy again.", err)
	}
}

func (r *clusterResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	platform, _, _ := strings.Cut(req.ID, ":")
	p, ok := r.platforms[cluster.Platform(platform)]
	if !ok {
		resp.Diagnostics.AddError("Invalid Import ID", fmt.Sprintf("%q does not name a platform. Import pgnvme_cluster as "+
			"`local:<data_dir>` (e.g. `terraform import pgnvme_cluster.demo local:/var/lib/pgnvme/demo`) or `aws:<region>:<name>` "+
			"(e.g. `aws:eu-west-1:orders`).", req.ID))
		return
	}
	s, prior, err := p.Import(ctx, req.ID)
	if err != nil {
		addClusterError(&resp.Diagnostics, "Cluster Not Imported",
			"No cluster could be read from the import ID. Give the ID of a cluster this provider created, such as local:<its local.data_dir> or aws:<region>:<name>.", err)
		return
	}
	m := modelFromSpec(ctx, s, prior, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// attrPath turns a cluster attribute path into the framework's.
func attrPath(p []string) path.Path {
	if len(p) == 0 {
		return path.Empty()
	}
	out := path.Root(p[0])
	for i, name := range p[1:] {
		if mapAttributes[p[i]] {
			out = out.AtMapKey(name)
		} else {
			out = out.AtName(name)
		}
	}
	return out
}

// mapAttributes are the map attributes a field error's path may go into: the next step is a key.
var mapAttributes = map[string]bool{"parameters": true, "tags": true, "subnet_ids": true, "walg_env": true, "pgbackrest_options": true}

// addClusterError reports err: each cluster.FieldError at its attribute with its own summary, anything
// else under summary with what (what happened and what to do) before the error.
func addClusterError(diags *diag.Diagnostics, summary, what string, err error) {
	fields, others := cluster.FieldErrors(err)
	for _, fe := range fields {
		if len(fe.Path) == 0 {
			diags.AddError(fe.Summary, fe.Detail)
		} else {
			diags.AddAttributeError(attrPath(fe.Path), fe.Summary, fe.Detail)
		}
	}
	if len(others) > 0 {
		err := errors.Join(others...)
		if hint := awsclient.PermissionHint(err); hint != "" {
			what += " " + hint
		}
		diags.AddError(summary, what+"\n\n"+err.Error())
	}
}

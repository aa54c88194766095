package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

var (
	_ resource.Resource                   = (*synchronousReplicationResource)(nil)
	_ resource.ResourceWithImportState    = (*synchronousReplicationResource)(nil)
	_ resource.ResourceWithValidateConfig = (*synchronousReplicationResource)(nil)
)

// synchronousCommitLevels are the values of synchronous_commit.
var synchronousCommitLevels = []string{"on", "remote_apply", "remote_write", "local", "off"}

// NewSynchronousReplicationResource is the constructor of pgnvme_synchronous_replication.
func NewSynchronousReplicationResource() resource.Resource { return &synchronousReplicationResource{} }

type synchronousReplicationResource struct{}

type synchronousReplicationModel struct {
	ID                      types.String `tfsdk:"id"`
	Connection              types.Object `tfsdk:"server"`
	Method                  types.String `tfsdk:"method"`
	Number                  types.Int64  `tfsdk:"number"`
	StandbyNames            types.List   `tfsdk:"standby_names"`
	SynchronousCommit       types.String `tfsdk:"synchronous_commit"`
	WaitForStandbys         types.Bool   `tfsdk:"wait_for_standbys"`
	WaitTimeoutSeconds      types.Int64  `tfsdk:"wait_timeout_seconds"`
	SynchronousStandbyNames types.String `tfsdk:"synchronous_standby_names"`
}

func (r *synchronousReplicationResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_synchronous_replication"
}

func (r *synchronousReplicationResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Synchronous replication on a running primary: sets `synchronous_standby_names` " +
			"(`ANY n (...)` quorum or `FIRST n (...)` priority) and `synchronous_commit` with `ALTER SYSTEM`, reloads, " +
			"and waits until the standbys report the expected `sync_state`. A change made by hand shows as drift; " +
			"destroying resets both settings (commits become asynchronous).",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`host:port/database` of the primary.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"method": schema.StringAttribute{
				Optional: true,
				Computed: true,
				Default:  stringdefault.StaticString(string(quorum.MethodAny)),
				MarkdownDescription: "`any` (default: quorum, a commit waits for the fastest `number` standbys) or " +
					"`first` (priority: the first `number` connected standbys in list order).",
				Validators: []validator.String{stringvalidator.OneOf(string(quorum.MethodAny), string(quorum.MethodFirst))},
			},
			"number": schema.Int64Attribute{
				Optional:            true,
				Computed:            true,
				Default:             int64default.StaticInt64(1),
				MarkdownDescription: "Standbys that must confirm each commit; 1 to the number of `standby_names`. Defaults to `1`.",
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
			"standby_names": schema.ListAttribute{
				ElementType: types.StringType,
				Required:    true,
				MarkdownDescription: "The standbys' `application_name` values (for `first`, in priority order). Names " +
					"are quoted as identifiers where needed; PostgreSQL compares them case-insensitively, so names differing " +
					"only in case are duplicates.",
				Validators: []validator.List{
					listvalidator.SizeAtLeast(1),
					listvalidator.ValueStringsAre(stringvalidator.LengthBetween(1, 63)),
				},
			},
			"synchronous_commit": schema.StringAttribute{
				Optional: true,
				Computed: true,
				Default:  stringdefault.StaticString("on"),
				MarkdownDescription: "`on` (default: the standbys have flushed the commit's WAL), `remote_apply` (and " +
					"applied it), `remote_write` (written, not flushed), `local` or `off` (no wait for standbys).",
				Validators: []validator.String{stringvalidator.OneOf(synchronousCommitLevels...)},
			},
			"wait_for_standbys": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(true),
				MarkdownDescription: "After applying, wait until the connected named standbys show the expected " +
					"`sync_state` (`quorum` for `any`; `sync` and `potential` for `first`) and at least `number` of them " +
					"are streaming. Defaults to `true`.",
			},
			"wait_timeout_seconds": schema.Int64Attribute{
				Optional:            true,
				Computed:            true,
				Default:             int64default.StaticInt64(60),
				MarkdownDescription: "How long to wait for the standbys, in seconds. Defaults to `60`; 1 to 3600.",
				Validators:          []validator.Int64{int64validator.Between(1, 3600)},
			},
			"synchronous_standby_names": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The exact value written, e.g. `ANY 1 (s1, s2)` (the same rendering as the `synchronous_standby_names` function).",
			},
		},
		Blocks: map[string]schema.Block{"server": connectionResourceBlock()},
	}
}

// spec reads method, number and names into a quorum.Spec; ok is false while something is unknown.
func syncSpec(ctx context.Context, m synchronousReplicationModel, diags *diag.Diagnostics) (quorum.Spec, bool) {
	if m.Method.IsUnknown() || m.Number.IsUnknown() || m.StandbyNames.IsUnknown() {
		return quorum.Spec{}, false
	}
	var names []string
	diags.Append(m.StandbyNames.ElementsAs(ctx, &names, true)...)
	for _, n := range names {
		if n == "" {
			return quorum.Spec{}, false // an unknown element
		}
	}
	return quorum.Spec{Method: quorum.Method(stringOr(m.Method, string(quorum.MethodAny))), Number: int(int64Or(m.Number, 1)), Names: names}, !diags.HasError()
}

func (r *synchronousReplicationResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m synchronousReplicationModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, ok := syncSpec(ctx, m, &resp.Diagnostics)
	if !ok {
		return
	}
	if err := s.Validate(); err != nil {
		at := path.Root("standby_names")
		if s.Number < 1 || s.Number > len(s.Names) {
			at = path.Root("number")
		}
		resp.Diagnostics.AddAttributeError(at, "Invalid Synchronous Standbys",
			"These standbys cannot form synchronous_standby_names. Change the configuration as the error says.\n\n"+err.Error())
		return
	}
	for _, w := range s.Warnings() {
		resp.Diagnostics.AddAttributeWarning(path.Root("number"), "Fragile Synchronous Replication", w)
	}
}

func (r *synchronousReplicationResource) connection(ctx context.Context, obj types.Object, diags *diag.Diagnostics) (resourceConnectionModel, bool) {
	var c resourceConnectionModel
	if obj.IsNull() || obj.IsUnknown() {
		return c, false
	}
	diags.Append(obj.As(ctx, &c, basetypes.ObjectAsOptions{})...)
	return c, !diags.HasError()
}

// apply writes both settings, reloads, waits for them to take effect and, if asked, for the standbys.
func (r *synchronousReplicationResource) apply(ctx context.Context, plan *synchronousReplicationModel, password string, diags *diag.Diagnostics) {
	conn, ok := r.connection(ctx, plan.Connection, diags)
	if !ok {
		return
	}
	spec, ok := syncSpec(ctx, *plan, diags)
	if !ok {
		diags.AddError("Provider Bug", "standby_names was unknown at apply. This is a bug in the provider; please report it.")
		return
	}
	value, err := quorum.Format(spec)
	if err != nil {
		diags.AddAttributeError(path.Root("standby_names"), "Invalid Synchronous Standbys",
			"The standby names cannot be written as synchronous_standby_names. Fix standby_names or number.\n\n"+err.Error())
		return
	}
	cfg := pgConfig(conn.plain(), password)
	db := connect(ctx, cfg, diags)
	if db == nil {
		return
	}
	defer db.Close(ctx)
	want := pgclient.Synchronous{StandbyNames: value, Commit: stringOr(plan.SynchronousCommit, "on")}
	if plan.WaitForStandbys.ValueBool() {
		want.StandbysTimeout = time.Duration(int64Or(plan.WaitTimeoutSeconds, 60)) * time.Second
		want.InSync = func(standbys []pgclient.Standby) (bool, string) {
			live := make([]quorum.StandbyState, 0, len(standbys))
			for _, s := range standbys {
				live = append(live, quorum.StandbyState{Name: s.ApplicationName, State: s.State, SyncState: s.SyncState})
			}
			return quorum.Satisfied(spec, live, false)
		}
	}
	tflog.Info(ctx, "applying synchronous replication", map[string]any{"synchronous_standby_names": value,
		"synchronous_commit": want.Commit, "wait_for_standbys": want.InSync != nil, "timeout": want.StandbysTimeout.String()})
	err = db.ApplySynchronous(ctx, want)
	if pgclient.SyncApplied(err) {
		plan.ID = types.StringValue(connectionID(cfg))
		plan.SynchronousStandbyNames = types.StringValue(value)
	}
	if err != nil {
		addSyncError(ctx, diags, connectionID(cfg), value, err)
	}
}

// syncFailures says, per step of ApplySynchronous, what failed and what to do.
var syncFailures = map[pgclient.SyncStep][2]string{
	pgclient.SyncCheckPrimary: {"Server Check Failed", "Whether the server is a primary could not be checked. Check it is up and reachable, then apply again."},
	pgclient.SyncAlterSystem:  {"ALTER SYSTEM Failed", "The settings could not be written. Connect as a superuser, or as a role granted ALTER SYSTEM on both parameters."},
	pgclient.SyncReload:       {"Reload Failed", "The settings are written but the configuration could not be reloaded. Apply again, or run SELECT pg_reload_conf() as a superuser."},
	pgclient.SyncSetting:      {"Setting Not Applied", "The setting was written but did not take effect. Check the server's log for configuration errors, then apply again."},
	pgclient.SyncReadStandbys: {"Reading pg_stat_replication Failed", "The settings are in force, but the standbys' state could not be read. Grant the role pg_monitor, or set wait_for_standbys = false."},
	pgclient.SyncStandbys: {"Standbys Not In Sync", "The settings are in force, but the standbys did not reach the expected sync_state; commits wait until " +
		"enough standbys confirm. Start or repair the standbys (their application_name must match), or set wait_for_standbys = false."},
}

// addSyncError reports a failed ApplySynchronous: what happened, what to do, then the error.
func addSyncError(ctx context.Context, diags *diag.Diagnostics, server, value string, err error) {
	var se *pgclient.SyncError
	switch {
	case ctx.Err() != nil:
		diags.AddError("Interrupted", fmt.Sprintf("Configuring synchronous replication on %s was interrupted. Apply again to finish it.\n\n%s", server, err))
	case errors.Is(err, pgclient.ErrNotPrimary):
		diags.AddAttributeError(path.Root("server"), "Not A Primary", fmt.Sprintf("%s is a standby (pg_is_in_recovery() is true): synchronous "+
			"replication is configured on the primary. Point server at the primary.\n\n%s", server, err))
	case errors.As(err, &se):
		f := syncFailures[se.Step]
		diags.AddError(f[0], fmt.Sprintf("Applying synchronous_standby_names = '%s' on %s: %s\n\n%s", value, server, f[1], err))
	default:
		diags.AddError("Synchronous Replication Failed", fmt.Sprintf("Applying synchronous_standby_names = '%s' on %s failed. Apply again.\n\n%s", value, server, err))
	}
}

// applyPlanned applies the planned settings with the configuration's write-only password; ok is false
// when the plan or configuration could not be read.
func (r *synchronousReplicationResource) applyPlanned(ctx context.Context, p tfsdk.Plan, c tfsdk.Config, diags *diag.Diagnostics) (synchronousReplicationModel, bool) {
	var plan, config synchronousReplicationModel
	diags.Append(p.Get(ctx, &plan)...)
	diags.Append(c.Get(ctx, &config)...)
	if diags.HasError() {
		return plan, false
	}
	r.apply(ctx, &plan, writeOnlyPassword(ctx, config.Connection, diags), diags)
	return plan, true
}

func (r *synchronousReplicationResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	plan, ok := r.applyPlanned(ctx, req.Plan, req.Config, &resp.Diagnostics)
	if !ok || plan.ID.IsUnknown() {
		return // nothing was written
	}
	// Even when the wait failed, the settings are live: record them so the next plan sees the real state.
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *synchronousReplicationResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	plan, ok := r.applyPlanned(ctx, req.Plan, req.Config, &resp.Diagnostics)
	if !ok || plan.SynchronousStandbyNames.IsUnknown() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// stateConfig reads the state and the connection settings refresh and destroy use (no write-only
// password: Terraform gives it to create and update only).
func (r *synchronousReplicationResource) stateConfig(ctx context.Context, st tfsdk.State, diags *diag.Diagnostics) (synchronousReplicationModel, pgclient.Config, bool) {
	var state synchronousReplicationModel
	diags.Append(st.Get(ctx, &state)...)
	if diags.HasError() {
		return state, pgclient.Config{}, false
	}
	conn, ok := r.connection(ctx, state.Connection, diags)
	if !ok {
		return state, pgclient.Config{}, false
	}
	return state, pgConfig(conn.plain(), ""), true
}

func (r *synchronousReplicationResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	state, cfg, ok := r.stateConfig(ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	db := connect(ctx, cfg, &resp.Diagnostics)
	if db == nil {
		return
	}
	defer db.Close(ctx)
	value, err := db.Setting(ctx, "synchronous_standby_names")
	commit, err2 := db.Setting(ctx, "synchronous_commit")
	if err = errors.Join(err, err2); err != nil {
		resp.Diagnostics.AddError("Reading Settings Failed", fmt.Sprintf("The synchronous replication settings could not be "+
			"read from %s, so drift cannot be checked. Check the server is up and reachable, then refresh again.\n\n%s", connectionID(cfg), err))
		return
	}
	if strings.TrimSpace(value) == "" {
		// Nothing synchronous is configured any more: the resource is gone, and the next apply re-creates it.
		tflog.Warn(ctx, "synchronous_standby_names is empty on the server; removing the resource from state", map[string]any{"server": connectionID(cfg)})
		resp.State.RemoveResource(ctx)
		return
	}
	spec, err := quorum.Parse(value)
	if err != nil {
		resp.Diagnostics.AddError("Unreadable synchronous_standby_names", fmt.Sprintf("The server's synchronous_standby_names %q "+
			"cannot be parsed. Fix it on the server (ALTER SYSTEM), or apply this resource to overwrite it.\n\n%s", value, err))
		return
	}
	names, d := types.ListValueFrom(ctx, types.StringType, spec.Names)
	resp.Diagnostics.Append(d...)
	state.Method = types.StringValue(string(spec.Method))
	state.Number = types.Int64Value(int64(spec.Number))
	state.StandbyNames = names
	state.SynchronousCommit = types.StringValue(commit)
	state.SynchronousStandbyNames = types.StringValue(value)
	state.ID = types.StringValue(connectionID(cfg))
	if state.WaitForStandbys.IsNull() {
		state.WaitForStandbys = types.BoolValue(true)
	}
	if state.WaitTimeoutSeconds.IsNull() {
		state.WaitTimeoutSeconds = types.Int64Value(60)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *synchronousReplicationResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	_, cfg, ok := r.stateConfig(ctx, req.State, &resp.Diagnostics)
	if !ok {
		return
	}
	db, err := pgclient.Connect(ctx, cfg)
	if err != nil {
		var opErr *net.OpError
		if errors.As(err, &opErr) {
			resp.Diagnostics.AddWarning("Server Unreachable", fmt.Sprintf("%s cannot be reached, so its synchronous replication "+
				"settings were not reset; they go with the server. If it comes back, reset synchronous_standby_names and "+
				"synchronous_commit by hand.\n\n%s", connectionID(cfg), err))
			return
		}
		resp.Diagnostics.AddAttributeError(path.Root("server"), "Cannot Connect To PostgreSQL", fmt.Sprintf("Connecting to %s "+
			"to reset its settings failed. Check the credentials (PGPASSWORD or a passfile: destroy gets no password_wo) "+
			"and sslmode.\n\n%s", connectionID(cfg), err))
		return
	}
	defer db.Close(ctx)
	tflog.Info(ctx, "resetting synchronous replication", map[string]any{"server": connectionID(cfg)})
	for _, name := range []string{"synchronous_standby_names", "synchronous_commit"} {
		if err := db.AlterSystemReset(ctx, name); err != nil {
			resp.Diagnostics.AddError("ALTER SYSTEM RESET Failed", fmt.Sprintf("%s could not be reset on %s. Connect as a "+
				"superuser or a role granted ALTER SYSTEM on it, then destroy again.\n\n%s", name, connectionID(cfg), err))
			return
		}
	}
	if err := db.ReloadConf(ctx); err != nil {
		resp.Diagnostics.AddError("Reload Failed", fmt.Sprintf("The settings are reset on %s but the configuration could "+
			"not be reloaded. Run SELECT pg_reload_conf() as a superuser.\n\n%s", connectionID(cfg), err))
	}
}

// ImportState takes host:port/database; username and sslmode start at their defaults.
func (r *synchronousReplicationResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	host, port, db, err := parseConnectionID(req.ID)
	if err != nil {
		resp.Diagnostics.AddError("Invalid Import ID", "The import ID names no server. Import pgnvme_synchronous_replication "+
			"by the primary's host:port/database, e.g. 127.0.0.1:5432/postgres.\n\n"+err.Error())
		return
	}
	conn, d := types.ObjectValue(resourceConnectionAttrTypes, map[string]attr.Value{
		"host": types.StringValue(host), "port": types.Int64Value(int64(port)), "database": types.StringValue(db),
		"username": types.StringValue(defaultPGUser), "sslmode": types.StringValue(defaultSSLMode), "password_wo": types.StringNull(),
		"sslrootcert": types.StringNull(), "sslcert": types.StringNull(), "sslkey": types.StringNull(),
	})
	resp.Diagnostics.Append(d...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("server"), conn)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
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

var resourceConnectionAttrTypes = map[string]attr.Type{
	"host": types.StringType, "port": types.Int64Type, "database": types.StringType,
	"username": types.StringType, "sslmode": types.StringType, "password_wo": types.StringType,
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
			"server": connectionResourceAttribute(),
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
		resp.Diagnostics.AddAttributeError(at, "Invalid Synchronous Standbys", err.Error())
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
		diags.AddError("Provider Bug", "This is a bug in the provider: standby_names was unknown at apply. Please report it.")
		return
	}
	value, err := quorum.Format(spec)
	if err != nil {
		diags.AddAttributeError(path.Root("standby_names"), "Invalid Synchronous Standbys", err.Error())
		return
	}
	cfg := pgConfig(conn.plain(), password)
	db := connect(ctx, cfg, diags)
	if db == nil {
		return
	}
	defer db.Close(ctx)
	if !r.requirePrimary(ctx, db, cfg, diags) {
		return
	}
	commit := stringOr(plan.SynchronousCommit, "on")
	tflog.Info(ctx, "applying synchronous replication", map[string]any{"synchronous_standby_names": value, "synchronous_commit": commit})
	for _, set := range [][2]string{{"synchronous_standby_names", value}, {"synchronous_commit", commit}} {
		if err := db.AlterSystemSet(ctx, set[0], set[1]); err != nil {
			diags.AddError("ALTER SYSTEM Failed", fmt.Sprintf("Setting %s on %s failed: %s", set[0], connectionID(cfg), err))
			return
		}
	}
	if err := db.ReloadConf(ctx); err != nil {
		diags.AddError("Reload Failed", err.Error())
		return
	}
	if err := db.WaitSetting(ctx, "synchronous_standby_names", value, 30*time.Second); err != nil {
		diags.AddError("Setting Not Applied", err.Error())
		return
	}
	plan.ID = types.StringValue(connectionID(cfg))
	plan.SynchronousStandbyNames = types.StringValue(value)
	if !plan.WaitForStandbys.ValueBool() {
		return
	}
	timeout := time.Duration(int64Or(plan.WaitTimeoutSeconds, 60)) * time.Second
	deadline := time.Now().Add(timeout)
	tflog.Info(ctx, "waiting for the standbys' sync_state", map[string]any{"timeout": timeout.String()})
	for {
		standbys, err := db.Standbys(ctx)
		if err != nil {
			diags.AddError("Reading pg_stat_replication Failed", err.Error())
			return
		}
		live := make([]quorum.StandbyState, 0, len(standbys))
		for _, s := range standbys {
			live = append(live, quorum.StandbyState{Name: s.ApplicationName, State: s.State, SyncState: s.SyncState})
		}
		ok, why := quorum.Satisfied(spec, live, false)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			diags.AddError("Standbys Not In Sync",
				fmt.Sprintf("synchronous_standby_names = '%s' is applied on %s, but after %s: %s. Commits wait until "+
					"enough standbys confirm. Start or repair the standbys (their application_name must match), or set "+
					"wait_for_standbys = false.", value, connectionID(cfg), timeout, why))
			return
		}
		select {
		case <-ctx.Done():
			diags.AddError("Interrupted", ctx.Err().Error())
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (r *synchronousReplicationResource) requirePrimary(ctx context.Context, db *pgclient.Conn, cfg pgclient.Config, diags *diag.Diagnostics) bool {
	standby, err := db.IsInRecovery(ctx)
	if err != nil {
		diags.AddError("Server Check Failed", err.Error())
		return false
	}
	if standby {
		diags.AddAttributeError(path.Root("server"), "Not A Primary",
			fmt.Sprintf("%s is a standby (pg_is_in_recovery() is true): synchronous replication is configured on the "+
				"primary. Point server at the primary.", connectionID(cfg)))
		return false
	}
	return true
}

func writeOnlyPassword(ctx context.Context, cfgConn types.Object, diags *diag.Diagnostics) string {
	if cfgConn.IsNull() || cfgConn.IsUnknown() {
		return ""
	}
	var c resourceConnectionModel
	diags.Append(cfgConn.As(ctx, &c, basetypes.ObjectAsOptions{})...)
	return c.PasswordWO.ValueString()
}

func (r *synchronousReplicationResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan, config synchronousReplicationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, &plan, writeOnlyPassword(ctx, config.Connection, &resp.Diagnostics), &resp.Diagnostics)
	if plan.ID.IsUnknown() {
		return // nothing was written
	}
	// Even when the wait failed, the settings are live: record them so the next plan sees the real state.
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *synchronousReplicationResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, config synchronousReplicationModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, &plan, writeOnlyPassword(ctx, config.Connection, &resp.Diagnostics), &resp.Diagnostics)
	if plan.SynchronousStandbyNames.IsUnknown() {
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
	if err != nil {
		resp.Diagnostics.AddError("Reading Settings Failed", err.Error())
		return
	}
	commit, err := db.Setting(ctx, "synchronous_commit")
	if err != nil {
		resp.Diagnostics.AddError("Reading Settings Failed", err.Error())
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
		resp.Diagnostics.AddError("Unreadable synchronous_standby_names",
			fmt.Sprintf("The server's synchronous_standby_names %q cannot be parsed: %s", value, err))
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
			resp.Diagnostics.AddWarning("Server Unreachable",
				fmt.Sprintf("%s cannot be reached, so its synchronous replication settings were not reset; they go "+
					"with the server. %s", connectionID(cfg), err))
			return
		}
		resp.Diagnostics.AddAttributeError(path.Root("server"), "Cannot Connect To PostgreSQL", err.Error())
		return
	}
	defer db.Close(ctx)
	tflog.Info(ctx, "resetting synchronous replication", map[string]any{"server": connectionID(cfg)})
	for _, name := range []string{"synchronous_standby_names", "synchronous_commit"} {
		if err := db.AlterSystemReset(ctx, name); err != nil {
			resp.Diagnostics.AddError("ALTER SYSTEM RESET Failed", err.Error())
			return
		}
	}
	if err := db.ReloadConf(ctx); err != nil {
		resp.Diagnostics.AddError("Reload Failed", err.Error())
	}
}

// ImportState takes host:port/database; username and sslmode start at their defaults.
func (r *synchronousReplicationResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	host, port, db, err := parseConnectionID(req.ID)
	if err != nil {
		resp.Diagnostics.AddError("Invalid Import ID", err.Error())
		return
	}
	conn, d := types.ObjectValue(resourceConnectionAttrTypes, map[string]attr.Value{
		"host": types.StringValue(host), "port": types.Int64Value(int64(port)), "database": types.StringValue(db),
		"username": types.StringValue(defaultPGUser), "sslmode": types.StringValue(defaultSSLMode), "password_wo": types.StringNull(),
	})
	resp.Diagnostics.Append(d...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("server"), conn)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

// parseConnectionID reads host:port/database (IPv6 hosts in brackets).
func parseConnectionID(id string) (string, int, string, error) {
	hostPort, db, ok := strings.Cut(id, "/")
	if !ok || db == "" {
		return "", 0, "", fmt.Errorf("import ID %q must be host:port/database, e.g. 127.0.0.1:5432/postgres", id)
	}
	host, portText, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", 0, "", fmt.Errorf("import ID %q must be host:port/database, e.g. 127.0.0.1:5432/postgres: %w", id, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, "", fmt.Errorf("import ID %q has port %q; use 1 to 65535", id, portText)
	}
	return host, port, db, nil
}

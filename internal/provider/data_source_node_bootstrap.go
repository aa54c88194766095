package provider

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

var (
	_ datasource.DataSource                   = (*nodeBootstrapDataSource)(nil)
	_ datasource.DataSourceWithValidateConfig = (*nodeBootstrapDataSource)(nil)
)

// NewNodeBootstrapDataSource is the constructor of pgnvme_node_bootstrap.
func NewNodeBootstrapDataSource() datasource.DataSource { return &nodeBootstrapDataSource{} }

type nodeBootstrapDataSource struct{}

type nodeBootstrapModel struct {
	Name              types.String `tfsdk:"name"`
	PostgresMajor     types.Int64  `tfsdk:"postgres_major"`
	Node              types.String `tfsdk:"node"`
	Nodes             types.List   `tfsdk:"nodes"`
	InstanceType      types.String `tfsdk:"instance_type"`
	Region            types.String `tfsdk:"region"`
	AllowedCIDRs      types.List   `tfsdk:"allowed_cidrs"`
	Synchronous       types.Object `tfsdk:"synchronous"`
	Parameters        types.Map    `tfsdk:"parameters"`
	Archive           types.Object `tfsdk:"archive"`
	SSMParameterPath  types.String `tfsdk:"ssm_parameter_path"`
	Patroni           types.Object `tfsdk:"patroni"`
	BackupSchedule    types.String `tfsdk:"backup_schedule"`
	UserData          types.String `tfsdk:"user_data"`
	UserDataGzip      types.String `tfsdk:"user_data_base64gzip"`
	PatroniYAML       types.String `tfsdk:"patroni_yaml"`
	Files             types.Map    `tfsdk:"files"`
	EtcdMember        types.Bool   `tfsdk:"etcd_member"`
	SSMParameterNames types.Map    `tfsdk:"ssm_parameter_names"`
}

type bootstrapNodeInput struct {
	Name      types.String `tfsdk:"name"`
	PrivateIP types.String `tfsdk:"private_ip"`
	Zone      types.String `tfsdk:"zone"`
}

type bootstrapArchiveInput struct {
	WALGEnv           types.Map `tfsdk:"walg_env"`
	PgBackRestOptions types.Map `tfsdk:"pgbackrest_options"`
}

type patroniInput struct {
	TTL          types.Int64 `tfsdk:"ttl"`
	LoopWait     types.Int64 `tfsdk:"loop_wait"`
	RetryTimeout types.Int64 `tfsdk:"retry_timeout"`
}

var ipv4Pattern = regexp.MustCompile(`^(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])){3}$`)

func (d *nodeBootstrapDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_node_bootstrap"
}

func (d *nodeBootstrapDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The cloud-init user-data of one EC2 node of a pgnvme cluster, for instances you launch yourself " +
			"(launch templates, `aws_instance`): instance-store NVMe prepared on every boot (RAID0 for several disks, XFS " +
			"mounted by UUID, PostgreSQL never started on an empty mount point), PostgreSQL and Patroni 4 from the PostgreSQL " +
			"project's apt repository, etcd, Patroni with `synchronous_mode: quorum`, WAL-G or pgBackRest archiving, and the " +
			"passwords read from SSM Parameter Store at boot. The user-data holds no secret: only the SSM parameter names. " +
			"Rendering only: nothing is created, and no AWS call is made.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Cluster name: Patroni's scope, the etcd cluster token and the default SSM path `/pgnvme/<name>`.",
				Validators:          []validator.String{pureStringValidator("Invalid Cluster Name", cluster.CheckName)},
			},
			"postgres_major": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: fmt.Sprintf("PostgreSQL major version, %d to %d. Defaults to %d.", capacity.MinPostgresMajor, capacity.MaxPostgresMajor, capacity.DefaultPostgresMajor),
				Validators:          []validator.Int64{int64validator.Between(capacity.MinPostgresMajor, capacity.MaxPostgresMajor)},
			},
			"node": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Which of `nodes` to render.",
			},
			"nodes": schema.ListNestedAttribute{
				Required: true,
				MarkdownDescription: "Every node of the cluster in priority order (the first is the preferred primary), 1 to 9, each " +
					"with its stable private IPv4 address (typically an ENI's, so it survives replacing the instance).",
				Validators: []validator.List{listvalidator.SizeBetween(1, 9)},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":       schema.StringAttribute{Required: true, MarkdownDescription: "Node name (Patroni member, etcd member and application_name).", Validators: []validator.String{pureStringValidator("Invalid Node Name", cluster.CheckNodeName)}},
					"private_ip": schema.StringAttribute{Required: true, MarkdownDescription: "The node's private IPv4 address.", Validators: []validator.String{stringvalidator.RegexMatches(ipv4Pattern, "must be an IPv4 address such as 10.0.1.10")}},
					"zone":       schema.StringAttribute{Required: true, MarkdownDescription: "The node's availability zone, such as `eu-west-1a` (typically from `pgnvme_placement`)."},
				}},
			},
			"instance_type": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "EC2 instance type, e.g. `m6id.4xlarge`: its instance-store disk count and architecture come from " +
					"the embedded catalog (see `pgnvme_instance_types`). A type without instance-store SSD is refused.",
			},
			"region": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "AWS region the node reads its SSM parameters from.",
				Validators:          []validator.String{regionName()},
			},
			"allowed_cidrs": schema.ListAttribute{
				ElementType: types.StringType,
				Required:    true,
				MarkdownDescription: "Networks clients and the other nodes connect from (pg_hba, scram-sha-256), typically the VPC's " +
					"CIDR; they must hold every node's address.",
				Validators: []validator.List{listvalidator.SizeAtLeast(1)},
			},
			"parameters": schema.MapAttribute{
				ElementType:         types.StringType,
				Optional:            true,
				MarkdownDescription: "PostgreSQL parameters, typically `data.pgnvme_capacity_plan.x.postgres_parameters`.",
			},
			"ssm_parameter_path": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "SSM Parameter Store path of the cluster's passwords (SecureStrings `superuser-password`, `replication-password`, `restapi-password` under it). Defaults to `/pgnvme/<name>`.",
				Validators:          []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^(/[A-Za-z0-9_.-]+)+$`), "must be an SSM path such as /pgnvme/orders")},
			},
			"backup_schedule": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "When the primary takes a base backup, as a systemd calendar expression (UTC), written into the cluster's " +
					"Patroni configuration when it is created (`postgresql.pgnvme_backup`; the nodes check it every minute). Defaults to `daily`. Needs `archive`.",
			},
			"user_data":            schema.StringAttribute{Computed: true, MarkdownDescription: "The `#cloud-config` document, uncompressed (about 34 KB: above EC2's 16 KB limit, so launch with `user_data_base64gzip`)."},
			"user_data_base64gzip": schema.StringAttribute{Computed: true, MarkdownDescription: "`user_data` gzip-compressed and base64-encoded, for `aws_instance.user_data_base64` or a launch template's `user_data`."},
			"patroni_yaml":         schema.StringAttribute{Computed: true, MarkdownDescription: "The node's Patroni configuration (also written by the user-data)."},
			"files":                schema.MapAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Every file the user-data writes, by path."},
			"etcd_member":          schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether this node runs an etcd member (the first 3 nodes of 3 or more, else the first)."},
			"ssm_parameter_names":  schema.MapAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "The SSM parameters the node reads at boot, by role (`superuser`, `replication`, `restapi`): create them as SecureStrings before launching. While its local etcd member is unhealthy, an etcd member also polls `<ssm_parameter_path>/takeover`, a plain String that only `pgnvme_cluster` writes (for `accept_data_loss_at_lsn`): do not create it; its absence is the normal case."},
		},
		// Blocks, not nested attributes: Terraform drops an unknown key of a nested attribute's object before
		// the provider sees it (hashicorp/terraform#33570), so a misspelt argument would be ignored; in a block
		// it is an error at validate.
		Blocks: map[string]schema.Block{
			"synchronous": schema.SingleNestedBlock{
				MarkdownDescription: "Synchronous replication, with `pgnvme_cluster`'s meanings. Patroni's quorum mode is `ANY`, so `method` is `any` only.",
				Attributes: map[string]schema.Attribute{
					"method":          schema.StringAttribute{Optional: true, MarkdownDescription: "`any` (default).", Validators: []validator.String{stringvalidator.OneOf("any")}},
					"number":          schema.Int64Attribute{Optional: true, MarkdownDescription: "Standbys that confirm each commit (`synchronous_node_count`). Defaults to 1 (0 for one node).", Validators: []validator.Int64{int64validator.Between(0, 8)}},
					"data_durability": schema.StringAttribute{Optional: true, MarkdownDescription: "`required` (default; Patroni's `synchronous_mode_strict`) or `preferred`.", Validators: []validator.String{stringvalidator.OneOf("required", "preferred")}},
					"commit":          schema.StringAttribute{Optional: true, MarkdownDescription: "`synchronous_commit`; defaults to `on`.", Validators: []validator.String{stringvalidator.OneOf(synchronousCommitLevels...)}},
				},
			},
			"archive": schema.SingleNestedBlock{
				MarkdownDescription: "Continuous archiving with exactly one archiver. Credentials never go here: the node uses its instance role.",
				Attributes: map[string]schema.Attribute{
					"walg_env":           schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "WAL-G environment, typically `pgnvme_archive_bucket.x.walg_env`."},
					"pgbackrest_options": schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "pgBackRest options, typically `pgnvme_archive_bucket.x.pgbackrest_options`."},
				},
			},
			"patroni": schema.SingleNestedBlock{
				MarkdownDescription: "Patroni timings in seconds (Patroni's defaults: ttl 30, loop_wait 10, retry_timeout 10; Patroni needs loop_wait + 2 x retry_timeout <= ttl).",
				Attributes: map[string]schema.Attribute{
					"ttl":           schema.Int64Attribute{Optional: true, MarkdownDescription: "Leader key TTL.", Validators: []validator.Int64{int64validator.Between(20, 3600)}},
					"loop_wait":     schema.Int64Attribute{Optional: true, MarkdownDescription: "Seconds between Patroni's loops.", Validators: []validator.Int64{int64validator.Between(1, 600)}},
					"retry_timeout": schema.Int64Attribute{Optional: true, MarkdownDescription: "DCS and PostgreSQL retry timeout.", Validators: []validator.Int64{int64validator.Between(1, 600)}},
				},
			},
		},
	}
}

func (d *nodeBootstrapDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m nodeBootstrapModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if known(m.InstanceType) {
		if _, err := instanceStoreType(m.InstanceType.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("instance_type"), "Instance Type Without Instance Store", err.Error())
		}
	}
	if !known(m.Node) || !known(m.Nodes) {
		return
	}
	nodes, _, ok := bootstrapNodes(ctx, m, &resp.Diagnostics)
	if ok && !slices.ContainsFunc(nodes, func(n bootstrap.Peer) bool { return n.Name == m.Node.ValueString() }) {
		resp.Diagnostics.AddAttributeError(path.Root("node"), "Unknown Node",
			fmt.Sprintf("node is %q, which is not one of nodes. Name one of the nodes listed in nodes.", m.Node.ValueString()))
	}
}

// instanceStoreType is the embedded catalog's record of an instance type with instance-store SSD.
func instanceStoreType(name string) (catalog.InstanceType, error) {
	snap, err := catalog.Embedded()
	if err != nil {
		return catalog.InstanceType{}, fmt.Errorf("the embedded catalog could not be read; this is a bug in the provider, please report it: %w", err)
	}
	i := slices.IndexFunc(snap.Types, func(t catalog.InstanceType) bool { return t.Name == name })
	if i < 0 {
		return catalog.InstanceType{}, fmt.Errorf("%q has no instance-store SSD in the embedded catalog (%s): the cluster's data lives on "+
			"instance-store NVMe. Choose a type with local NVMe, e.g. from data.pgnvme_capacity_plan.x.instance_type", name, snap.Date)
	}
	return snap.Types[i], nil
}

// bootstrapNodes are the configured nodes; ok is false while any is unknown.
func bootstrapNodes(ctx context.Context, m nodeBootstrapModel, diags *diag.Diagnostics) ([]bootstrap.Peer, map[string]string, bool) {
	var in []bootstrapNodeInput
	diags.Append(m.Nodes.ElementsAs(ctx, &in, false)...)
	out := make([]bootstrap.Peer, 0, len(in))
	zones := map[string]string{}
	for _, n := range in {
		if !known(n.Name) || !known(n.PrivateIP) || n.Zone.IsUnknown() {
			return nil, nil, false
		}
		out = append(out, bootstrap.Peer{Name: n.Name.ValueString(), IP: n.PrivateIP.ValueString()})
		zones[n.Name.ValueString()] = n.Zone.ValueString()
	}
	return out, zones, !diags.HasError()
}

func (d *nodeBootstrapDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m nodeBootstrapModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	nodes, zones, _ := bootstrapNodes(ctx, m, &resp.Diagnostics)
	t, err := instanceStoreType(m.InstanceType.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("instance_type"), "Instance Type Without Instance Store", err.Error())
	}
	if resp.Diagnostics.HasError() {
		return
	}
	// The neutral spec and its defaults, as pgnvme_cluster has them.
	in := cluster.Input{Name: m.Name.ValueString()}
	for _, n := range nodes {
		in.Nodes = append(in.Nodes, cluster.Node{Name: n.Name})
	}
	var sy synchronousInput
	if !m.Synchronous.IsNull() {
		resp.Diagnostics.Append(m.Synchronous.As(ctx, &sy, basetypes.ObjectAsOptions{})...)
		in.Synchronous = cluster.SynchronousInput{Method: sy.Method.ValueString(), DataDurability: sy.DataDurability.ValueString(), Commit: sy.Commit.ValueString()}
		if !sy.Number.IsNull() {
			n := int(sy.Number.ValueInt64())
			in.Synchronous.Number = &n
		}
	}
	resp.Diagnostics.Append(m.Parameters.ElementsAs(ctx, &in.Parameters, true)...)
	if !m.Archive.IsNull() {
		var a bootstrapArchiveInput
		resp.Diagnostics.Append(m.Archive.As(ctx, &a, basetypes.ObjectAsOptions{})...)
		in.Archive = &cluster.ArchiveInput{}
		resp.Diagnostics.Append(a.WALGEnv.ElementsAs(ctx, &in.Archive.WALGEnv, true)...)
		resp.Diagnostics.Append(a.PgBackRestOptions.ElementsAs(ctx, &in.Archive.PgBackRestOptions, true)...)
	}
	if !m.BackupSchedule.IsNull() {
		if in.Archive == nil {
			resp.Diagnostics.AddAttributeError(path.Root("backup_schedule"), "Backup Without Archive",
				"Base backups are written to the archive, and this node has none: set archive, or remove backup_schedule.")
			return
		}
		in.Backup = &cluster.BackupInput{Schedule: m.BackupSchedule.ValueString()}
	}
	spec := cluster.FromInput(in)
	major := capacity.DefaultPostgresMajor
	if known(m.PostgresMajor) {
		major = int(m.PostgresMajor.ValueInt64())
	}
	c := bootstrap.Cluster{Name: spec.Name, PostgresMajor: major, Nodes: spec.NodeNames(), Synchronous: spec.Synchronous, Parameters: spec.Parameters, Archive: spec.Archive}
	n := bootstrap.EC2Node{Name: m.Node.ValueString(), Zone: zones[m.Node.ValueString()], InstanceType: t.Name, DiskCount: t.DiskCount, Region: m.Region.ValueString(),
		SSM: bootstrap.SSMParameters{Path: m.SSMParameterPath.ValueString()}}
	if len(t.Architectures) > 0 {
		n.Architecture = t.Architectures[0]
		if slices.Contains(t.Architectures, bootstrap.ArchX86_64) {
			n.Architecture = bootstrap.ArchX86_64
		}
	}
	for _, p := range nodes {
		if p.Name == n.Name {
			n.PrivateIP = p.IP
		} else {
			n.Peers = append(n.Peers, p)
		}
	}
	resp.Diagnostics.Append(m.AllowedCIDRs.ElementsAs(ctx, &n.AllowedCIDRs, false)...)
	if !m.Patroni.IsNull() {
		var pi patroniInput
		resp.Diagnostics.Append(m.Patroni.As(ctx, &pi, basetypes.ObjectAsOptions{})...)
		n.Patroni = bootstrap.Patroni{TTL: int(pi.TTL.ValueInt64()), LoopWait: int(pi.LoopWait.ValueInt64()), RetryTimeout: int(pi.RetryTimeout.ValueInt64())}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	u, err := bootstrap.RenderEC2(c, n)
	if err != nil {
		resp.Diagnostics.AddError("Node Bootstrap Not Rendered",
			"The node's user-data could not be rendered from this configuration. Change what follows and plan again.\n\n"+err.Error())
		return
	}
	n = n.WithDefaults(c)
	files := map[string]string{}
	for _, f := range u.Files {
		files[f.Path] = f.Content
	}
	var dd diag.Diagnostics
	m.UserData = types.StringValue(u.CloudConfig)
	m.UserDataGzip = types.StringValue(base64.StdEncoding.EncodeToString(u.Gzip()))
	m.PatroniYAML = types.StringValue(u.PatroniYAML)
	m.EtcdMember = types.BoolValue(u.EtcdMember)
	m.Files, dd = types.MapValueFrom(ctx, types.StringType, files)
	resp.Diagnostics.Append(dd...)
	m.SSMParameterNames, dd = types.MapValueFrom(ctx, types.StringType, map[string]string{
		"superuser": n.SSM.SuperuserPassword, "replication": n.SSM.ReplicationPassword, "restapi": n.SSM.RESTAPIPassword,
	})
	resp.Diagnostics.Append(dd...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

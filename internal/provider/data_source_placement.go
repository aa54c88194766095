package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/placement"
)

var (
	_ datasource.DataSource                   = (*placementDataSource)(nil)
	_ datasource.DataSourceWithConfigure      = (*placementDataSource)(nil)
	_ datasource.DataSourceWithValidateConfig = (*placementDataSource)(nil)
)

// NewPlacementDataSource is the constructor of pgnvme_placement.
func NewPlacementDataSource() datasource.DataSource { return &placementDataSource{} }

type placementDataSource struct {
	clients *Clients
}

type placementModel struct {
	InstanceType      types.String `tfsdk:"instance_type"`
	NodeCount         types.Int64  `tfsdk:"node_count"`
	NodeNames         types.List   `tfsdk:"node_names"`
	Region            types.String `tfsdk:"region"`
	ZoneIDs           types.List   `tfsdk:"zone_ids"`
	Zones             types.List   `tfsdk:"zones"`
	Source            types.String `tfsdk:"source"`
	AllowSharedZones  types.Bool   `tfsdk:"allow_shared_zones"`
	SynchronousNumber types.Int64  `tfsdk:"synchronous_number"`

	Primary          *nodeModel   `tfsdk:"primary"`
	Standbys         []nodeModel  `tfsdk:"standbys"`
	Nodes            []nodeModel  `tfsdk:"nodes"`
	DistinctZones    types.Int64  `tfsdk:"distinct_zones"`
	SurvivesZoneLoss types.Bool   `tfsdk:"survives_zone_loss"`
	CatalogDate      types.String `tfsdk:"catalog_date"`
}

type nodeModel struct {
	Name   string `tfsdk:"name"`
	Zone   string `tfsdk:"zone"`
	ZoneID string `tfsdk:"zone_id"`
}

// instanceTypePattern matches EC2 instance type names such as m6id.4xlarge or i4i.metal.
var instanceTypePattern = regexp.MustCompile(`^[a-z][a-z0-9-]*\.[a-z0-9-]+$`)

func (d *placementDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_placement"
}

func nodeAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"name":    schema.StringAttribute{Computed: true, MarkdownDescription: "Node name."},
		"zone":    schema.StringAttribute{Computed: true, MarkdownDescription: "Availability zone name in this account, e.g. `us-east-1b`."},
		"zone_id": schema.StringAttribute{Computed: true, MarkdownDescription: "Availability zone ID, the same physical zone in every account, e.g. `use1-az1`."},
	}
}

func (d *placementDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Places a primary and its standbys in distinct availability zones (compared by zone " +
			"ID) where the instance type is offered, and says whether the cluster survives losing any one zone. " +
			"Deterministic: the same input gives the same placement. Fails at plan time when the type is offered in " +
			"fewer zones than there are nodes, unless `allow_shared_zones` is set.",
		Attributes: map[string]schema.Attribute{
			"instance_type": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Instance type with local NVMe, e.g. `m6id.4xlarge` (typically `pgnvme_capacity_plan.x.instance_type`).",
				Validators:          []validator.String{stringvalidator.RegexMatches(instanceTypePattern, "must be an instance type name such as m6id.4xlarge")},
			},
			"node_count": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: "Nodes: one primary and `node_count - 1` standbys. Defaults to `3`; 1 to 9.",
				Validators:          []validator.Int64{int64validator.Between(1, 9)},
			},
			"node_names": schema.ListAttribute{
				ElementType: types.StringType,
				Optional:    true,
				MarkdownDescription: "Names for the nodes, primary first; one per node, unique, lower-case letters, " +
					"digits, `_` and `-`, starting with a letter, at most 63 characters. Defaults to `node-1` .. `node-N`.",
				Validators: []validator.List{
					listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(pureStringValidator("Invalid Node Name", cluster.CheckNodeName)),
				},
			},
			"region": regionAttribute(),
			"zone_ids": schema.ListAttribute{
				ElementType:         types.StringType,
				Optional:            true,
				MarkdownDescription: "Candidate zone IDs. Unset: every zone of the region where the type is offered. Conflicts with `zones`.",
				Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(),
					listvalidator.ConflictsWith(path.MatchRoot("zones"))},
			},
			"zones": schema.ListAttribute{
				ElementType:         types.StringType,
				Optional:            true,
				MarkdownDescription: "Candidate zones by name, resolved to zone IDs. Conflicts with `zone_ids`.",
				Validators:          []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues()},
			},
			"source": sourceAttribute(),
			"allow_shared_zones": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Allow two nodes in one zone when the type is offered in fewer zones than nodes. " +
					"Defaults to `false`; losing that zone can then lose acknowledged commits or the quorum (see `survives_zone_loss`).",
			},
			"synchronous_number": schema.Int64Attribute{
				Optional:            true,
				MarkdownDescription: "The `n` of `ANY n (...)`: standbys that confirm each commit. Used for `survives_zone_loss`. Defaults to `1`; at least 1 and below `node_count`.",
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
			"primary":  schema.SingleNestedAttribute{Computed: true, MarkdownDescription: "The primary's placement.", Attributes: nodeAttributes()},
			"standbys": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "The standbys' placements.", NestedObject: schema.NestedAttributeObject{Attributes: nodeAttributes()}},
			"nodes":    schema.ListNestedAttribute{Computed: true, MarkdownDescription: "Every node, primary first.", NestedObject: schema.NestedAttributeObject{Attributes: nodeAttributes()}},
			"distinct_zones": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Number of distinct zones used.",
			},
			"survives_zone_loss": schema.BoolAttribute{
				Computed: true,
				MarkdownDescription: "True when losing any one zone loses no acknowledged commit under `ANY synchronous_number`, " +
					"leaves a majority of nodes, and leaves enough nodes to keep acknowledging synchronous commits.",
			},
			"catalog_date": schema.StringAttribute{Computed: true, MarkdownDescription: "Date of the catalog data used."},
		},
	}
}

func (d *placementDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.clients = clientsFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *placementDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m placementModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	count := int64Or(m.NodeCount, 3)
	if !m.NodeCount.IsUnknown() && known(m.NodeNames) && int64(len(m.NodeNames.Elements())) != count {
		resp.Diagnostics.AddAttributeError(path.Root("node_names"), "Wrong Number Of Node Names",
			fmt.Sprintf("node_names has %d names for %d nodes. Give exactly one name per node, or drop node_names.",
				len(m.NodeNames.Elements()), count))
	}
	if !m.NodeCount.IsUnknown() && known(m.SynchronousNumber) && m.SynchronousNumber.ValueInt64() >= count {
		resp.Diagnostics.AddAttributeError(path.Root("synchronous_number"), "Synchronous Number Too High",
			fmt.Sprintf("synchronous_number %d needs more standbys than the %d a cluster of %d nodes has. Use at most %d.",
				m.SynchronousNumber.ValueInt64(), count-1, count, count-1))
	}
}

func (d *placementDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m placementModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	view, diags := loadCatalog(ctx, d.clients, m.Source, m.Region)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := m.InstanceType.ValueString()
	offered, ok := view.Region.Offerings[name]
	if !ok || !hasType(view.Types, name) {
		resp.Diagnostics.AddAttributeError(path.Root("instance_type"), "Instance Type Not Available",
			fmt.Sprintf("%s is not an instance type with local SSD storage offered in %s (catalog %s). Pick one from "+
				"data.pgnvme_instance_types, or set source = \"ec2\" if the embedded catalog is older than the type.",
				name, view.Region.Name, view.Date))
		return
	}
	candidates := map[string]bool{}
	for _, id := range offered {
		candidates[id] = true
	}
	if known(m.Zones) || known(m.ZoneIDs) {
		wanted, diags := resolveZones(ctx, view, m.Zones, m.ZoneIDs, path.Root("zones"), path.Root("zone_ids"))
		resp.Diagnostics.Append(diags...)
		if resp.Diagnostics.HasError() {
			return
		}
		restricted := map[string]bool{}
		for _, id := range wanted {
			if candidates[id] {
				restricted[id] = true
			}
		}
		candidates = restricted
	}
	var zones []catalog.Zone
	for id := range candidates {
		if z, ok := view.Region.ZoneByID(id); ok {
			zones = append(zones, z)
		}
	}

	result, err := placement.Place(placement.Request{
		NodeCount:   int(int64Or(m.NodeCount, 3)),
		NodeNames:   stringsFromList(ctx, m.NodeNames, &resp.Diagnostics),
		Zones:       zones,
		AllowShared: m.AllowSharedZones.ValueBool(),
		SyncNumber:  int(int64Or(m.SynchronousNumber, 1)),
	})
	if err != nil {
		var few *placement.TooFewZonesError
		if errors.As(err, &few) {
			resp.Diagnostics.AddAttributeError(path.Root("instance_type"), "Too Few Zones", fmt.Sprintf("%s cannot be "+
				"placed one node per zone in %s. Choose another instance type, add zones, or set allow_shared_zones = true."+
				"\n\n%s", name, view.Region.Name, err))
			return
		}
		resp.Diagnostics.AddError("Placement Failed",
			"The nodes cannot be placed as asked. Change the arguments as the error says, then plan again.\n\n"+err.Error())
		return
	}
	primary := nodeModel(result.Primary)
	m.Primary = &primary
	m.Standbys = make([]nodeModel, 0, len(result.Standbys))
	m.Nodes = []nodeModel{primary}
	for _, s := range result.Standbys {
		m.Standbys = append(m.Standbys, nodeModel(s))
		m.Nodes = append(m.Nodes, nodeModel(s))
	}
	m.DistinctZones = types.Int64Value(int64(result.DistinctZones))
	m.SurvivesZoneLoss = types.BoolValue(result.SurvivesZoneLoss)
	m.CatalogDate = types.StringValue(view.Date)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func hasType(ts []catalog.InstanceType, name string) bool {
	for _, t := range ts {
		if t.Name == name {
			return true
		}
	}
	return false
}

package provider

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/hashicorp/terraform-plugin-framework-validators/datasourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

var (
	_ datasource.DataSource                     = (*capacityPlanDataSource)(nil)
	_ datasource.DataSourceWithConfigure        = (*capacityPlanDataSource)(nil)
	_ datasource.DataSourceWithConfigValidators = (*capacityPlanDataSource)(nil)
	_ datasource.DataSourceWithValidateConfig   = (*capacityPlanDataSource)(nil)
)

// NewCapacityPlanDataSource is the constructor of pgnvme_capacity_plan.
func NewCapacityPlanDataSource() datasource.DataSource { return &capacityPlanDataSource{} }

type capacityPlanDataSource struct {
	clients *Clients
}

type capacityPlanModel struct {
	DatasetGiB         types.Float64 `tfsdk:"dataset_gib"`
	PgbenchScale       types.Int64   `tfsdk:"pgbench_scale"`
	GrowthGiBPerMonth  types.Float64 `tfsdk:"growth_gib_per_month"`
	HorizonMonths      types.Int64   `tfsdk:"horizon_months"`
	BloatFactor        types.Float64 `tfsdk:"bloat_factor"`
	WALReserveGiB      types.Float64 `tfsdk:"wal_reserve_gib"`
	MaxDiskUtilization types.Float64 `tfsdk:"max_disk_utilization"`
	WorkingSetGiB      types.Float64 `tfsdk:"working_set_gib"`
	MinVCPUs           types.Int64   `tfsdk:"min_vcpus"`
	MinMemoryGiB       types.Float64 `tfsdk:"min_memory_gib"`
	Architectures      types.List    `tfsdk:"architectures"`
	Families           types.List    `tfsdk:"families"`
	ExcludeFamilies    types.List    `tfsdk:"exclude_families"`
	Region             types.String  `tfsdk:"region"`
	ZoneIDs            types.List    `tfsdk:"zone_ids"`
	Zones              types.List    `tfsdk:"zones"`
	NodeCount          types.Int64   `tfsdk:"node_count"`
	Source             types.String  `tfsdk:"source"`
	PostgresMajor      types.Int64   `tfsdk:"postgres_major"`
	Workload           types.String  `tfsdk:"workload"`
	MaxConnections     types.Int64   `tfsdk:"max_connections"`
	IncludeSpecial     types.Bool    `tfsdk:"include_special_purpose"`
	IncludePrevious    types.Bool    `tfsdk:"include_previous_generation"`

	DatasetGiBOut       types.Float64     `tfsdk:"current_dataset_gib"`
	ProjectedDatasetGiB types.Float64     `tfsdk:"projected_dataset_gib"`
	WALReserveGiBOut    types.Float64     `tfsdk:"effective_wal_reserve_gib"`
	RequiredNVMeGiB     types.Float64     `tfsdk:"required_nvme_gib"`
	Candidates          []candidateModel  `tfsdk:"candidates"`
	InstanceType        types.String      `tfsdk:"instance_type"`
	RecommendationWhy   types.String      `tfsdk:"recommendation_reason"`
	Recommended         *candidateModel   `tfsdk:"recommended"`
	PostgresParameters  map[string]string `tfsdk:"postgres_parameters"`
	CatalogDate         types.String      `tfsdk:"catalog_date"`
}

type candidateModel struct {
	InstanceType       string   `tfsdk:"instance_type"`
	VCPUs              int64    `tfsdk:"vcpus"`
	MemoryGiB          float64  `tfsdk:"memory_gib"`
	NVMeTotalGiB       float64  `tfsdk:"nvme_total_gib"`
	NVMeDisks          int64    `tfsdk:"nvme_disks"`
	DiskUtilization    float64  `tfsdk:"disk_utilization"`
	MemoryToWorkingSet float64  `tfsdk:"memory_to_working_set"`
	ZoneIDs            []string `tfsdk:"zone_ids"`
}

func (d *capacityPlanDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_capacity_plan"
}

func candidateAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"instance_type":         schema.StringAttribute{Computed: true, MarkdownDescription: "Instance type name."},
		"vcpus":                 schema.Int64Attribute{Computed: true, MarkdownDescription: "Default vCPUs."},
		"memory_gib":            schema.Float64Attribute{Computed: true, MarkdownDescription: "Memory in GiB."},
		"nvme_total_gib":        schema.Float64Attribute{Computed: true, MarkdownDescription: "Total instance-store SSD in GiB."},
		"nvme_disks":            schema.Int64Attribute{Computed: true, MarkdownDescription: "Number of instance-store SSD disks (striped as RAID0 on the node)."},
		"disk_utilization":      schema.Float64Attribute{Computed: true, MarkdownDescription: "Share of the NVMe the bloated dataset plus WAL reserve fill at the horizon, 0 to 1."},
		"memory_to_working_set": schema.Float64Attribute{Computed: true, MarkdownDescription: "Memory divided by the working set; at 1 or more the hot data fits in RAM."},
		"zone_ids":              schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Zone IDs of the region where the type is offered."},
	}
}

func (d *capacityPlanDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	attrs := filterAttributes()
	attrs["min_vcpus"] = schema.Int64Attribute{
		Optional: true,
		MarkdownDescription: fmt.Sprintf("Keep types with at least this many vCPUs. At least 1; unset means %d, the fewest a database node "+
			"should have (a core for queries, one for autovacuum, WAL, replication and checkpoints): set 1 to consider single-vCPU types.", capacity.DefaultMinVCPUs),
		Validators: []validator.Int64{int64validator.AtLeast(1)},
	}
	for k, v := range map[string]schema.Attribute{
		"dataset_gib": schema.Float64Attribute{
			Optional:            true,
			MarkdownDescription: "Current size of tables and indexes, in GiB. Exactly one of `dataset_gib` and `pgbench_scale` is required; greater than 0.",
			Validators:          []validator.Float64{float64validator.AtLeast(math.SmallestNonzeroFloat64)},
		},
		"pgbench_scale": schema.Int64Attribute{
			Optional: true,
			MarkdownDescription: "Size the dataset as a pgbench database of this scale (see the `pgbench_size_gib` " +
				"function for the bytes per scale measured on PostgreSQL 15). At least 1.",
			Validators: []validator.Int64{int64validator.AtLeast(1)},
		},
		"growth_gib_per_month": schema.Float64Attribute{
			Optional:            true,
			MarkdownDescription: "Dataset growth in GiB per month. Defaults to `0`; at least 0.",
			Validators:          []validator.Float64{float64validator.AtLeast(0)},
		},
		"horizon_months": schema.Int64Attribute{
			Optional:            true,
			MarkdownDescription: "How many months of growth the disk must hold. Defaults to `12`; 0 to 120.",
			Validators:          []validator.Int64{int64validator.Between(0, 120)},
		},
		"bloat_factor": schema.Float64Attribute{
			Optional:            true,
			MarkdownDescription: "Multiplier for dead tuples and free space inside tables and indexes. Defaults to `1.2`; 1 to 10.",
			Validators:          []validator.Float64{float64validator.Between(1, 10)},
		},
		"wal_reserve_gib": schema.Float64Attribute{
			Optional:            true,
			MarkdownDescription: "Disk kept for `pg_wal` (checkpoints, replication slots, archiving backlog), in GiB. Unset derives it: the larger of 16 GiB and 10% of the bloated dataset. At least 0.",
			Validators:          []validator.Float64{float64validator.AtLeast(0)},
		},
		"max_disk_utilization": schema.Float64Attribute{
			Optional: true,
			MarkdownDescription: "Highest share of the NVMe the data may fill at the horizon, above 0 and at most 1. " +
				"Defaults to `0.75`, leaving room for VACUUM FULL, index rebuilds and surprises.",
			Validators: []validator.Float64{fractionValidator{example: 0.75}},
		},
		"working_set_gib": schema.Float64Attribute{
			Optional:            true,
			MarkdownDescription: "Hot data that should stay in memory, in GiB, for `memory_to_working_set`. Defaults to the projected dataset; greater than 0.",
			Validators:          []validator.Float64{float64validator.AtLeast(math.SmallestNonzeroFloat64)},
		},
		"region": regionAttribute(),
		"zone_ids": schema.ListAttribute{
			ElementType:         types.StringType,
			Optional:            true,
			MarkdownDescription: "Candidates must be offered in every one of these zone IDs. Unset: in at least `node_count` zones of the region. Conflicts with `zones`.",
			Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(),
				listvalidator.ConflictsWith(path.MatchRoot("zones"))},
		},
		"zones": schema.ListAttribute{
			ElementType:         types.StringType,
			Optional:            true,
			MarkdownDescription: "Like `zone_ids`, by zone name (e.g. `us-east-1a`).",
			Validators:          []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues()},
		},
		"node_count": schema.Int64Attribute{
			Optional:            true,
			MarkdownDescription: "Nodes in the cluster (a primary and `node_count - 1` standbys), each with a full copy. Defaults to `3`; 1 to 9.",
			Validators:          []validator.Int64{int64validator.Between(1, 9)},
		},
		"include_special_purpose": schema.BoolAttribute{
			Optional: true,
			MarkdownDescription: "Also consider special-purpose types: those with accelerators (GPU, FPGA, inference, " +
				"Neuron, media) and Macs, which cost more for hardware PostgreSQL cannot use. A family named in " +
				"`families` is always considered. Defaults to `false`.",
		},
		"include_previous_generation": schema.BoolAttribute{
			Optional: true,
			MarkdownDescription: "Also consider types EC2 reports as previous generation (e.g. `i2`, `r3`). A family " +
				"named in `families` is always considered. Defaults to `false`.",
		},
		"source":          sourceAttribute(),
		"postgres_major":  postgresMajorAttribute(),
		"workload":        workloadAttribute(),
		"max_connections": maxConnectionsAttribute(),

		"current_dataset_gib":       schema.Float64Attribute{Computed: true, MarkdownDescription: "The dataset today in GiB (`dataset_gib`, or the size of `pgbench_scale`)."},
		"projected_dataset_gib":     schema.Float64Attribute{Computed: true, MarkdownDescription: "The dataset at the horizon, in GiB: current + growth x months."},
		"effective_wal_reserve_gib": schema.Float64Attribute{Computed: true, MarkdownDescription: "The WAL reserve used, in GiB: `wal_reserve_gib` or the derived value."},
		"required_nvme_gib":         schema.Float64Attribute{Computed: true, MarkdownDescription: "NVMe each node needs, in GiB: (projected x bloat + WAL reserve) / max_disk_utilization."},
		"candidates": schema.ListNestedAttribute{
			Computed:            true,
			MarkdownDescription: "Types that meet every requirement, best first (see Ranking).",
			NestedObject:        schema.NestedAttributeObject{Attributes: candidateAttributes()},
		},
		"instance_type": schema.StringAttribute{Computed: true, MarkdownDescription: "The recommended type: the first candidate."},
		"recommendation_reason": schema.StringAttribute{Computed: true, MarkdownDescription: "Which rule picked `instance_type`: the smallest " +
			"candidate in the ranking order that holds `required_nvme_gib`, with the vCPU floor it applied."},
		"recommended": schema.SingleNestedAttribute{
			Computed:            true,
			MarkdownDescription: "The recommended candidate's figures.",
			Attributes:          candidateAttributes(),
		},
		"postgres_parameters": schema.MapAttribute{
			ElementType: types.StringType,
			Computed:    true,
			MarkdownDescription: "PostgreSQL settings tuned for the recommended type (its vCPUs, memory and NVMe), " +
				"ready for `postgresql.conf`, `ALTER SYSTEM` or `pgnvme_cluster.parameters`. The rules are listed below.",
		},
		"catalog_date": schema.StringAttribute{Computed: true, MarkdownDescription: "Date of the catalog data used."},
	} {
		attrs[k] = v
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Sizes a PostgreSQL cluster on local NVMe: from the dataset, its growth and the " +
			"headroom you want, the NVMe each node needs; the instance types that hold it, ranked; the recommended " +
			"type; and PostgreSQL parameters tuned for that type.",
		Attributes: attrs,
	}
}

func (d *capacityPlanDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{
		datasourcevalidator.ExactlyOneOf(path.MatchRoot("dataset_gib"), path.MatchRoot("pgbench_scale")),
	}
}

func (d *capacityPlanDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m capacityPlanModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	validateFamilies(ctx, m.Families, m.ExcludeFamilies, &resp.Diagnostics)
	if m.NodeCount.IsUnknown() {
		return
	}
	nodes := int64Or(m.NodeCount, capacity.DefaultNodeCount)
	for _, z := range []struct {
		list types.List
		name string
	}{{m.ZoneIDs, "zone_ids"}, {m.Zones, "zones"}} {
		if known(z.list) && len(z.list.Elements()) > 0 && int64(len(z.list.Elements())) < nodes {
			resp.Diagnostics.AddAttributeError(path.Root(z.name), "Too Few Zones",
				fmt.Sprintf("%s lists %d zones for %d nodes; each node needs its own zone. List at least %d zones or lower node_count.",
					z.name, len(z.list.Elements()), nodes, nodes))
		}
	}
}

func (d *capacityPlanDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.clients = clientsFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *capacityPlanDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m capacityPlanModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}

	dataset := m.DatasetGiB.ValueFloat64()
	if known(m.PgbenchScale) {
		dataset = pgbench.SizeGiB(int(m.PgbenchScale.ValueInt64()))
	}
	r := capacity.NewRequest(dataset)
	r.GrowthGiBPerMonth = m.GrowthGiBPerMonth.ValueFloat64()
	r.HorizonMonths = int(int64Or(m.HorizonMonths, capacity.DefaultHorizonMonths))
	r.BloatFactor = float64Or(m.BloatFactor, capacity.DefaultBloatFactor)
	r.WALReserveGiB = float64Or(m.WALReserveGiB, capacity.DeriveWALReserve)
	r.MaxDiskUtilization = float64Or(m.MaxDiskUtilization, capacity.DefaultMaxDiskUtilization)
	r.WorkingSetGiB = m.WorkingSetGiB.ValueFloat64()
	r.NodeCount = int(int64Or(m.NodeCount, capacity.DefaultNodeCount))
	if err := r.Validate(); err != nil {
		resp.Diagnostics.AddError("Invalid Capacity Request",
			"The sizing arguments cannot be planned as given. Change them as the error says, then plan again.\n\n"+err.Error())
		return
	}

	view, diags := loadCatalog(ctx, d.clients, m.Source, m.Region)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	zoneIDs, diags := resolveZones(ctx, view, m.Zones, m.ZoneIDs, path.Root("zones"), path.Root("zone_ids"))
	resp.Diagnostics.Append(diags...)
	f := typeFilter(ctx, typeFilterModel{
		MinVCPUs: m.MinVCPUs, MinMemoryGiB: m.MinMemoryGiB, Architectures: m.Architectures,
		Families: m.Families, ExcludeFamilies: m.ExcludeFamilies,
	}, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	minVCPUs, defaulted := capacity.MinVCPUs(int(m.MinVCPUs.ValueInt64()), !m.MinVCPUs.IsNull())
	f.MinVCPUs = minVCPUs
	f.OfferedInZoneIDs = zoneIDs
	f.ExcludeSpecialPurpose = !m.IncludeSpecial.ValueBool()
	f.ExcludePreviousGeneration = !m.IncludePrevious.ValueBool()
	f.RequireNVMe = true // the plan chooses for pgnvme_cluster, which refuses instance storage that is not NVMe
	if len(zoneIDs) == 0 {
		f.MinZones = r.NodeCount
	}
	if err := f.Validate(); err != nil {
		resp.Diagnostics.AddError("Invalid Filter",
			"The instance type filters cannot be applied as given. Change them as the error says, then plan again.\n\n"+err.Error())
		return
	}

	sizing := capacity.Size(r)
	plan, err := capacity.Recommend(sizing, view.Types, view.Region, f)
	if err != nil {
		var nofit *capacity.NoFitError
		if errors.As(err, &nofit) {
			summary := "No Instance Type Fits"
			if nofit.Reason == capacity.ReasonHardFilters {
				summary = "No Instance Type Meets The Filters"
			}
			resp.Diagnostics.AddError(summary, fmt.Sprintf("%s\n\nRegion %s, catalog %s (%s).",
				nofit.Error(), view.Region.Name, view.Date, view.Origin))
			return
		}
		resp.Diagnostics.AddError("Capacity Plan Failed",
			"Ranking the instance types failed unexpectedly. This is a bug in the provider; please report it.\n\n"+err.Error())
		return
	}

	rec := plan.Recommended
	params, err := capacity.Tune(capacity.Hardware{
		VCPUs:          rec.VCPUs,
		MemoryGiB:      rec.MemoryGiB(),
		DiskGiB:        rec.TotalGiB(),
		Storage:        capacity.StorageNVMe,
		Workload:       capacity.Workload(stringOr(m.Workload, string(capacity.WorkloadOLTP))),
		MaxConnections: int(int64Or(m.MaxConnections, capacity.DefaultMaxConnections)),
		PostgresMajor:  int(int64Or(m.PostgresMajor, capacity.DefaultPostgresMajor)),
	})
	if err != nil {
		resp.Diagnostics.AddError("Tuning Failed", fmt.Sprintf("The settings for %s could not be derived from workload, "+
			"max_connections and postgres_major. Change them as the error says, then plan again.\n\n%s", rec.Name, err))
		return
	}

	m.DatasetGiBOut = types.Float64Value(round(dataset, 2))
	m.ProjectedDatasetGiB = types.Float64Value(round(plan.Sizing.ProjectedDatasetGiB, 2))
	m.WALReserveGiBOut = types.Float64Value(round(plan.Sizing.WALReserveGiB, 2))
	m.RequiredNVMeGiB = types.Float64Value(round(plan.Sizing.RequiredNVMeGiB, 2))
	m.Candidates = make([]candidateModel, 0, len(plan.Candidates))
	for _, c := range plan.Candidates {
		m.Candidates = append(m.Candidates, candidateFrom(c))
	}
	recModel := candidateFrom(rec)
	m.Recommended = &recModel
	m.InstanceType = types.StringValue(rec.Name)
	m.RecommendationWhy = types.StringValue(plan.Reason(minVCPUs, defaulted))
	m.PostgresParameters = params
	m.CatalogDate = types.StringValue(view.Date)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func candidateFrom(c capacity.Candidate) candidateModel {
	return candidateModel{
		InstanceType:       c.Name,
		VCPUs:              int64(c.VCPUs),
		MemoryGiB:          round(c.MemoryGiB(), 2),
		NVMeTotalGiB:       round(c.TotalGiB(), 2),
		NVMeDisks:          int64(c.DiskCount),
		DiskUtilization:    round(c.DiskUtilization, 4),
		MemoryToWorkingSet: round(c.MemoryToWorkingSet, 4),
		ZoneIDs:            nonNil(c.ZoneIDs),
	}
}

func int64Or(v types.Int64, def int64) int64 {
	if v.IsNull() || v.IsUnknown() {
		return def
	}
	return v.ValueInt64()
}

func float64Or(v types.Float64, def float64) float64 {
	if v.IsNull() || v.IsUnknown() {
		return def
	}
	return v.ValueFloat64()
}

func stringOr(v types.String, def string) string {
	if v.IsNull() || v.IsUnknown() {
		return def
	}
	return v.ValueString()
}

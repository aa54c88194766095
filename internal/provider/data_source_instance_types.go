package provider

import (
	"context"
	"math"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
)

var (
	_ datasource.DataSource                   = (*instanceTypesDataSource)(nil)
	_ datasource.DataSourceWithConfigure      = (*instanceTypesDataSource)(nil)
	_ datasource.DataSourceWithValidateConfig = (*instanceTypesDataSource)(nil)
)

// NewInstanceTypesDataSource is the constructor of pgnvme_instance_types.
func NewInstanceTypesDataSource() datasource.DataSource { return &instanceTypesDataSource{} }

type instanceTypesDataSource struct {
	clients *Clients
}

// typeFilterModel holds the filter arguments shared with pgnvme_capacity_plan.
type typeFilterModel struct {
	MinVCPUs        types.Int64   `tfsdk:"min_vcpus"`
	MinMemoryGiB    types.Float64 `tfsdk:"min_memory_gib"`
	Architectures   types.List    `tfsdk:"architectures"`
	Families        types.List    `tfsdk:"families"`
	ExcludeFamilies types.List    `tfsdk:"exclude_families"`
}

type instanceTypesModel struct {
	Source           types.String  `tfsdk:"source"`
	Region           types.String  `tfsdk:"region"`
	MinNVMeGiB       types.Float64 `tfsdk:"min_nvme_gib"`
	MaxNVMeGiB       types.Float64 `tfsdk:"max_nvme_gib"`
	MinVCPUs         types.Int64   `tfsdk:"min_vcpus"`
	MinMemoryGiB     types.Float64 `tfsdk:"min_memory_gib"`
	Architectures    types.List    `tfsdk:"architectures"`
	Families         types.List    `tfsdk:"families"`
	ExcludeFamilies  types.List    `tfsdk:"exclude_families"`
	OfferedInZoneIDs types.List    `tfsdk:"offered_in_zone_ids"`
	OfferedInZones   types.List    `tfsdk:"offered_in_zones"`
	ExcludeSpecial   types.Bool    `tfsdk:"exclude_special_purpose"`
	ExcludePrevious  types.Bool    `tfsdk:"exclude_previous_generation"`

	InstanceTypes []instanceTypeModel `tfsdk:"instance_types"`
	Names         []string            `tfsdk:"names"`
	CatalogDate   types.String        `tfsdk:"catalog_date"`
	CatalogOrigin types.String        `tfsdk:"catalog_origin"`
}

type instanceTypeModel struct {
	InstanceType       string   `tfsdk:"instance_type"`
	Family             string   `tfsdk:"family"`
	VCPUs              int64    `tfsdk:"vcpus"`
	MemoryGiB          float64  `tfsdk:"memory_gib"`
	NVMeDisks          int64    `tfsdk:"nvme_disks"`
	NVMeDiskGB         int64    `tfsdk:"nvme_disk_gb"`
	NVMeTotalGiB       float64  `tfsdk:"nvme_total_gib"`
	NVMeSupport        string   `tfsdk:"nvme_support"`
	Architectures      []string `tfsdk:"architectures"`
	NetworkPerformance string   `tfsdk:"network_performance"`
	ZoneIDs            []string `tfsdk:"zone_ids"`
	Zones              []string `tfsdk:"zones"`
	Accelerators       []string `tfsdk:"accelerators"`
	SpecialPurpose     bool     `tfsdk:"special_purpose"`
	PreviousGeneration bool     `tfsdk:"previous_generation"`
}

func (d *instanceTypesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_instance_types"
}

// filterAttributes are the hard filters shared by pgnvme_instance_types and pgnvme_capacity_plan.
func filterAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"min_vcpus": schema.Int64Attribute{
			Optional:            true,
			MarkdownDescription: "Keep types with at least this many vCPUs. At least 1; unset means no minimum.",
			Validators:          []validator.Int64{int64validator.AtLeast(1)},
		},
		"min_memory_gib": schema.Float64Attribute{
			Optional:            true,
			MarkdownDescription: "Keep types with at least this much memory, in GiB. Greater than 0; unset means no minimum.",
			Validators:          []validator.Float64{float64validator.AtLeast(math.SmallestNonzeroFloat64)},
		},
		"architectures": schema.ListAttribute{
			ElementType: types.StringType,
			Optional:    true,
			MarkdownDescription: "Keep types that support any of these CPU architectures: `x86_64`, `arm64`, " +
				"`i386`, `x86_64_mac`, `arm64_mac`. Unset means all.",
			Validators: []validator.List{
				listvalidator.SizeAtLeast(1),
				listvalidator.UniqueValues(),
				listvalidator.ValueStringsAre(stringvalidator.OneOf(catalog.Architectures...)),
			},
		},
		"families": schema.ListAttribute{
			ElementType: types.StringType,
			Optional:    true,
			MarkdownDescription: "Keep only these instance families (the part before the dot, e.g. `m6id`, `i4i`). " +
				"Unset means all.",
			Validators: []validator.List{
				listvalidator.SizeAtLeast(1),
				listvalidator.UniqueValues(),
				listvalidator.ValueStringsAre(stringvalidator.RegexMatches(familyPattern, familyMessage)),
			},
		},
		"exclude_families": schema.ListAttribute{
			ElementType:         types.StringType,
			Optional:            true,
			MarkdownDescription: "Drop these instance families (e.g. `i3` for older NVMe). Must not overlap `families`.",
			Validators: []validator.List{
				listvalidator.SizeAtLeast(1),
				listvalidator.UniqueValues(),
				listvalidator.ValueStringsAre(stringvalidator.RegexMatches(familyPattern, familyMessage)),
			},
		},
	}
}

func (d *instanceTypesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	attrs := filterAttributes()
	attrs["source"] = sourceAttribute()
	attrs["region"] = regionAttribute()
	attrs["min_nvme_gib"] = schema.Float64Attribute{
		Optional: true,
		MarkdownDescription: "Keep types whose instance-store SSD totals at least this many GiB (2^30 bytes; AWS " +
			"reports GB, 10^9 bytes, which the provider converts). At least 0; unset means no minimum.",
		Validators: []validator.Float64{float64validator.AtLeast(0)},
	}
	attrs["max_nvme_gib"] = schema.Float64Attribute{
		Optional:            true,
		MarkdownDescription: "Keep types whose instance-store SSD totals at most this many GiB. Must be greater than 0 and at least `min_nvme_gib`.",
		Validators:          []validator.Float64{float64validator.AtLeast(math.SmallestNonzeroFloat64)},
	}
	attrs["offered_in_zone_ids"] = schema.ListAttribute{
		ElementType: types.StringType,
		Optional:    true,
		MarkdownDescription: "Keep types offered in every one of these availability zone IDs (e.g. `use1-az1`). " +
			"Zone IDs name the same physical zone in every account; zone names do not.",
		Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues()},
	}
	attrs["offered_in_zones"] = schema.ListAttribute{
		ElementType:         types.StringType,
		Optional:            true,
		MarkdownDescription: "Keep types offered in every one of these availability zone names (e.g. `us-east-1a`), resolved to zone IDs.",
		Validators:          []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues()},
	}
	attrs["exclude_special_purpose"] = schema.BoolAttribute{
		Optional: true,
		MarkdownDescription: "Drop special-purpose types: those with accelerators (GPU, FPGA, inference, Neuron, " +
			"media; read from `DescribeInstanceTypes`, never the name) and Macs. A family named in `families` is " +
			"kept anyway. Defaults to `false`.",
	}
	attrs["exclude_previous_generation"] = schema.BoolAttribute{
		Optional: true,
		MarkdownDescription: "Drop types EC2 reports as previous generation (`CurrentGeneration = false`, e.g. `i2`, " +
			"`r3`). A family named in `families` is kept anyway. Defaults to `false`.",
	}
	attrs["instance_types"] = schema.ListNestedAttribute{
		Computed: true,
		MarkdownDescription: "Matching instance types with local SSD instance storage, ordered by total NVMe GiB, " +
			"then vCPUs, then memory, then name.",
		NestedObject: schema.NestedAttributeObject{Attributes: instanceTypeAttributes()},
	}
	attrs["names"] = schema.ListAttribute{
		ElementType:         types.StringType,
		Computed:            true,
		MarkdownDescription: "The names of `instance_types`, in the same order.",
	}
	attrs["catalog_date"] = schema.StringAttribute{
		Computed:            true,
		MarkdownDescription: "Date (UTC, YYYY-MM-DD) the catalog data was read: the snapshot's date, or today for `ec2`.",
	}
	attrs["catalog_origin"] = schema.StringAttribute{
		Computed:            true,
		MarkdownDescription: "Where the catalog data came from (API calls and endpoint).",
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "EC2 instance types with local NVMe instance storage, filtered by NVMe capacity, CPU, " +
			"memory, architecture, family and zone offerings. Only types whose `InstanceStorageInfo` lists SSD disks " +
			"count: NVMe is never inferred from the type's name. With `source = \"embedded\"` (the default) the facts " +
			"come from a snapshot generated against moto (see `catalog_origin`): its instance facts are moto's copy " +
			"of EC2's, but its zone offerings and zone IDs are moto's data, not what AWS offers today; use " +
			"`source = \"ec2\"` for the zones AWS offers your account.",
		Attributes: attrs,
	}
}

func instanceTypeAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"instance_type":       schema.StringAttribute{Computed: true, MarkdownDescription: "Instance type name, e.g. `m6id.4xlarge`."},
		"family":              schema.StringAttribute{Computed: true, MarkdownDescription: "Family, the part before the dot, e.g. `m6id`."},
		"vcpus":               schema.Int64Attribute{Computed: true, MarkdownDescription: "Default vCPUs."},
		"memory_gib":          schema.Float64Attribute{Computed: true, MarkdownDescription: "Memory in GiB."},
		"nvme_disks":          schema.Int64Attribute{Computed: true, MarkdownDescription: "Number of instance-store SSD disks."},
		"nvme_disk_gb":        schema.Int64Attribute{Computed: true, MarkdownDescription: "Size of one disk in GB (10^9 bytes), as AWS reports it."},
		"nvme_total_gib":      schema.Float64Attribute{Computed: true, MarkdownDescription: "Total instance-store SSD in GiB (2^30 bytes), converted from AWS's GB."},
		"nvme_support":        schema.StringAttribute{Computed: true, MarkdownDescription: "Instance-store NVMe support: `required`, `supported` or `unsupported`."},
		"architectures":       schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Supported CPU architectures."},
		"network_performance": schema.StringAttribute{Computed: true, MarkdownDescription: "Network performance as EC2 describes it, e.g. `Up to 12.5 Gigabit`."},
		"zone_ids":            schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Availability zone IDs of the region where the type is offered, sorted."},
		"zones":               schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "The same zones by name, in the order of `zone_ids`."},
		"accelerators":        schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Accelerators the type carries: `fpga`, `gpu`, `inference`, `media`, `neuron`; empty for general types."},
		"special_purpose":     schema.BoolAttribute{Computed: true, MarkdownDescription: "True for types with accelerators and for Macs: PostgreSQL pays for hardware it cannot use."},
		"previous_generation": schema.BoolAttribute{Computed: true, MarkdownDescription: "True when EC2 reports the type as previous generation."},
	}
}

func (d *instanceTypesDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.clients = clientsFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *instanceTypesDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m instanceTypesModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if known(m.MinNVMeGiB) && known(m.MaxNVMeGiB) && m.MaxNVMeGiB.ValueFloat64() < m.MinNVMeGiB.ValueFloat64() {
		resp.Diagnostics.AddAttributeError(path.Root("max_nvme_gib"), "Invalid NVMe Range",
			"max_nvme_gib is smaller than min_nvme_gib, so no type can match. Raise max_nvme_gib or lower min_nvme_gib.")
	}
	validateFamilies(ctx, m.Families, m.ExcludeFamilies, &resp.Diagnostics)
}

func (d *instanceTypesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m instanceTypesModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	view, diags := loadCatalog(ctx, d.clients, m.Source, m.Region)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	zoneIDs, diags := resolveZones(ctx, view, m.OfferedInZones, m.OfferedInZoneIDs, path.Root("offered_in_zones"), path.Root("offered_in_zone_ids"))
	resp.Diagnostics.Append(diags...)
	f := typeFilter(ctx, typeFilterModel{
		MinVCPUs: m.MinVCPUs, MinMemoryGiB: m.MinMemoryGiB, Architectures: m.Architectures,
		Families: m.Families, ExcludeFamilies: m.ExcludeFamilies,
	}, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	f.MinNVMeGiB = m.MinNVMeGiB.ValueFloat64()
	f.MaxNVMeGiB = m.MaxNVMeGiB.ValueFloat64()
	f.OfferedInZoneIDs = zoneIDs
	f.ExcludeSpecialPurpose = m.ExcludeSpecial.ValueBool()
	f.ExcludePreviousGeneration = m.ExcludePrevious.ValueBool()
	if err := f.Validate(); err != nil {
		resp.Diagnostics.AddError("Invalid Filter",
			"The instance type filters cannot be applied as given. Change them as the error says, then plan again.\n\n"+err.Error())
		return
	}

	offers := catalog.Select(view.Types, view.Region, f)
	m.InstanceTypes = make([]instanceTypeModel, 0, len(offers))
	m.Names = make([]string, 0, len(offers))
	for _, o := range offers {
		m.InstanceTypes = append(m.InstanceTypes, instanceTypeFromOffer(o))
		m.Names = append(m.Names, o.Name)
	}
	m.CatalogDate = types.StringValue(view.Date)
	m.CatalogOrigin = types.StringValue(view.Origin)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func instanceTypeFromOffer(o catalog.Offered) instanceTypeModel {
	return instanceTypeModel{
		InstanceType:       o.Name,
		Family:             o.Family(),
		VCPUs:              int64(o.VCPUs),
		MemoryGiB:          round(o.MemoryGiB(), 2),
		NVMeDisks:          int64(o.DiskCount),
		NVMeDiskGB:         o.DiskSizeGB,
		NVMeTotalGiB:       round(o.TotalGiB(), 2),
		NVMeSupport:        o.NVMeSupport,
		Architectures:      nonNil(o.Architectures),
		NetworkPerformance: o.NetworkPerformance,
		ZoneIDs:            nonNil(o.ZoneIDs),
		Zones:              nonNil(o.Zones),
		Accelerators:       nonNil(o.Accelerators),
		SpecialPurpose:     o.SpecialPurpose(),
		PreviousGeneration: o.PreviousGeneration,
	}
}

// typeFilter converts the shared filter arguments into a catalog.Filter.
func typeFilter(ctx context.Context, m typeFilterModel, diags *diag.Diagnostics) catalog.Filter {
	return catalog.Filter{
		MinVCPUs:        int(m.MinVCPUs.ValueInt64()),
		MinMemoryGiB:    m.MinMemoryGiB.ValueFloat64(),
		Architectures:   stringsFromList(ctx, m.Architectures, diags),
		Families:        stringsFromList(ctx, m.Families, diags),
		ExcludeFamilies: stringsFromList(ctx, m.ExcludeFamilies, diags),
	}
}

func validateFamilies(ctx context.Context, families, exclude types.List, diags *diag.Diagnostics) {
	if !known(families) || !known(exclude) {
		return
	}
	allowed := map[string]bool{}
	for _, f := range stringsFromList(ctx, families, diags) {
		allowed[f] = true
	}
	for _, f := range stringsFromList(ctx, exclude, diags) {
		if allowed[f] {
			diags.AddAttributeError(path.Root("exclude_families"), "Family Both Allowed And Excluded",
				"The family "+f+" is in both families and exclude_families. Remove it from one of them.")
		}
	}
}

// familyPattern matches EC2 family names such as m6id, i4i, r7gd, x2idn, u-6tb1 is not instance-store.
var familyPattern = regexpMust(`^[a-z][a-z0-9-]*$`)

const familyMessage = "must be an instance family such as m6id or i4i: lower-case letters and digits, without the size (no dot)"

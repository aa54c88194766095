package provider

import (
	"context"
	"fmt"
	"math"

	"github.com/hashicorp/terraform-plugin-framework-validators/float64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
)

var _ datasource.DataSource = (*tuningDataSource)(nil)

// NewTuningDataSource is the constructor of pgnvme_tuning.
func NewTuningDataSource() datasource.DataSource { return &tuningDataSource{} }

type tuningDataSource struct{}

type tuningModel struct {
	VCPUs          types.Int64       `tfsdk:"vcpus"`
	MemoryGiB      types.Float64     `tfsdk:"memory_gib"`
	DiskGiB        types.Float64     `tfsdk:"disk_gib"`
	Storage        types.String      `tfsdk:"storage"`
	Workload       types.String      `tfsdk:"workload"`
	MaxConnections types.Int64       `tfsdk:"max_connections"`
	PostgresMajor  types.Int64       `tfsdk:"postgres_major"`
	Parameters     map[string]string `tfsdk:"postgres_parameters"`
}

func postgresMajorAttribute() schema.Int64Attribute {
	return schema.Int64Attribute{
		Optional: true,
		MarkdownDescription: fmt.Sprintf("PostgreSQL major version the parameters are for; only settings that "+
			"version knows are returned. Defaults to `%d`; %d to %d.",
			capacity.DefaultPostgresMajor, capacity.MinPostgresMajor, capacity.MaxPostgresMajor),
		Validators: []validator.Int64{int64validator.Between(capacity.MinPostgresMajor, capacity.MaxPostgresMajor)},
	}
}

func workloadAttribute() schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true,
		MarkdownDescription: "Workload shape: `oltp` (many short transactions; default), `mixed`, or `analytics` " +
			"(few large queries: more memory per sort, more parallel workers).",
		Validators: []validator.String{stringvalidator.OneOf(string(capacity.WorkloadOLTP), string(capacity.WorkloadMixed), string(capacity.WorkloadAnalytics))},
	}
}

func maxConnectionsAttribute() schema.Int64Attribute {
	return schema.Int64Attribute{
		Optional: true,
		MarkdownDescription: fmt.Sprintf("Planned `max_connections`; `work_mem` is divided among them. Defaults to `%d`; "+
			"10 to 10000 (use a pooler such as PgBouncer beyond a few hundred).", capacity.DefaultMaxConnections),
		Validators: []validator.Int64{int64validator.Between(10, 10000)},
	}
}

func (d *tuningDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_tuning"
}

func (d *tuningDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "PostgreSQL parameters tuned for hardware you describe: the same rules " +
			"`pgnvme_capacity_plan` applies to its recommended instance type, for local clusters, other clouds or " +
			"bare metal.",
		Attributes: map[string]schema.Attribute{
			"vcpus": schema.Int64Attribute{
				Required:            true,
				MarkdownDescription: "vCPUs (hardware threads) PostgreSQL may use. 1 to 1024.",
				Validators:          []validator.Int64{int64validator.Between(1, 1024)},
			},
			"memory_gib": schema.Float64Attribute{
				Required:            true,
				MarkdownDescription: "Memory of the machine in GiB. At least 0.5.",
				Validators:          []validator.Float64{float64validator.Between(0.5, 32768)},
			},
			"disk_gib": schema.Float64Attribute{
				Required:            true,
				MarkdownDescription: "Size of the data disk (holding `PGDATA` and `pg_wal`) in GiB; `max_wal_size` and the slot guard are sized from it. At least 1.",
				Validators:          []validator.Float64{float64validator.Between(1, math.MaxInt32)},
			},
			"storage": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Kind of data disk: `nvme` (local NVMe; default), `ssd` (other local SSD) or " +
					"`ebs` (network block storage: higher latency, so more I/O in flight pays off less).",
				Validators: []validator.String{stringvalidator.OneOf(string(capacity.StorageNVMe), string(capacity.StorageSSD), string(capacity.StorageEBS))},
			},
			"workload":        workloadAttribute(),
			"max_connections": maxConnectionsAttribute(),
			"postgres_major":  postgresMajorAttribute(),
			"postgres_parameters": schema.MapAttribute{
				ElementType:         types.StringType,
				Computed:            true,
				MarkdownDescription: "Parameter name to value, in units PostgreSQL accepts in `postgresql.conf` and `ALTER SYSTEM`.",
			},
		},
	}
}

func (d *tuningDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m tuningModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	params, err := capacity.Tune(capacity.Hardware{
		VCPUs:          int(m.VCPUs.ValueInt64()),
		MemoryGiB:      m.MemoryGiB.ValueFloat64(),
		DiskGiB:        m.DiskGiB.ValueFloat64(),
		Storage:        capacity.Storage(stringOr(m.Storage, string(capacity.StorageNVMe))),
		Workload:       capacity.Workload(stringOr(m.Workload, string(capacity.WorkloadOLTP))),
		MaxConnections: int(int64Or(m.MaxConnections, capacity.DefaultMaxConnections)),
		PostgresMajor:  int(int64Or(m.PostgresMajor, capacity.DefaultPostgresMajor)),
	})
	if err != nil {
		resp.Diagnostics.AddError("Invalid Hardware",
			"The hardware described cannot be tuned. Fix the arguments as the error says, then plan again.\n\n"+err.Error())
		return
	}
	m.Parameters = params
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Package provider is the Terraform glue: schemas, Configure, and the conversion between framework types
// and the pure packages' types. Decisions live in the pure packages; I/O lives in the adapters.
package provider

import (
	"context"
	"maps"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/ec2cluster"
)

var (
	_ provider.Provider              = (*pgnvmeProvider)(nil)
	_ provider.ProviderWithFunctions = (*pgnvmeProvider)(nil)
)

// New returns a constructor for the provider, as providerserver expects.
func New(version string) func() provider.Provider {
	return NewWithPlatforms(version, nil)
}

// NewWithPlatforms is New with pgnvme_cluster's platforms given (tests hand in fakes); nil means the real
// ones. The platforms live for the provider process.
func NewWithPlatforms(version string, platforms map[cluster.Platform]ClusterPlatform) func() provider.Provider {
	return func() provider.Provider {
		if platforms == nil {
			platforms = map[cluster.Platform]ClusterPlatform{cluster.PlatformLocal: newLocalPlatform()}
		}
		return &pgnvmeProvider{version: version, platforms: platforms, drills: newRestoreDrills(), bench: newPgbenchRunner()}
	}
}

type pgnvmeProvider struct {
	version   string
	platforms map[cluster.Platform]ClusterPlatform
	drills    *restoreDrills
	bench     *pgbenchRunner
}

// Clients is what Configure hands to every resource and data source.
type Clients struct {
	AWS *awsclient.Clients
	// Platforms are pgnvme_cluster's platforms.
	Platforms map[cluster.Platform]ClusterPlatform
	// Drills runs pgnvme_restore_drill's scratch nodes, Bench pgnvme_pgbench's pgbench, on this machine.
	Drills *restoreDrills
	Bench  *pgbenchRunner
}

type providerModel struct {
	Region                    types.String     `tfsdk:"region"`
	Profile                   types.String     `tfsdk:"profile"`
	S3UsePathStyle            types.Bool       `tfsdk:"s3_use_path_style"`
	SkipCredentialsValidation types.Bool       `tfsdk:"skip_credentials_validation"`
	Endpoints                 []endpointsModel `tfsdk:"endpoints"`
	DefaultTags               []defaultTags    `tfsdk:"default_tags"`
}

type endpointsModel struct {
	EC2    types.String `tfsdk:"ec2"`
	S3     types.String `tfsdk:"s3"`
	IAM    types.String `tfsdk:"iam"`
	STS    types.String `tfsdk:"sts"`
	SSM    types.String `tfsdk:"ssm"`
	ELBV2  types.String `tfsdk:"elbv2"`
	ACMPCA types.String `tfsdk:"acmpca"`
}

type defaultTags struct {
	Tags types.Map `tfsdk:"tags"`
}

func (p *pgnvmeProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "pgnvme"
	resp.Version = p.version
}

func (p *pgnvmeProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	endpoint := func(service string) schema.StringAttribute {
		return schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "Custom endpoint URL for " + service + ", e.g. `http://127.0.0.1:5000` for moto or " +
				"LocalStack. Unset keeps the SDK's resolution, which also honours `AWS_ENDPOINT_URL_" + service +
				"` and `AWS_ENDPOINT_URL`.",
			Validators: []validator.String{endpointURL()},
		}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The pgnvme provider runs PostgreSQL on local NVMe instance storage as code: it picks " +
			"EC2 instance types by NVMe capacity, places a primary and standbys across availability zones, and tunes " +
			"PostgreSQL for the machine. AWS settings work like the hashicorp/aws provider's. AWS clients are built " +
			"lazily: surfaces that do not call AWS (the embedded catalog, planning, tuning, functions) need no " +
			"credentials.",
		Attributes: map[string]schema.Attribute{
			"region": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "AWS region used when a data source or resource sets none, e.g. `us-east-1`. " +
					"Defaults to `AWS_REGION`, then `AWS_DEFAULT_REGION`.",
				Validators: []validator.String{regionName()},
			},
			"profile": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Named profile from the shared AWS configuration files. Defaults to `AWS_PROFILE`, then `default`.",
			},
			"s3_use_path_style": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Address S3 buckets as `https://endpoint/bucket` instead of " +
					"`https://bucket.endpoint`; needed by most S3 emulators. Defaults to `false`.",
			},
			"skip_credentials_validation": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Skip the `sts:GetCallerIdentity` call made before the first AWS request of a " +
					"region. Defaults to `false`.",
			},
		},
		Blocks: map[string]schema.Block{
			"endpoints": schema.ListNestedBlock{
				MarkdownDescription: "Service endpoint overrides, at most one block, as in the hashicorp/aws provider.",
				Validators:          []validator.List{listvalidator.SizeAtMost(1)},
				NestedObject: schema.NestedBlockObject{
					Attributes: map[string]schema.Attribute{
						"ec2":    endpoint("EC2"),
						"s3":     endpoint("S3"),
						"iam":    endpoint("IAM"),
						"sts":    endpoint("STS"),
						"ssm":    endpoint("SSM"),
						"elbv2":  endpoint("ELBV2"),
						"acmpca": endpoint("ACMPCA"),
					},
				},
			},
			"default_tags": schema.ListNestedBlock{
				MarkdownDescription: "Tags applied to every AWS object this provider creates, at most one block. " +
					"Tags set on a resource win over these.",
				Validators: []validator.List{listvalidator.SizeAtMost(1)},
				NestedObject: schema.NestedBlockObject{
					Attributes: map[string]schema.Attribute{
						"tags": schema.MapAttribute{
							ElementType:         types.StringType,
							Optional:            true,
							MarkdownDescription: "Key-value map of tags.",
						},
					},
				},
			},
		},
	}
}

func (p *pgnvmeProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cfg := awsclient.Config{
		Region:                    m.Region.ValueString(),
		Profile:                   m.Profile.ValueString(),
		S3UsePathStyle:            m.S3UsePathStyle.ValueBool(),
		SkipCredentialsValidation: m.SkipCredentialsValidation.ValueBool(),
	}
	if len(m.Endpoints) == 1 {
		e := m.Endpoints[0]
		cfg.Endpoints = awsclient.Endpoints{
			EC2:    e.EC2.ValueString(),
			S3:     e.S3.ValueString(),
			IAM:    e.IAM.ValueString(),
			STS:    e.STS.ValueString(),
			SSM:    e.SSM.ValueString(),
			ELBV2:  e.ELBV2.ValueString(),
			ACMPCA: e.ACMPCA.ValueString(),
		}
	}
	if len(m.DefaultTags) == 1 && !m.DefaultTags[0].Tags.IsNull() {
		tags := map[string]string{}
		resp.Diagnostics.Append(m.DefaultTags[0].Tags.ElementsAs(ctx, &tags, false)...)
		cfg.DefaultTags = tags
	}
	if resp.Diagnostics.HasError() {
		return
	}
	tflog.Debug(ctx, "configured pgnvme provider", map[string]any{"region": cfg.Region, "profile": cfg.Profile})
	aws := awsclient.New(cfg)
	platforms := maps.Clone(p.platforms)
	if _, given := platforms[cluster.PlatformAWS]; !given {
		// The EC2 platform works with this configuration's AWS clients (built lazily: no call until used).
		platforms[cluster.PlatformAWS] = ec2cluster.NewPlatform(aws)
	}
	clients := &Clients{AWS: aws, Platforms: platforms, Drills: p.drills, Bench: p.bench}
	resp.DataSourceData = clients
	resp.ResourceData = clients
}

func (p *pgnvmeProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewArchiveBucketResource,
		NewSynchronousReplicationResource,
		NewClusterResource,
	}
}

func (p *pgnvmeProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewInstanceTypesDataSource,
		NewCapacityPlanDataSource,
		NewTuningDataSource,
		NewPlacementDataSource,
		NewReplicationStatusDataSource,
		NewPgbenchDataSource,
		NewNodeBootstrapDataSource,
		NewRestoreDrillDataSource,
	}
}

func (p *pgnvmeProvider) Functions(_ context.Context) []func() function.Function {
	return []func() function.Function{
		NewSynchronousStandbyNamesFunction,
		NewParseSynchronousStandbyNamesFunction,
		NewPgbenchScaleFunction,
		NewPgbenchSizeGiBFunction,
	}
}

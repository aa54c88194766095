package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

// archiveCheck adapts a pure validation function of the archive package into a string validator, so the
// plan-time error carries the attribute path and the package's sentence.
type archiveCheck struct {
	check   func(string) error
	summary string
	what    string
}

func (v archiveCheck) Description(context.Context) string             { return v.what }
func (v archiveCheck) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v archiveCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := v.check(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, v.summary, err.Error())
	}
}

func (r *archiveBucketResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	kmsARN := archiveCheck{archive.ValidateKMSKeyARN, "Invalid KMS Key ARN", "must be a KMS key or alias ARN"}
	resp.Schema = schema.Schema{
		MarkdownDescription: "An S3 bucket built to hold a PostgreSQL WAL archive and base backups for WAL-G (and " +
			"pgBackRest): versioning, default encryption (SSE-KMS with a bucket key, or AES256), every public access " +
			"block, `BucketOwnerEnforced`, a TLS-only bucket policy, and lifecycle rules that only expire noncurrent " +
			"versions and abort stale multipart uploads, never current objects (expiring WAL breaks point-in-time " +
			"recovery; retention is WAL-G's `delete` job). Optionally Object Lock and a replica bucket in another " +
			"region. Outputs the WAL-G environment, pgBackRest options and a least-privilege IAM policy for nodes.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The bucket name.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"bucket": schema.StringAttribute{
				Optional: true,
				Computed: true,
				MarkdownDescription: "Bucket name: 3 to 63 lower-case letters, digits, hyphens (and dots, which break " +
					"virtual-hosted TLS: avoid them). Conflicts with `bucket_prefix`; with neither, a name starting " +
					"`pgnvme-` is generated. Changing it replaces the bucket.",
				Validators: []validator.String{
					archiveCheck{archive.ValidateBucketName, "Invalid Bucket Name", "must be a valid S3 bucket name"},
					stringvalidator.ConflictsWith(path.MatchRoot("bucket_prefix")),
				},
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
			},
			"bucket_prefix": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("Generate the name from this prefix plus %d random characters; at "+
					"most %d characters. Changing it replaces the bucket.", archive.GeneratedSuffixLength, 63-archive.GeneratedSuffixLength),
				Validators:    []validator.String{archiveCheck{archive.ValidateBucketPrefix, "Invalid Bucket Prefix", "must be a valid bucket name prefix"}},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"region": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				MarkdownDescription: "Region of the bucket. Defaults to the provider's `region`, then `AWS_REGION`. Changing it replaces the bucket.",
				Validators:          []validator.String{regionName()},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown(), stringplanmodifier.RequiresReplace()},
			},
			"prefix": schema.StringAttribute{
				Optional: true,
				Computed: true,
				Default:  stringdefault.StaticString(""),
				MarkdownDescription: "Path inside the bucket for this cluster, e.g. `clusters/orders` (no leading or " +
					"trailing `/`). Nodes get access to this path only. Defaults to `\"\"`, the whole bucket.",
				Validators: []validator.String{archiveCheck{archive.ValidatePrefix, "Invalid Prefix", "must be a relative S3 key prefix"}},
			},
			"kms_key_arn": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "KMS key ARN for SSE-KMS default encryption with an S3 bucket key, in the bucket's " +
					"region. Unset: SSE-S3 (AES256).",
				Validators: []validator.String{kmsARN},
			},
			"noncurrent_version_expiration_days": schema.Int64Attribute{
				Optional:            true,
				Computed:            true,
				Default:             int64default.StaticInt64(archive.DefaultNoncurrentVersionExpirationDays),
				MarkdownDescription: fmt.Sprintf("Days after which overwritten or deleted object versions are expired. Defaults to `%d`; at least 1.", archive.DefaultNoncurrentVersionExpirationDays),
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
			"abort_incomplete_multipart_upload_days": schema.Int64Attribute{
				Optional:            true,
				Computed:            true,
				Default:             int64default.StaticInt64(archive.DefaultAbortIncompleteMultipartUploadDays),
				MarkdownDescription: fmt.Sprintf("Days after which unfinished multipart uploads are aborted. Defaults to `%d`; at least 1.", archive.DefaultAbortIncompleteMultipartUploadDays),
				Validators:          []validator.Int64{int64validator.AtLeast(1)},
			},
			"object_lock": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "Object Lock default retention: every object version is protected for `days` " +
					"after it is written. Only possible when the bucket is created, so changing it replaces the bucket.",
				Attributes: map[string]schema.Attribute{
					"mode": schema.StringAttribute{
						Required: true,
						MarkdownDescription: "`GOVERNANCE` (users with `s3:BypassGovernanceRetention` may delete early) or " +
							"`COMPLIANCE` (nobody may, not even the root user, until retention ends).",
						Validators: []validator.String{stringvalidator.OneOf(archive.LockGovernance, archive.LockCompliance)},
					},
					"days": schema.Int64Attribute{
						Required:            true,
						MarkdownDescription: "Retention in days, 1 to 36500. Keep it no longer than WAL-G's retention or `delete` will fail.",
						Validators:          []validator.Int64{int64validator.Between(1, 36500)},
					},
				},
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
			},
			"replica": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "A second bucket in another region, with the same guards, that receives every object " +
					"and delete marker through S3 replication (a role `pgnvme-replication-...` is created for it). Nodes " +
					"never write it. The provider creates the bucket when it does not exist.",
				Attributes: map[string]schema.Attribute{
					"region": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "Region of the replica; must differ from the archive's.",
						Validators:          []validator.String{regionName()},
					},
					"bucket": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "Name of the replica bucket.",
						Validators:          []validator.String{archiveCheck{archive.ValidateBucketName, "Invalid Bucket Name", "must be a valid S3 bucket name"}},
					},
					"kms_key_arn": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "KMS key ARN in the replica's region for its encryption. Unset: AES256.",
						Validators:          []validator.String{kmsARN},
					},
					"storage_class": schema.StringAttribute{
						Optional: true,
						Computed: true,
						Default:  stringdefault.StaticString("STANDARD"),
						MarkdownDescription: "Storage class of replicated objects: `STANDARD` (default), `STANDARD_IA`, " +
							"`ONEZONE_IA`, `INTELLIGENT_TIERING`, `GLACIER_IR`, `GLACIER`, `DEEP_ARCHIVE` (the last two make a " +
							"restore from the replica take hours).",
						Validators: []validator.String{archiveCheck{archive.ValidateStorageClass, "Invalid Storage Class", "must be an S3 storage class"}},
					},
					"replicate_delete_markers": schema.BoolAttribute{
						Optional: true,
						Computed: true,
						Default:  booldefault.StaticBool(true),
						MarkdownDescription: "Replicate delete markers, so what WAL-G's retention deletes from the archive " +
							"also expires from the replica (after `noncurrent_version_expiration_days`). `false` keeps every " +
							"object the archive ever held current in the replica: protection against deletes at the source, " +
							"paid for in storage. Defaults to `true`.",
					},
				},
			},
			"compression": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(archive.DefaultCompression),
				MarkdownDescription: "WAL-G compression (`WALG_COMPRESSION_METHOD`): `lz4` (default), `lzma`, `zstd` or `brotli`.",
				Validators:          []validator.String{stringvalidator.OneOf(archive.Compressions...)},
			},
			"deny_insecure_transport": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(true),
				MarkdownDescription: "Attach a bucket policy that denies every request made without TLS " +
					"(`aws:SecureTransport = false`), like terraform-aws-modules' `attach_deny_insecure_transport_policy`. Defaults to `true`.",
			},
			"force_destroy": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
				MarkdownDescription: "Allow destroying a bucket that still holds objects: every version and delete marker " +
					"is deleted first (Object Lock retention can still prevent it; the error names the object). Defaults " +
					"to `false`: a non-empty archive is refused. Apply the change before destroying.",
			},
			"tags": schema.MapAttribute{
				ElementType:         types.StringType,
				Optional:            true,
				MarkdownDescription: "Tags for the bucket (and replica and replication role), merged over the provider's `default_tags`.",
			},
			"tags_all": schema.MapAttribute{
				ElementType:         types.StringType,
				Computed:            true,
				MarkdownDescription: "All tags on the bucket: the provider's `default_tags` with `tags` on top.",
			},
			"arn":            schema.StringAttribute{Computed: true, MarkdownDescription: "ARN of the bucket."},
			"walg_s3_prefix": schema.StringAttribute{Computed: true, MarkdownDescription: "`s3://bucket/prefix`, WAL-G's `WALG_S3_PREFIX`."},
			"walg_env": schema.MapAttribute{
				ElementType: types.StringType,
				Computed:    true,
				MarkdownDescription: "Environment for WAL-G on the nodes: `WALG_S3_PREFIX`, `AWS_REGION`, `WALG_S3_SSE`, " +
					"`WALG_S3_SSE_KMS_ID` (with KMS), `WALG_COMPRESSION_METHOD`, `WALG_DELTA_MAX_STEPS`, " +
					"`WALG_UPLOAD_CONCURRENCY`, `S3_RETENTION_PERIOD` and `S3_RETENTION_MODE` (with Object Lock), and the " +
					"endpoint settings when the provider overrides the S3 endpoint. No credentials: nodes use their " +
					"instance profile.",
			},
			"pgbackrest_options": schema.MapAttribute{
				ElementType: types.StringType,
				Computed:    true,
				MarkdownDescription: "pgBackRest repository options (`repo1-*`) for the same bucket and prefix; add " +
					"credentials (`repo1-s3-key-type = auto` on EC2) yourself.",
			},
			"node_policy_json": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "Least-privilege IAM policy for database nodes: list the bucket under `prefix` only; " +
					"get, put and delete objects under `prefix`; encrypt, decrypt and generate data keys with `kms_key_arn`.",
			},
			"replica_arn": schema.StringAttribute{Computed: true, MarkdownDescription: "ARN of the replica bucket, `\"\"` without one."},
			"replication_role_arn": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "ARN of the IAM role S3 replication uses, `\"\"` without a replica.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"guards": schema.MapAttribute{
				ElementType: types.StringType,
				Computed:    true,
				MarkdownDescription: "State of each guarded setting as last read: `versioning`, `public_access_block`, " +
					"`object_ownership`, `encryption`, `bucket_policy`, `lifecycle` (and `replication`, `replica` with a " +
					"replica). `ok`, or what is live instead. A change made outside Terraform shows here in the next " +
					"plan, and the apply restores the setting.",
			},
		},
	}
}

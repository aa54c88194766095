package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
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
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
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
		resp.Diagnostics.AddAttributeError(req.Path, v.summary, fmt.Sprintf("The value %q is not accepted: it %s, "+
			"so nothing was planned. Change it as described below and plan again.\n\n%s", req.ConfigValue.ValueString(), v.what, err))
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
					"`WALG_S3_SSE_KMS_ID` (with KMS), `WALG_COMPRESSION_METHOD`, `WALG_DELTA_MAX_STEPS`, `WALG_PREVENT_WAL_OVERWRITE` (`true`: a push never replaces a segment archived with other content), " +
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
		// Blocks, not nested attributes: Terraform drops an unknown key of a nested attribute's object before
		// the provider sees it (hashicorp/terraform#33570), so a misspelt argument would be ignored; in a block
		// it is an error at validate.
		Blocks: map[string]schema.Block{
			"object_lock": schema.SingleNestedBlock{
				MarkdownDescription: "Object Lock default retention: every object version is protected for `days` " +
					"after it is written. Only possible when the bucket is created, so changing it replaces the bucket.",
				Attributes: map[string]schema.Attribute{
					"mode": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "`GOVERNANCE` (users with `s3:BypassGovernanceRetention` may delete early) or " +
							"`COMPLIANCE` (nobody may, not even the root user, until retention ends). Required in the block.",
						Validators: []validator.String{requiredInBlock(), stringvalidator.OneOf(archive.LockGovernance, archive.LockCompliance)},
					},
					"days": schema.Int64Attribute{
						Optional:            true,
						MarkdownDescription: "Retention in days, 1 to 36500. Keep it no longer than WAL-G's retention or `delete` will fail. Required in the block.",
						Validators:          []validator.Int64{requiredInBlock(), int64validator.Between(1, 36500)},
					},
				},
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
			},
			"replica": schema.SingleNestedBlock{
				MarkdownDescription: "A second bucket in another region, with the same guards, that receives every object " +
					"and delete marker through S3 replication (a role `pgnvme-replication-...` is created for it). Nodes " +
					"never write it. The provider creates the bucket when it does not exist.",
				Attributes: map[string]schema.Attribute{
					"region": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Region of the replica; must differ from the archive's. Required in the block.",
						Validators:          []validator.String{requiredInBlock(), regionName()},
					},
					"bucket": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Name of the replica bucket. Required in the block.",
						Validators:          []validator.String{requiredInBlock(), archiveCheck{archive.ValidateBucketName, "Invalid Bucket Name", "must be a valid S3 bucket name"}},
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
							"paid for in storage. Defaults to `true`. An S3 endpoint that does not keep delete-marker " +
							"replication (moto, some emulators and proxies) fails the apply with \"Archive Guard Not Held\": set " +
							"`false` there.",
					},
				},
			},
		},
	}
}

// The model of the schema above, and the conversions of an imported bucket and of validation errors into it.

type archiveBucketModel struct {
	ID                                 types.String `tfsdk:"id"`
	Bucket                             types.String `tfsdk:"bucket"`
	BucketPrefix                       types.String `tfsdk:"bucket_prefix"`
	Region                             types.String `tfsdk:"region"`
	Prefix                             types.String `tfsdk:"prefix"`
	KMSKeyARN                          types.String `tfsdk:"kms_key_arn"`
	NoncurrentVersionExpirationDays    types.Int64  `tfsdk:"noncurrent_version_expiration_days"`
	AbortIncompleteMultipartUploadDays types.Int64  `tfsdk:"abort_incomplete_multipart_upload_days"`
	ObjectLock                         types.Object `tfsdk:"object_lock"`
	Replica                            types.Object `tfsdk:"replica"`
	Compression                        types.String `tfsdk:"compression"`
	DenyInsecureTransport              types.Bool   `tfsdk:"deny_insecure_transport"`
	ForceDestroy                       types.Bool   `tfsdk:"force_destroy"`
	Tags                               types.Map    `tfsdk:"tags"`
	TagsAll                            types.Map    `tfsdk:"tags_all"`

	ARN                types.String `tfsdk:"arn"`
	WALGS3Prefix       types.String `tfsdk:"walg_s3_prefix"`
	WALGEnv            types.Map    `tfsdk:"walg_env"`
	PgBackRestOptions  types.Map    `tfsdk:"pgbackrest_options"`
	NodePolicyJSON     types.String `tfsdk:"node_policy_json"`
	ReplicaARN         types.String `tfsdk:"replica_arn"`
	ReplicationRoleARN types.String `tfsdk:"replication_role_arn"`
	Guards             types.Map    `tfsdk:"guards"`
}

type objectLockModel struct {
	Mode types.String `tfsdk:"mode"`
	Days types.Int64  `tfsdk:"days"`
}

type replicaModel struct {
	Region       types.String `tfsdk:"region"`
	Bucket       types.String `tfsdk:"bucket"`
	KMSKeyARN    types.String `tfsdk:"kms_key_arn"`
	StorageClass types.String `tfsdk:"storage_class"`
	DeleteMarks  types.Bool   `tfsdk:"replicate_delete_markers"`
}

var objectLockAttrTypes = map[string]attr.Type{"mode": types.StringType, "days": types.Int64Type}

var replicaAttrTypes = map[string]attr.Type{
	"region": types.StringType, "bucket": types.StringType, "kms_key_arn": types.StringType, "storage_class": types.StringType,
	"replicate_delete_markers": types.BoolType,
}

// importedState rebuilds the arguments of an imported bucket from what S3 stores about it.
func importedState(ctx context.Context, bucket, region string, imp awsclient.Imported, diags *diag.Diagnostics) archiveBucketModel {
	s := imp.Spec
	m := archiveBucketModel{
		ID:                                 types.StringValue(bucket),
		Bucket:                             types.StringValue(bucket),
		BucketPrefix:                       types.StringNull(),
		Region:                             types.StringValue(region),
		Prefix:                             types.StringValue(""),
		KMSKeyARN:                          stringOrNull(s.KMSKeyARN),
		NoncurrentVersionExpirationDays:    types.Int64Value(int64(s.NoncurrentVersionExpirationDays)),
		AbortIncompleteMultipartUploadDays: types.Int64Value(int64(s.AbortIncompleteMultipartUploadDays)),
		Compression:                        types.StringValue(s.Compression),
		DenyInsecureTransport:              types.BoolValue(s.DenyInsecureTransport),
		ForceDestroy:                       types.BoolValue(false),
		Tags:                               types.MapNull(types.StringType),
		ObjectLock:                         types.ObjectNull(objectLockAttrTypes),
		Replica:                            types.ObjectNull(replicaAttrTypes),
		ReplicationRoleARN:                 types.StringValue(imp.RoleARN),
	}
	var d diag.Diagnostics
	if l := s.ObjectLock; l != nil {
		m.ObjectLock, d = types.ObjectValue(objectLockAttrTypes, map[string]attr.Value{
			"mode": types.StringValue(l.Mode), "days": types.Int64Value(int64(l.Days)),
		})
		diags.Append(d...)
	}
	if rep := s.Replica; rep != nil {
		m.Replica, d = types.ObjectValue(replicaAttrTypes, map[string]attr.Value{
			"region": types.StringValue(rep.Region), "bucket": types.StringValue(rep.Bucket),
			"kms_key_arn": stringOrNull(rep.KMSKeyARN), "storage_class": types.StringValue(rep.StorageClass),
			"replicate_delete_markers": types.BoolValue(!rep.KeepDeleted),
		})
		diags.Append(d...)
	}
	return m
}

// stringMap converts a Go map into a map attribute.
func stringMap(ctx context.Context, m map[string]string, diags *diag.Diagnostics) types.Map {
	v, d := types.MapValueFrom(ctx, types.StringType, m)
	diags.Append(d...)
	return v
}

// goMap converts a map attribute into a Go map; null and unknown give an empty map.
func goMap(ctx context.Context, m types.Map, diags *diag.Diagnostics) map[string]string {
	out := map[string]string{}
	if !m.IsNull() && !m.IsUnknown() {
		diags.Append(m.ElementsAs(ctx, &out, false)...)
	}
	return out
}

func stringOrNull(v string) types.String {
	if v == "" {
		return types.StringNull()
	}
	return types.StringValue(v)
}

// validationDiags reports each problem Spec.Validate found on its attribute.
func validationDiags(err error, diags *diag.Diagnostics) {
	errs := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	}
	for _, e := range errs {
		detail := "This configuration would not make a working WAL archive, so nothing was planned. Change it as " +
			"described below and plan again.\n\n" + e.Error()
		var v *archive.ValidationError
		if !errors.As(e, &v) || v.Attribute == "" {
			diags.AddError("Invalid Archive Bucket", detail)
			continue
		}
		names := strings.Split(v.Attribute, ".")
		p := path.Root(names[0])
		for _, n := range names[1:] {
			p = p.AtName(n)
		}
		diags.AddAttributeError(p, "Invalid Archive Bucket", detail)
	}
}

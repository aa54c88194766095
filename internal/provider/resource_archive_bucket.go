package provider

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
)

var (
	_ resource.Resource                = (*archiveBucketResource)(nil)
	_ resource.ResourceWithConfigure   = (*archiveBucketResource)(nil)
	_ resource.ResourceWithImportState = (*archiveBucketResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*archiveBucketResource)(nil)
)

// internalTagPrefix marks the tags the provider keeps on the bucket so an import can recover settings AWS
// does not store (the cluster prefix, the WAL-G compression). They are hidden from tags and tags_all.
const (
	tagPrefix      = awsclient.InternalTagPrefix + "prefix"
	tagCompression = awsclient.InternalTagPrefix + "compression"
)

// NewArchiveBucketResource is the constructor of pgnvme_archive_bucket.
func NewArchiveBucketResource() resource.Resource { return &archiveBucketResource{} }

type archiveBucketResource struct {
	clients *Clients
}

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

func (r *archiveBucketResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_archive_bucket"
}

func (r *archiveBucketResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.clients = clientsFrom(req.ProviderData, &resp.Diagnostics)
}

// spec builds the archive model from a plan or state. ok is false while a value it needs is unknown.
func (r *archiveBucketResource) spec(ctx context.Context, m archiveBucketModel, diags *diag.Diagnostics) (archive.Spec, bool) {
	if m.Bucket.IsUnknown() || m.Region.IsUnknown() || m.Prefix.IsUnknown() || m.KMSKeyARN.IsUnknown() ||
		m.Compression.IsUnknown() || m.ObjectLock.IsUnknown() || m.Replica.IsUnknown() ||
		m.NoncurrentVersionExpirationDays.IsUnknown() || m.AbortIncompleteMultipartUploadDays.IsUnknown() ||
		m.DenyInsecureTransport.IsUnknown() {
		return archive.Spec{}, false
	}
	cfg := r.clients.AWS.Config()
	s := archive.Spec{
		Bucket:                             m.Bucket.ValueString(),
		Prefix:                             m.Prefix.ValueString(),
		Region:                             m.Region.ValueString(),
		KMSKeyARN:                          m.KMSKeyARN.ValueString(),
		NoncurrentVersionExpirationDays:    int(m.NoncurrentVersionExpirationDays.ValueInt64()),
		AbortIncompleteMultipartUploadDays: int(m.AbortIncompleteMultipartUploadDays.ValueInt64()),
		Compression:                        m.Compression.ValueString(),
		DenyInsecureTransport:              m.DenyInsecureTransport.ValueBool(),
		Endpoint:                           archive.Endpoint{URL: cfg.Endpoints.S3, PathStyle: cfg.S3UsePathStyle},
	}
	if !m.ObjectLock.IsNull() {
		var l objectLockModel
		diags.Append(m.ObjectLock.As(ctx, &l, basetypes.ObjectAsOptions{})...)
		if l.Mode.IsUnknown() || l.Days.IsUnknown() {
			return archive.Spec{}, false
		}
		s.ObjectLock = &archive.ObjectLock{Mode: l.Mode.ValueString(), Days: int(l.Days.ValueInt64())}
	}
	if !m.Replica.IsNull() {
		var rep replicaModel
		diags.Append(m.Replica.As(ctx, &rep, basetypes.ObjectAsOptions{})...)
		if rep.Region.IsUnknown() || rep.Bucket.IsUnknown() || rep.KMSKeyARN.IsUnknown() || rep.StorageClass.IsUnknown() || rep.DeleteMarks.IsUnknown() {
			return archive.Spec{}, false
		}
		s.Replica = &archive.Replica{
			Region: rep.Region.ValueString(), Bucket: rep.Bucket.ValueString(),
			KMSKeyARN: rep.KMSKeyARN.ValueString(), StorageClass: rep.StorageClass.ValueString(),
			KeepDeleted: !rep.DeleteMarks.IsNull() && !rep.DeleteMarks.ValueBool(),
		}
	}
	return s, !diags.HasError()
}

// setDerived fills the attributes computed from the spec alone.
func setDerived(ctx context.Context, m *archiveBucketModel, s archive.Spec, diags *diag.Diagnostics) {
	m.ID = types.StringValue(s.Bucket)
	m.ARN = types.StringValue(s.ARN())
	m.WALGS3Prefix = types.StringValue(s.WALGS3Prefix())
	m.NodePolicyJSON = types.StringValue(s.NodePolicyJSON())
	m.ReplicaARN = types.StringValue(s.ReplicaARN())
	var d diag.Diagnostics
	m.WALGEnv, d = types.MapValueFrom(ctx, types.StringType, s.WALGEnv())
	diags.Append(d...)
	m.PgBackRestOptions, d = types.MapValueFrom(ctx, types.StringType, s.PgBackRestOptions())
	diags.Append(d...)
}

// guardKeys are the guards a spec is checked for.
func guardKeys(s archive.Spec) []string {
	keys := []string{"versioning", "public_access_block", "object_ownership", "encryption", "bucket_policy", "lifecycle"}
	if s.Replica != nil {
		keys = append(keys, "replication", "replica")
	}
	return keys
}

func allGuardsOK(ctx context.Context, s archive.Spec, diags *diag.Diagnostics) types.Map {
	ok := map[string]string{}
	for _, k := range guardKeys(s) {
		ok[k] = "ok"
	}
	v, d := types.MapValueFrom(ctx, types.StringType, ok)
	diags.Append(d...)
	return v
}

func (r *archiveBucketResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.clients == nil {
		return // destroy, or the provider is not configured yet
	}
	var plan archiveBucketModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if plan.Region.IsUnknown() && !req.State.Raw.IsNull() {
		var state archiveBucketModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		plan.Region = state.Region
	}
	if plan.Region.IsUnknown() {
		region, err := r.clients.AWS.ResolveRegion("")
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("region"), "Missing Region",
				"No AWS region is set. Set `region` here or on the provider, or export AWS_REGION.")
			return
		}
		plan.Region = types.StringValue(region)
	}
	tagsAll, ok := r.mergedTags(ctx, plan.Tags, &resp.Diagnostics)
	if ok {
		plan.TagsAll = tagsAll
	}
	if plan.Bucket.IsUnknown() && plan.BucketPrefix.IsNull() && !req.State.Raw.IsNull() {
		var state archiveBucketModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		plan.Bucket = state.Bucket
	}
	named := !plan.Bucket.IsUnknown() && !plan.Bucket.IsNull()
	if !named && !plan.BucketPrefix.IsUnknown() {
		// bucket_prefix: the name is chosen at create; validate the rest with a stand-in of the same length.
		plan.Bucket = types.StringValue(archive.GeneratedBucketName(plan.BucketPrefix.ValueString(), strings.Repeat("a", archive.GeneratedSuffixLength)))
	}
	s, known := r.spec(ctx, plan, &resp.Diagnostics)
	if !named {
		plan.Bucket = types.StringUnknown()
	}
	if known {
		if err := s.Validate(); err != nil {
			resp.Diagnostics.AddError("Invalid Archive Bucket", err.Error()+" Fix the configuration and plan again.")
			return
		}
		if named {
			setDerived(ctx, &plan, s, &resp.Diagnostics)
		}
		plan.Guards = allGuardsOK(ctx, s, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// mergedTags is the provider's default_tags overlaid with the resource's tags.
func (r *archiveBucketResource) mergedTags(ctx context.Context, tags types.Map, diags *diag.Diagnostics) (types.Map, bool) {
	if tags.IsUnknown() {
		return types.MapUnknown(types.StringType), false
	}
	all := maps.Clone(r.clients.AWS.Config().DefaultTags)
	if all == nil {
		all = map[string]string{}
	}
	own := map[string]string{}
	if !tags.IsNull() {
		diags.Append(tags.ElementsAs(ctx, &own, false)...)
	}
	maps.Copy(all, own)
	v, d := types.MapValueFrom(ctx, types.StringType, all)
	diags.Append(d...)
	return v, !diags.HasError()
}

// bucketTags are the tags written to AWS: tags_all plus the internal ones.
func bucketTags(ctx context.Context, m archiveBucketModel, diags *diag.Diagnostics) map[string]string {
	out := map[string]string{}
	if !m.TagsAll.IsNull() && !m.TagsAll.IsUnknown() {
		diags.Append(m.TagsAll.ElementsAs(ctx, &out, false)...)
	}
	out[tagPrefix] = m.Prefix.ValueString()
	out[tagCompression] = m.Compression.ValueString()
	return out
}

func generatedSuffix() (string, error) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	s := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
	return s[:archive.GeneratedSuffixLength], nil
}

func (r *archiveBucketResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan archiveBucketModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if plan.Bucket.IsUnknown() || plan.Bucket.IsNull() {
		suffix, err := generatedSuffix()
		if err != nil {
			resp.Diagnostics.AddError("Bucket Name Generation Failed", err.Error())
			return
		}
		plan.Bucket = types.StringValue(archive.GeneratedBucketName(plan.BucketPrefix.ValueString(), suffix))
	}
	s, ok := r.spec(ctx, plan, &resp.Diagnostics)
	if !ok {
		resp.Diagnostics.AddError("Provider Bug", "This is a bug in the provider: a value of pgnvme_archive_bucket was still unknown at apply. Please report it.")
		return
	}
	setDerived(ctx, &plan, s, &resp.Diagnostics)
	api, err := r.clients.AWS.S3(ctx, s.Region)
	if err != nil {
		resp.Diagnostics.AddError("AWS Client Failed", err.Error())
		return
	}

	tflog.Info(ctx, "creating archive bucket", map[string]any{"bucket": s.Bucket, "region": s.Region})
	if err := awsclient.CreateBucket(ctx, api, s.Bucket, s.Region, s.ObjectLock, bucketTags(ctx, plan, &resp.Diagnostics)); err != nil {
		resp.Diagnostics.AddError("Bucket Creation Failed", fmt.Sprintf("Creating bucket %s in %s failed. %s", s.Bucket, s.Region, err))
		return
	}
	// From here on the bucket exists: record it, so an error below leaves state that a re-apply finishes
	// (Terraform keeps a failed create as tainted and replaces it; Delete handles a half-configured bucket).
	plan.Guards = types.MapNull(types.StringType)
	plan.ReplicationRoleARN = types.StringValue("")
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	if err := awsclient.WaitBucketExists(ctx, api, s.Bucket, awsclient.BucketCreateTimeout); err != nil {
		resp.Diagnostics.AddError("Bucket Creation Failed", err.Error())
		return
	}
	if !r.apply(ctx, &plan, s, &resp.Diagnostics) {
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		return
	}
	r.readInto(ctx, &plan, s, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// readInto reads the live guards (and the replica's) into m.Guards.
func (r *archiveBucketResource) readInto(ctx context.Context, m *archiveBucketModel, s archive.Spec, diags *diag.Diagnostics) {
	drift, err := awsclient.ReadArchiveGuards(ctx, r.clients.AWS, s, m.ReplicationRoleARN.ValueString())
	if err != nil {
		diags.AddError("Bucket Read Failed", err.Error())
		return
	}
	v, d := types.MapValueFrom(ctx, types.StringType, drift)
	diags.Append(d...)
	m.Guards = v
}

// apply runs awsclient.ApplyArchive and records the replication role.
func (r *archiveBucketResource) apply(ctx context.Context, m *archiveBucketModel, s archive.Spec, diags *diag.Diagnostics) bool {
	roleARN, err := awsclient.ApplyArchive(ctx, r.clients.AWS, s, bucketTags(ctx, *m, diags))
	m.ReplicationRoleARN = types.StringValue(roleARN)
	if err != nil {
		diags.AddError("Bucket Configuration Failed", fmt.Sprintf("Applying the archive bucket's settings failed; "+
			"the bucket is recorded in state and the next apply finishes the job.\n\n%s", err))
		return false
	}
	return true
}

// deleteDiag turns a delete error into a diagnostic that says what to do.
func deleteDiag(err error, diags *diag.Diagnostics) {
	var notEmpty *awsclient.BucketNotEmptyError
	var locked *awsclient.ObjectLockedError
	switch {
	case errors.As(err, &notEmpty):
		diags.AddAttributeError(path.Root("force_destroy"), "Bucket Not Empty",
			fmt.Sprintf("%s, so it is not deleted. Move or delete the objects yourself, or set force_destroy = true "+
				"and apply before destroying.", notEmpty.Error()))
	case errors.As(err, &locked):
		diags.AddAttributeError(path.Root("object_lock"), "Object Lock Prevents Deletion", err.Error())
	default:
		diags.AddError("Bucket Deletion Failed", err.Error())
	}
}

func (r *archiveBucketResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state archiveBucketModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	bucket := state.ID.ValueString()
	region := state.Region.ValueString()
	if region == "" {
		var err error
		if region, err = r.clients.AWS.ResolveRegion(""); err != nil {
			resp.Diagnostics.AddError("Missing Region", "No AWS region is set: set the provider's region or AWS_REGION.")
			return
		}
	}
	api, err := r.clients.AWS.S3(ctx, region)
	if err != nil {
		resp.Diagnostics.AddError("AWS Client Failed", err.Error())
		return
	}
	actual, err := awsclient.FindBucket(ctx, api, bucket)
	if errors.Is(err, awsclient.ErrBucketNotFound) {
		tflog.Warn(ctx, "archive bucket is gone; removing it from state", map[string]any{"bucket": bucket})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Bucket Read Failed", err.Error())
		return
	}
	if actual != "" && actual != region {
		region = actual
		if api, err = r.clients.AWS.S3(ctx, region); err != nil {
			resp.Diagnostics.AddError("AWS Client Failed", err.Error())
			return
		}
	}
	if state.Bucket.IsNull() || state.Bucket.ValueString() == "" {
		state = r.importedState(ctx, bucket, region, &resp.Diagnostics)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	state.Region = types.StringValue(region)

	tags, err := awsclient.ReadTags(ctx, api, bucket)
	if err != nil {
		resp.Diagnostics.AddError("Bucket Read Failed", err.Error())
		return
	}
	if v, ok := tags[tagPrefix]; ok {
		state.Prefix = types.StringValue(v)
	}
	if v, ok := tags[tagCompression]; ok && v != "" {
		state.Compression = types.StringValue(v)
	}
	r.readTags(ctx, &state, awsclient.PublicTags(tags), &resp.Diagnostics)

	s, ok := r.spec(ctx, state, &resp.Diagnostics)
	if !ok {
		return
	}
	setDerived(ctx, &state, s, &resp.Diagnostics)
	r.readInto(ctx, &state, s, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// readTags splits the bucket's live tags into tags_all, and tags (what is not a provider default or equals it).
func (r *archiveBucketResource) readTags(ctx context.Context, m *archiveBucketModel, live map[string]string, diags *diag.Diagnostics) {
	var d diag.Diagnostics
	m.TagsAll, d = types.MapValueFrom(ctx, types.StringType, live)
	diags.Append(d...)
	defaults := r.clients.AWS.Config().DefaultTags
	own := map[string]string{}
	configured := map[string]string{}
	if !m.Tags.IsNull() && !m.Tags.IsUnknown() {
		diags.Append(m.Tags.ElementsAs(ctx, &configured, false)...)
	}
	for k, v := range live {
		if dv, isDefault := defaults[k]; isDefault && dv == v {
			if _, mine := configured[k]; !mine {
				continue
			}
		}
		own[k] = v
	}
	if len(own) == 0 && m.Tags.IsNull() {
		return
	}
	m.Tags, d = types.MapValueFrom(ctx, types.StringType, own)
	diags.Append(d...)
}

// importedState rebuilds the arguments of an imported bucket from what S3 stores about it.
func (r *archiveBucketResource) importedState(ctx context.Context, bucket, region string, diags *diag.Diagnostics) archiveBucketModel {
	imp, err := awsclient.ReadImported(ctx, r.clients.AWS, bucket, region)
	if err != nil {
		diags.AddError("Bucket Read Failed", err.Error())
		return archiveBucketModel{}
	}
	s := imp.Spec
	m := archiveBucketModel{
		ID:                                 types.StringValue(bucket),
		Bucket:                             types.StringValue(bucket),
		BucketPrefix:                       types.StringNull(),
		Region:                             types.StringValue(region),
		Prefix:                             types.StringValue(""),
		KMSKeyARN:                          types.StringNull(),
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
	if s.KMSKeyARN != "" {
		m.KMSKeyARN = types.StringValue(s.KMSKeyARN)
	}
	var d diag.Diagnostics
	if l := s.ObjectLock; l != nil {
		m.ObjectLock, d = types.ObjectValue(objectLockAttrTypes, map[string]attr.Value{
			"mode": types.StringValue(l.Mode), "days": types.Int64Value(int64(l.Days)),
		})
		diags.Append(d...)
	}
	if rep := s.Replica; rep != nil {
		kms := types.StringNull()
		if rep.KMSKeyARN != "" {
			kms = types.StringValue(rep.KMSKeyARN)
		}
		m.Replica, d = types.ObjectValue(replicaAttrTypes, map[string]attr.Value{
			"region": types.StringValue(rep.Region), "bucket": types.StringValue(rep.Bucket),
			"kms_key_arn": kms, "storage_class": types.StringValue(rep.StorageClass),
			"replicate_delete_markers": types.BoolValue(!rep.KeepDeleted),
		})
		diags.Append(d...)
	}
	return m
}

func (r *archiveBucketResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state archiveBucketModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, ok := r.spec(ctx, plan, &resp.Diagnostics)
	if !ok {
		resp.Diagnostics.AddError("Provider Bug", "This is a bug in the provider: a value of pgnvme_archive_bucket was still unknown at apply. Please report it.")
		return
	}
	old, _ := r.spec(ctx, state, &resp.Diagnostics)
	if old.Replica != nil && (s.Replica == nil || old.Replica.Bucket != s.Replica.Bucket || old.Replica.Region != s.Replica.Region) {
		tflog.Info(ctx, "retiring the old replica", map[string]any{"bucket": old.Replica.Bucket})
		if err := awsclient.RetireReplica(ctx, r.clients.AWS, old, plan.ForceDestroy.ValueBool(), s.Replica == nil); err != nil {
			deleteDiag(err, &resp.Diagnostics)
			return
		}
	}
	setDerived(ctx, &plan, s, &resp.Diagnostics)
	if !r.apply(ctx, &plan, s, &resp.Diagnostics) {
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		return
	}
	r.readInto(ctx, &plan, s, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *archiveBucketResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state archiveBucketModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, ok := r.spec(ctx, state, &resp.Diagnostics)
	if !ok {
		return
	}
	tflog.Info(ctx, "deleting archive bucket", map[string]any{"bucket": s.Bucket, "force_destroy": state.ForceDestroy.ValueBool()})
	if err := awsclient.DeleteArchive(ctx, r.clients.AWS, s, state.ForceDestroy.ValueBool()); err != nil {
		deleteDiag(err, &resp.Diagnostics)
	}
}

func (r *archiveBucketResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if err := archive.ValidateBucketName(req.ID); err != nil {
		resp.Diagnostics.AddError("Invalid Import ID", "Import pgnvme_archive_bucket by bucket name, e.g. `terraform import pgnvme_archive_bucket.wal my-wal-archive`. "+err.Error())
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

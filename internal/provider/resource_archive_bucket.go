package provider

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"

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

// NewArchiveBucketResource is the constructor of pgnvme_archive_bucket.
func NewArchiveBucketResource() resource.Resource { return &archiveBucketResource{} }

type archiveBucketResource struct {
	clients *Clients
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
	m.WALGEnv = stringMap(ctx, s.WALGEnv(), diags)
	m.PgBackRestOptions = stringMap(ctx, s.PgBackRestOptions(), diags)
}

// guardsOK is the planned guards: every guard of s, "ok".
func guardsOK(ctx context.Context, s archive.Spec, diags *diag.Diagnostics) types.Map {
	ok := map[string]string{}
	for _, k := range s.GuardNames() {
		ok[k] = archive.DriftOK
	}
	return stringMap(ctx, ok, diags)
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
	if !plan.Tags.IsUnknown() {
		own := goMap(ctx, plan.Tags, &resp.Diagnostics)
		plan.TagsAll = stringMap(ctx, awsclient.MergeTags(r.clients.AWS.Config().DefaultTags, own), &resp.Diagnostics)
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
			validationDiags(err, &resp.Diagnostics)
			return
		}
		if named {
			setDerived(ctx, &plan, s, &resp.Diagnostics)
		}
		plan.Guards = guardsOK(ctx, s, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// bucketTags are the tags written to AWS: tags_all plus the internal ones.
func bucketTags(ctx context.Context, m archiveBucketModel, diags *diag.Diagnostics) map[string]string {
	return awsclient.ArchiveTags(goMap(ctx, m.TagsAll, diags), m.Prefix.ValueString(), m.Compression.ValueString())
}

// providerBug reports a value that was still unknown at apply.
func providerBug(diags *diag.Diagnostics) {
	diags.AddError("Provider Bug", "A value of pgnvme_archive_bucket was still unknown at apply, so nothing was "+
		"changed. This is a bug in the provider: please report it with the configuration that caused it.")
}

// detail is a diagnostic's detail: what happened, what to do, then the original error.
func detail(happened, todo string, err error) string {
	if hint := awsclient.PermissionHint(err); hint != "" {
		todo = hint + " " + todo
	}
	return happened + " " + todo + "\n\n" + err.Error()
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
			resp.Diagnostics.AddError("Bucket Name Generation Failed", detail("No random name could be generated "+
				"from bucket_prefix, so no bucket was created.", "Apply again, or set `bucket` instead.", err))
			return
		}
		plan.Bucket = types.StringValue(archive.GeneratedBucketName(plan.BucketPrefix.ValueString(), suffix))
	}
	s, ok := r.spec(ctx, plan, &resp.Diagnostics)
	if !ok {
		providerBug(&resp.Diagnostics)
		return
	}
	setDerived(ctx, &plan, s, &resp.Diagnostics)
	tflog.Info(ctx, "creating archive bucket", map[string]any{"bucket": s.Bucket, "region": s.Region})
	created, err := awsclient.CreateArchiveBucket(ctx, r.clients.AWS, s, bucketTags(ctx, plan, &resp.Diagnostics))
	if !created {
		resp.Diagnostics.AddError("Bucket Creation Failed", detail(fmt.Sprintf("Creating bucket %s in %s failed, so "+
			"nothing was created.", s.Bucket, s.Region), "If the name is taken (names are global), choose another "+
			"`bucket` or use `bucket_prefix`; otherwise fix the cause below and apply again.", err))
		return
	}
	// From here on the bucket exists: every path records it, so an error leaves state that a re-apply finishes
	// (Terraform keeps a failed create as tainted and replaces it; Delete handles a half-configured bucket).
	plan.Guards = types.MapNull(types.StringType)
	plan.ReplicationRoleARN = types.StringValue("")
	if err != nil {
		resp.Diagnostics.AddError("Bucket Creation Failed", detail(fmt.Sprintf("Bucket %s was created but S3 did not "+
			"show it in time; it is in state as tainted.", s.Bucket), "Apply again: the next apply replaces it.", err))
	} else {
		r.applyAndRead(ctx, &plan, s, true, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// readGuards reads the live guards (and the replica's) into m.Guards and returns them (nil after an error).
func (r *archiveBucketResource) readGuards(ctx context.Context, m *archiveBucketModel, s archive.Spec, diags *diag.Diagnostics) map[string]string {
	drift, err := awsclient.ReadArchiveGuards(ctx, r.clients.AWS, s, m.ReplicationRoleARN.ValueString())
	if err != nil {
		diags.AddError("Bucket Read Failed", detail(fmt.Sprintf("Reading the guarded settings of bucket %s (and its "+
			"replica) failed, so they are not known.", s.Bucket), "Check that the credentials may read the "+
			"bucket's configuration, then plan or apply again.", err))
		return nil
	}
	m.Guards = stringMap(ctx, drift, diags)
	return drift
}

// applyAndRead applies the guards (awsclient.ApplyArchive), records the replication role and reads the
// guards back. A guard that does not hold right after is an error, not a warning: the plan promised every
// guard "ok", the guards are what this resource exists for (without them an archive loses point-in-time
// recovery or leaks WAL), and an apply that ends green lets a pipeline go on to point database nodes at a
// bucket that is not what its configuration says, while a warning scrolls past unread in CI. The guards as
// read still go to state (Terraform keeps the state an erroring apply returns and skips its consistency
// check), so the next plan shows the drift; a new bucket is tainted, so the next apply replaces it.
func (r *archiveBucketResource) applyAndRead(ctx context.Context, m *archiveBucketModel, s archive.Spec, created bool, diags *diag.Diagnostics) {
	roleARN, err := awsclient.ApplyArchive(ctx, r.clients.AWS, s, bucketTags(ctx, *m, diags))
	m.ReplicationRoleARN = types.StringValue(roleARN)
	if err != nil {
		diags.AddError("Bucket Configuration Failed", detail(fmt.Sprintf("Applying the settings of bucket %s failed; "+
			"the bucket is recorded in state.", s.Bucket), "Fix the cause below and apply again: the next apply "+
			"finishes the job.", err))
		return
	}
	var notHeld *archive.GuardsNotHeldError
	if !errors.As(archive.CheckHeld(s.Bucket, r.readGuards(ctx, m, s, diags)), &notHeld) {
		return
	}
	recorded := " The bucket and its guards as read are recorded in state, so the next plan shows the difference."
	if created {
		recorded = strings.TrimSuffix(recorded, ".") + " (the new bucket is tainted: the next apply replaces it)."
	}
	diags.AddError("Archive Guard Not Held", detail(notHeld.Happened()+recorded, notHeld.Advice(), notHeld))
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
		diags.AddAttributeError(path.Root("object_lock"), "Object Lock Prevents Deletion", detail("An object version "+
			"is still under Object Lock retention, so the bucket was not deleted.", "Destroy again once the "+
			"retention has ended (COMPLIANCE cannot be shortened; GOVERNANCE needs s3:BypassGovernanceRetention), "+
			"or run `terraform state rm` to keep the bucket outside Terraform.", err))
	default:
		diags.AddError("Bucket Deletion Failed", detail("Deleting the archive bucket, its replica or its replication "+
			"role failed; what is left stays in state.", "Fix the cause below (often a missing s3:DeleteBucket, "+
			"s3:DeleteObjectVersion or iam:DeleteRole permission) and run the same command again.", err))
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
	live, err := awsclient.ReadArchive(ctx, r.clients.AWS, bucket, region, state.Bucket.ValueString() == "")
	if errors.Is(err, awsclient.ErrBucketNotFound) {
		tflog.Warn(ctx, "archive bucket is gone; removing it from state", map[string]any{"bucket": bucket})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("Bucket Read Failed", detail(fmt.Sprintf("Reading bucket %s failed, so its state "+
			"was not refreshed.", bucket), "Check that the provider's credentials and endpoints may read it, then "+
			"plan again.", err))
		return
	}
	if live.Imported != nil {
		state = importedState(ctx, bucket, live.Region, *live.Imported, &resp.Diagnostics)
	}
	state.Region = types.StringValue(live.Region)
	if live.Tags.Prefix != nil {
		state.Prefix = types.StringValue(*live.Tags.Prefix)
	}
	if live.Tags.Compression != "" {
		state.Compression = types.StringValue(live.Tags.Compression)
	}
	state.TagsAll = stringMap(ctx, live.Tags.Public, &resp.Diagnostics)
	// tags keeps what is not a provider default (or is configured anyway); null stays null when nothing is.
	own := awsclient.OwnTags(live.Tags.Public, r.clients.AWS.Config().DefaultTags, goMap(ctx, state.Tags, &resp.Diagnostics))
	if len(own) > 0 || !state.Tags.IsNull() {
		state.Tags = stringMap(ctx, own, &resp.Diagnostics)
	}

	s, ok := r.spec(ctx, state, &resp.Diagnostics)
	if !ok {
		return
	}
	setDerived(ctx, &state, s, &resp.Diagnostics)
	r.readGuards(ctx, &state, s, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
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
		providerBug(&resp.Diagnostics)
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
	r.applyAndRead(ctx, &plan, s, false, &resp.Diagnostics)
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
		resp.Diagnostics.AddError("Invalid Import ID", detail(fmt.Sprintf("%q is not a bucket name, so nothing was "+
			"imported.", req.ID), "Import pgnvme_archive_bucket by bucket name, e.g. `terraform import "+
			"pgnvme_archive_bucket.wal my-wal-archive`.", err))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

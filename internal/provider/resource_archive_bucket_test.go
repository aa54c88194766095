package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
)

const archiveAddr = "pgnvme_archive_bucket.wal"

// createKMSKey makes a symmetric key in moto's KMS and returns its ARN.
func createKMSKey(t *testing.T, endpoint, region string) string {
	t.Helper()
	client := kms.NewFromConfig(acctest.MotoAWSConfig(endpoint, region))
	out, err := client.CreateKey(context.Background(), &kms.CreateKeyInput{Description: aws.String("tf-acc archive key")})
	if err != nil {
		t.Fatalf("creating KMS key in moto: %v", err)
	}
	return aws.ToString(out.KeyMetadata.Arn)
}

// checkBucketDestroyed is the CheckDestroy: through the finder, every archive bucket in state is gone.
func checkBucketDestroyed(endpoint string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		for _, rs := range s.RootModule().Resources {
			if rs.Type != "pgnvme_archive_bucket" {
				continue
			}
			api := mustS3Plain(endpoint, rs.Primary.Attributes["region"])
			_, err := awsclient.FindBucket(context.Background(), api, rs.Primary.ID)
			if err == nil {
				return fmt.Errorf("bucket %s still exists after destroy", rs.Primary.ID)
			}
			if !errors.Is(err, awsclient.ErrBucketNotFound) {
				return err
			}
		}
		return nil
	}
}

func archiveConfig(m *acctest.Moto, body string) string {
	return motoProvider(m) + `
resource "pgnvme_archive_bucket" "wal" {
` + body + `
}
`
}

func guardsOK(keys ...string) knownvalue.Check {
	m := map[string]knownvalue.Check{}
	for _, k := range keys {
		m[k] = knownvalue.StringExact("ok")
	}
	return knownvalue.MapExact(m)
}

var basicGuards = []string{"versioning", "public_access_block", "object_ownership", "encryption", "bucket_policy", "lifecycle"}

func TestAccArchiveBucket_basic(t *testing.T) {
	motoEnv(t)
	moto := acctest.StartMoto(t)
	key := createKMSKey(t, moto.URL, "us-east-1")
	// The provider's default_tags reach the bucket through tags_all; tags keeps only the resource's own.
	config := strings.Replace(archiveConfig(moto, fmt.Sprintf(`
  bucket      = "tf-acc-wal-basic"
  prefix      = "clusters/orders"
  kms_key_arn = %q
  tags = {
    team = "db"
  }
`, key)), "  endpoints {", "  default_tags {\n    tags = {\n      env = \"test\"\n    }\n  }\n  endpoints {", 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkBucketDestroyed(moto.URL),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("arn"), knownvalue.StringExact("arn:aws:s3:::tf-acc-wal-basic")),
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("region"), knownvalue.StringExact("us-east-1")),
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("walg_s3_prefix"), knownvalue.StringExact("s3://tf-acc-wal-basic/clusters/orders")),
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("walg_env"), knownvalue.MapPartial(map[string]knownvalue.Check{
						"WALG_S3_PREFIX":          knownvalue.StringExact("s3://tf-acc-wal-basic/clusters/orders"),
						"AWS_REGION":              knownvalue.StringExact("us-east-1"),
						"WALG_S3_SSE":             knownvalue.StringExact("aws:kms"),
						"WALG_S3_SSE_KMS_ID":      knownvalue.StringExact(key),
						"WALG_COMPRESSION_METHOD": knownvalue.StringExact("lz4"),
					})),
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("pgbackrest_options"), knownvalue.MapPartial(map[string]knownvalue.Check{
						"repo1-type":          knownvalue.StringExact("s3"),
						"repo1-s3-bucket":     knownvalue.StringExact("tf-acc-wal-basic"),
						"repo1-path":          knownvalue.StringExact("/clusters/orders/pgbackrest"),
						"repo1-s3-kms-key-id": knownvalue.StringExact(key),
					})),
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("guards"), guardsOK(basicGuards...)),
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("tags_all"), knownvalue.MapExact(map[string]knownvalue.Check{
						"team": knownvalue.StringExact("db"), "env": knownvalue.StringExact("test"),
					})),
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("tags"), knownvalue.MapExact(map[string]knownvalue.Check{"team": knownvalue.StringExact("db")})),
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("replica_arn"), knownvalue.StringExact("")),
					bucketIsLockedDown(moto.URL, "tf-acc-wal-basic", key),
				},
			},
			{
				ResourceName:      archiveAddr,
				ImportState:       true,
				ImportStateId:     "tf-acc-wal-basic",
				ImportStateVerify: true,
			},
		},
	})
}

// bucketIsLockedDown reads the created bucket with the SDK, not through the provider: every public access
// block on, BucketOwnerEnforced, versioning on, SSE-KMS with a bucket key, the TLS-only statement.
func bucketIsLockedDown(endpoint, bucket, key string) statecheck.StateCheck {
	return stateCheckFunc(func(ctx context.Context) error {
		api := mustS3Plain(endpoint, "us-east-1")
		pab, err := api.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: &bucket})
		if err != nil {
			return fmt.Errorf("public access block: %w", err)
		}
		c := pab.PublicAccessBlockConfiguration
		if !aws.ToBool(c.BlockPublicAcls) || !aws.ToBool(c.IgnorePublicAcls) || !aws.ToBool(c.BlockPublicPolicy) || !aws.ToBool(c.RestrictPublicBuckets) {
			return fmt.Errorf("public access block not fully on: %+v", c)
		}
		own, err := api.GetBucketOwnershipControls(ctx, &s3.GetBucketOwnershipControlsInput{Bucket: &bucket})
		if err != nil {
			return fmt.Errorf("ownership controls: %w", err)
		}
		if len(own.OwnershipControls.Rules) != 1 || own.OwnershipControls.Rules[0].ObjectOwnership != s3types.ObjectOwnershipBucketOwnerEnforced {
			return fmt.Errorf("ownership = %+v, want BucketOwnerEnforced", own.OwnershipControls.Rules)
		}
		ver, err := api.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: &bucket})
		if err != nil {
			return fmt.Errorf("versioning: %w", err)
		}
		if ver.Status != s3types.BucketVersioningStatusEnabled {
			return fmt.Errorf("versioning = %q, want Enabled", ver.Status)
		}
		enc, err := api.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: &bucket})
		if err != nil {
			return fmt.Errorf("encryption: %w", err)
		}
		rule := enc.ServerSideEncryptionConfiguration.Rules[0]
		if rule.ApplyServerSideEncryptionByDefault.SSEAlgorithm != s3types.ServerSideEncryptionAwsKms ||
			aws.ToString(rule.ApplyServerSideEncryptionByDefault.KMSMasterKeyID) != key || !aws.ToBool(rule.BucketKeyEnabled) {
			return fmt.Errorf("encryption = %+v, want aws:kms with %s and a bucket key", rule, key)
		}
		pol, err := api.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: &bucket})
		if err != nil {
			return fmt.Errorf("policy: %w", err)
		}
		return checkTLSStatement(aws.ToString(pol.Policy), bucket)
	})
}

// checkTLSStatement asserts the deny-insecure-transport statement itself: Deny, every principal, s3:*, the
// bucket and its objects, aws:SecureTransport = false.
func checkTLSStatement(policy, bucket string) error {
	var doc struct {
		Statement []struct {
			Effect    string
			Principal any
			Action    any
			Resource  any
			Condition map[string]map[string]any
		}
	}
	if err := json.Unmarshal([]byte(policy), &doc); err != nil {
		return fmt.Errorf("policy is not JSON: %w", err)
	}
	list := func(v any) []string {
		switch x := v.(type) {
		case string:
			return []string{x}
		case []any:
			var out []string
			for _, e := range x {
				out = append(out, fmt.Sprint(e))
			}
			return out
		}
		return nil
	}
	for _, st := range doc.Statement {
		res := strings.Join(list(st.Resource), ",")
		if st.Effect == "Deny" && fmt.Sprint(st.Principal) == "*" && strings.Join(list(st.Action), ",") == "s3:*" &&
			strings.Contains(res, "arn:aws:s3:::"+bucket) && strings.Contains(res, "arn:aws:s3:::"+bucket+"/*") &&
			strings.Join(list(st.Condition["Bool"]["aws:SecureTransport"]), ",") == "false" {
			return nil
		}
	}
	return fmt.Errorf("no deny-insecure-transport statement in %s", policy)
}

func mustS3Plain(endpoint, region string) *s3.Client {
	return s3.NewFromConfig(acctest.MotoAWSConfig(endpoint, region), func(o *s3.Options) { o.UsePathStyle = true })
}

type stateCheckFunc func(ctx context.Context) error

func (f stateCheckFunc) CheckState(ctx context.Context, _ statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	if err := f(ctx); err != nil {
		resp.Error = err
	}
}

// Each guarded setting changed behind Terraform's back shows as drift in the next plan, and the apply
// restores it.
func TestAccArchiveBucket_drift(t *testing.T) {
	motoEnv(t)
	moto := acctest.StartMoto(t)
	const bucket = "tf-acc-wal-drift"
	config := archiveConfig(moto, `  bucket = "`+bucket+`"`)
	api := mustS3Plain(moto.URL, "us-east-1")
	ctx := context.Background()
	drift := func(name string, change func() error) resource.TestStep {
		return resource.TestStep{
			PreConfig: func() {
				if err := change(); err != nil {
					t.Fatalf("changing %s behind Terraform: %v", name, err)
				}
			},
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(archiveAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("guards").AtMapKey(name), knownvalue.StringExact("ok")),
				},
			},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("guards"), guardsOK(basicGuards...)),
			},
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkBucketDestroyed(moto.URL),
		Steps: []resource.TestStep{
			{Config: config},
			drift("versioning", func() error {
				_, err := api.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
					VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusSuspended}})
				return err
			}),
			drift("bucket_policy", func() error {
				_, err := api.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(bucket)})
				return err
			}),
			drift("bucket_policy", func() error {
				// Changed rather than removed: the TLS statement swapped for one that lets anyone read.
				_, err := api.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(`{
  "Version": "2012-10-17",
  "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::` + bucket + `/*"}]
}`)})
				return err
			}),
			drift("encryption", func() error {
				_, err := api.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: aws.String(bucket),
					ServerSideEncryptionConfiguration: &s3types.ServerSideEncryptionConfiguration{Rules: []s3types.ServerSideEncryptionRule{{
						ApplyServerSideEncryptionByDefault: &s3types.ServerSideEncryptionByDefault{SSEAlgorithm: s3types.ServerSideEncryptionAwsKms},
					}}}})
				return err
			}),
			drift("public_access_block", func() error {
				_, err := api.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String(bucket)})
				return err
			}),
			drift("lifecycle", func() error {
				_, err := api.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket),
					LifecycleConfiguration: &s3types.BucketLifecycleConfiguration{Rules: []s3types.LifecycleRule{{
						ID: aws.String("expire-everything"), Status: s3types.ExpirationStatusEnabled,
						Filter:     &s3types.LifecycleRuleFilter{Prefix: aws.String("")},
						Expiration: &s3types.LifecycleExpiration{Days: aws.Int32(30)},
					}}}})
				return err
			}),
			drift("object_ownership", func() error {
				_, err := api.PutBucketOwnershipControls(ctx, &s3.PutBucketOwnershipControlsInput{Bucket: aws.String(bucket),
					OwnershipControls: &s3types.OwnershipControls{Rules: []s3types.OwnershipControlsRule{{ObjectOwnership: s3types.ObjectOwnershipObjectWriter}}}})
				return err
			}),
		},
	})
}

func TestAccArchiveBucket_replica(t *testing.T) {
	motoEnv(t)
	moto := acctest.StartMoto(t)
	replicaKey := createKMSKey(t, moto.URL, "eu-west-1")
	config := archiveConfig(moto, fmt.Sprintf(`
  bucket_prefix = "tf-acc-wal-"
  replica {
    region        = "eu-west-1"
    bucket        = "tf-acc-wal-replica"
    kms_key_arn   = %q
    storage_class = "STANDARD_IA"
    # moto 5.2.1 stores the replication rule but always reads delete-marker replication back as
    # Disabled, so on moto only this setting can round-trip; the default (true) is checked against the
    # exact rule sent in internal/awsclient's replication tests, and what a user sees with it on moto in
    # TestAccArchiveBucket_deleteMarkersNotKept.
    replicate_delete_markers = false
  }
`, replicaKey))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkBucketDestroyed(moto.URL),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("bucket"), knownvalue.StringRegexp(regexpOf(`^tf-acc-wal-[a-z2-7]{26}$`))),
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("replica_arn"), knownvalue.StringExact("arn:aws:s3:::tf-acc-wal-replica")),
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("replication_role_arn"), knownvalue.StringRegexp(regexpOf(`^arn:aws:iam::\d{12}:role/pgnvme-replication-`))),
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("guards"), guardsOK(append(basicGuards, "replication", "replica")...)),
					replicationRulePresent(moto.URL),
				},
			},
			{
				ResourceName:            archiveAddr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"bucket_prefix"},
			},
		},
	})
}

// An endpoint that drops delete-marker replication (moto reads it back Disabled) with a replica and the
// default settings: the apply stops with an error that names the guard, what S3 returned and what to do
// (never the framework's "inconsistent result" bug message); the state records the bucket, tainted, with the
// guards as read, so the next plan replaces it; and the advised fix applies cleanly.
func TestAccArchiveBucket_deleteMarkersNotKept(t *testing.T) {
	motoEnv(t)
	moto := acctest.StartMoto(t)
	const bucket = "tf-acc-wal-markers"
	replica := func(extra string) string {
		return archiveConfig(moto, `
  bucket = "`+bucket+`"
  replica {
    region = "eu-west-1"
    bucket = "tf-acc-wal-markers-replica"
`+extra+`  }
`)
	}
	guards := map[string]knownvalue.Check{"replication": knownvalue.StringExact("delete markers are not replicated")}
	for _, k := range append(basicGuards, "replica") {
		guards[k] = knownvalue.StringExact("ok")
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkBucketDestroyed(moto.URL),
		Steps: []resource.TestStep{
			{
				Config: replica(""),
				ExpectError: regexpOf(`(?s)Error: Archive Guard Not Held.*` +
					words("S3 accepted every setting of bucket tf-acc-wal-markers, but read back right after the apply, replication is not what the provider set.") + `.*` +
					words("the new bucket is tainted: the next apply replaces it") + `.*` +
					words("moto always reads it back as Disabled") + `.*` + words("set `replicate_delete_markers = false` in `replica`") + `.*` +
					words("bucket tf-acc-wal-markers read back after apply: replication: delete markers are not replicated")),
			},
			{
				// What the failed apply left in state, before any refresh: the bucket, tainted, with what S3 read.
				Config:             replica(""),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPreRefresh: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(archiveAddr, plancheck.ResourceActionDestroyBeforeCreate),
						priorStateChecks{
							statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("bucket"), knownvalue.StringExact(bucket)),
							statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("guards"), knownvalue.MapExact(guards)),
							statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("replica").AtMapKey("replicate_delete_markers"), knownvalue.Bool(true)),
							statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("replica_arn"), knownvalue.StringExact("arn:aws:s3:::tf-acc-wal-markers-replica")),
							statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("replication_role_arn"), knownvalue.StringRegexp(regexpOf(`^arn:aws:iam::\d{12}:role/pgnvme-replication-`))),
						},
					},
				},
			},
			{
				// The fix the error names.
				Config: replica("    replicate_delete_markers = false\n"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("guards"), guardsOK(append(basicGuards, "replication", "replica")...)),
				},
			},
		},
	})
}

// words matches text as Terraform prints it in a diagnostic: wrapped anywhere between words, each new line
// starting with the box-drawing frame.
func words(text string) string {
	parts := strings.Fields(text)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return strings.Join(parts, `[\s│]+`)
}

// priorStateChecks runs state checks on the state a plan starts from.
type priorStateChecks []statecheck.StateCheck

func (c priorStateChecks) CheckPlan(ctx context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	if req.Plan.PriorState == nil {
		resp.Error = fmt.Errorf("the plan has no prior state")
		return
	}
	var errs []error
	for _, check := range c {
		var r statecheck.CheckStateResponse
		check.CheckState(ctx, statecheck.CheckStateRequest{State: req.Plan.PriorState}, &r)
		errs = append(errs, r.Error)
	}
	resp.Error = errors.Join(errs...)
}

// replicationRulePresent reads the replication configuration with the SDK.
func replicationRulePresent(endpoint string) statecheck.StateCheck {
	return newStateCheckWithAddr(archiveAddr, func(ctx context.Context, attrs map[string]any) error {
		bucket := fmt.Sprint(attrs["bucket"])
		out, err := mustS3Plain(endpoint, "us-east-1").GetBucketReplication(ctx, &s3.GetBucketReplicationInput{Bucket: &bucket})
		if err != nil {
			return fmt.Errorf("replication of %s: %w", bucket, err)
		}
		rules := out.ReplicationConfiguration.Rules
		if len(rules) != 1 || aws.ToString(rules[0].Destination.Bucket) != "arn:aws:s3:::tf-acc-wal-replica" ||
			rules[0].Destination.StorageClass != s3types.StorageClassStandardIa || rules[0].Status != s3types.ReplicationRuleStatusEnabled {
			return fmt.Errorf("replication rules = %+v", rules)
		}
		if aws.ToString(out.ReplicationConfiguration.Role) != fmt.Sprint(attrs["replication_role_arn"]) {
			return fmt.Errorf("replication role %s, state says %s", aws.ToString(out.ReplicationConfiguration.Role), attrs["replication_role_arn"])
		}
		replica := mustS3Plain(endpoint, "eu-west-1")
		pab, err := replica.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String("tf-acc-wal-replica")})
		if err != nil {
			return fmt.Errorf("replica public access block: %w", err)
		}
		if c := pab.PublicAccessBlockConfiguration; !aws.ToBool(c.BlockPublicAcls) || !aws.ToBool(c.IgnorePublicAcls) ||
			!aws.ToBool(c.BlockPublicPolicy) || !aws.ToBool(c.RestrictPublicBuckets) {
			return fmt.Errorf("replica public access block not fully on: %+v", c)
		}
		pol, err := replica.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String("tf-acc-wal-replica")})
		if err != nil {
			return fmt.Errorf("replica policy: %w", err)
		}
		if err := checkTLSStatement(aws.ToString(pol.Policy), "tf-acc-wal-replica"); err != nil {
			return fmt.Errorf("replica: %w", err)
		}
		rv, err := replica.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("tf-acc-wal-replica")})
		if err != nil {
			return fmt.Errorf("replica versioning: %w", err)
		}
		if rv.Status != s3types.BucketVersioningStatusEnabled {
			return fmt.Errorf("replica versioning = %q, want Enabled", rv.Status)
		}
		return nil
	})
}

// A non-empty archive is never deleted without force_destroy; with it, every version and delete marker
// goes, then the bucket.
func TestAccArchiveBucket_forceDestroy(t *testing.T) {
	motoEnv(t)
	moto := acctest.StartMoto(t)
	const bucket = "tf-acc-wal-force"
	// moto enforces bucket policies on object operations and ignores their Conditions: the TLS-only
	// statement would deny every object request, TLS or not. Object tests therefore run without it; the
	// statement itself is asserted in TestAccArchiveBucket_basic.
	body := `
  bucket                  = "` + bucket + `"
  deny_insecure_transport = false
`
	api := mustS3Plain(moto.URL, "us-east-1")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkBucketDestroyed(moto.URL),
		Steps: []resource.TestStep{
			{Config: archiveConfig(moto, body)},
			{
				PreConfig: func() {
					ctx := context.Background()
					for i, content := range []string{"first", "second"} {
						if _, err := api.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("wal_005/000000010000000000000001"),
							Body: strings.NewReader(content)}); err != nil {
							t.Fatalf("put object %d: %v", i, err)
						}
					}
					if _, err := api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("wal_005/000000010000000000000001")}); err != nil {
						t.Fatalf("delete marker: %v", err)
					}
				},
				Config:      archiveConfig(moto, body),
				Destroy:     true,
				ExpectError: regexpOf(`(?s)Bucket Not Empty.*force_destroy\s+=\s+true`),
			},
			{
				Config: archiveConfig(moto, body+"  force_destroy = true\n"),
			},
		},
	})
}

func TestAccArchiveBucket_disappears(t *testing.T) {
	motoEnv(t)
	moto := acctest.StartMoto(t)
	const bucket = "tf-acc-wal-gone"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkBucketDestroyed(moto.URL),
		Steps: []resource.TestStep{
			{
				Config: archiveConfig(moto, `  bucket = "`+bucket+`"`),
				Check: func(*terraform.State) error {
					ctx := context.Background()
					api := mustS3Plain(moto.URL, "us-east-1")
					if _, err := api.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(bucket)}); err != nil {
						return err
					}
					_, err := api.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)})
					return err
				},
				ExpectNonEmptyPlan: true,
			},
		},
	})
}

func TestAccArchiveBucket_objectLock(t *testing.T) {
	motoEnv(t)
	moto := acctest.StartMoto(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkBucketDestroyed(moto.URL),
		Steps: []resource.TestStep{
			{
				Config: archiveConfig(moto, `
  bucket        = "tf-acc-wal-lock"
  force_destroy = true
  object_lock {
    mode = "GOVERNANCE"
    days = 7
  }
`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("walg_env"), knownvalue.MapPartial(map[string]knownvalue.Check{
						"S3_RETENTION_MODE": knownvalue.StringExact("GOVERNANCE"),
					})),
					statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("guards"), guardsOK(basicGuards...)),
				},
			},
			{
				ResourceName:      archiveAddr,
				ImportState:       true,
				ImportStateVerify: true,
				// force_destroy is not stored in AWS; an import starts from false, as in hashicorp/aws.
				ImportStateVerifyIgnore: []string{"force_destroy"},
			},
		},
	})
}

// COMPLIANCE retention cannot be bypassed: with force_destroy the destroy stops and names the object.
func TestAccArchiveBucket_objectLockCompliance(t *testing.T) {
	motoEnv(t)
	moto := acctest.StartMoto(t)
	const bucket = "tf-acc-wal-compliance"
	config := archiveConfig(moto, `
  bucket                  = "`+bucket+`"
  force_destroy           = true
  deny_insecure_transport = false
  object_lock {
    mode = "COMPLIANCE"
    days = 1
  }
`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkBucketDestroyed(moto.URL),
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() {
					// Object Lock buckets need a checksum on upload; over plain http the SDK sends none by default.
					if _, err := mustS3Plain(moto.URL, "us-east-1").PutObject(context.Background(), &s3.PutObjectInput{
						Bucket: aws.String(bucket), Key: aws.String("basebackups_005/base_000000010000000000000002/tar_partitions/part_1.tar.lz4"),
						Body: strings.NewReader("base backup"), ChecksumAlgorithm: s3types.ChecksumAlgorithmCrc32,
					}); err != nil {
						t.Fatalf("put object: %v", err)
					}
				},
				Config:      config,
				Destroy:     true,
				ExpectError: regexpOf(`(?s)Object Lock Prevents Deletion.*COMPLIANCE`),
			},
			{
				// Nobody can delete the object before its retention ends, so the test drops moto's state and
				// lets the refresh notice the bucket is gone.
				PreConfig: func() {
					if err := moto.Reset(); err != nil {
						t.Fatal(err)
					}
				},
				Config: motoProvider(moto),
			},
		},
	})
}

func TestAccArchiveBucket_badInputs(t *testing.T) {
	bucket := func(body string) string {
		return "provider \"pgnvme\" {\n  region = \"us-east-1\"\n}\nresource \"pgnvme_archive_bucket\" \"x\" {\n" + body + "\n}\n"
	}
	runBadInputs(t, []badInput{
		{"uppercase name", bucket(`bucket = "My-Archive"`), `(?s)Invalid Bucket Name.*bucket`},
		{"name too short", bucket(`bucket = "ab"`), `(?s)Invalid Bucket Name`},
		{"name too long", bucket(`bucket = "` + strings.Repeat("a", 64) + `"`), `(?s)Invalid Bucket Name`},
		{"ip-like name", bucket(`bucket = "192.168.5.4"`), `(?s)Invalid Bucket Name`},
		{"xn-- prefix", bucket(`bucket = "xn--archive"`), `(?s)Invalid Bucket Name`},
		{"bucket and bucket_prefix", bucket("bucket = \"tf-acc-a\"\nbucket_prefix = \"tf-acc-\""), `(?s)Invalid Attribute Combination`},
		{"bucket_prefix too long", bucket(`bucket_prefix = "` + strings.Repeat("a", 40) + `"`), `(?s)Invalid Bucket Prefix`},
		{"prefix with leading slash", bucket("bucket = \"tf-acc-a\"\nprefix = \"/clusters\""), `(?s)Invalid Prefix`},
		{"malformed kms arn", bucket("bucket = \"tf-acc-a\"\nkms_key_arn = \"1234abcd-12ab-34cd-56ef-1234567890ab\""), `(?s)Invalid KMS Key ARN`},
		{"kms arn of another service", bucket("bucket = \"tf-acc-a\"\nkms_key_arn = \"arn:aws:s3:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab\""), `(?s)Invalid KMS Key ARN`},
		{"unknown compression", bucket("bucket = \"tf-acc-a\"\ncompression = \"gzip\""), `(?s)compression.*value must be one of`},
		{"lifecycle days zero", bucket("bucket = \"tf-acc-a\"\nnoncurrent_version_expiration_days = 0"), `(?s)noncurrent_version_expiration_days.*at least 1`},
		{"abort days zero", bucket("bucket = \"tf-acc-a\"\nabort_incomplete_multipart_upload_days = 0"), `(?s)abort_incomplete_multipart_upload_days.*at least 1`},
		{"object lock days zero", bucket("bucket = \"tf-acc-a\"\nobject_lock {\n mode = \"GOVERNANCE\"\n days = 0\n}"), `(?s)object_lock.days.*between 1 and 36500`},
		{"object lock unknown mode", bucket("bucket = \"tf-acc-a\"\nobject_lock {\n mode = \"LEGAL\"\n days = 1\n}"), `(?s)object_lock.mode.*value must be one of`},
		{"replica in the same region", bucket("bucket = \"tf-acc-a\"\nreplica {\n region = \"us-east-1\"\n bucket = \"tf-acc-b\"\n}"), `(?s)Invalid Archive Bucket.*region`},
		{"replica bucket invalid", bucket("bucket = \"tf-acc-a\"\nreplica {\n region = \"eu-west-1\"\n bucket = \"B\"\n}"), `(?s)Invalid Bucket Name`},
		{"replica storage class", bucket("bucket = \"tf-acc-a\"\nreplica {\n region = \"eu-west-1\"\n bucket = \"tf-acc-b\"\n storage_class = \"COLD\"\n}"), `(?s)Invalid Storage Class`},
		{"kms key in another region", bucket("bucket = \"tf-acc-a\"\nkms_key_arn = \"arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab\""), `(?s)Invalid Archive Bucket.*region`},
	})
}

// A misspelt or unknown argument in object_lock or replica is an error at validate that names it. They are
// blocks: Terraform drops an unknown key of a nested attribute's object before the provider sees it
// (hashicorp/terraform#33570), so `replica = { storage_klass = "GLACIER" }` planned a STANDARD replica. The
// nested-attribute syntax of before is refused with a pointer to the block.
func TestArchiveBucket_unknownArgumentInBlock(t *testing.T) {
	bucket := func(body string) string {
		return "provider \"pgnvme\" {\n  region = \"us-east-1\"\n}\nresource \"pgnvme_archive_bucket\" \"x\" {\n  bucket = \"tf-acc-typo\"\n" + body + "\n}\n"
	}
	notExpected := func(name string) string {
		return `(?s)Unsupported argument.*An argument named "` + name + `" is not expected here`
	}
	runBadInputs(t, []badInput{
		{"object_lock", bucket("  object_lock {\n    mode = \"GOVERNANCE\"\n    dayz = 7\n  }"), notExpected("dayz")},
		{"replica", bucket("  replica {\n    region       = \"eu-west-1\"\n    bucket       = \"tf-acc-typo-replica\"\n    storage_klass = \"GLACIER\"\n  }"), notExpected("storage_klass")},
		{"replica as an attribute", bucket("  replica = {\n    region = \"eu-west-1\"\n    bucket = \"tf-acc-typo-replica\"\n  }"),
			`(?s)Unsupported argument.*An argument named "replica" is not expected here.*block of type "replica"`},
		{"object_lock without days", bucket("  object_lock {\n    mode = \"GOVERNANCE\"\n  }"), `(?s)Missing Required Argument.*"days" is required in the object_lock block`},
		{"replica without bucket", bucket("  replica {\n    region = \"eu-west-1\"\n  }"), `(?s)Missing Required Argument.*"bucket" is required in the replica block`},
	})
}

// The end-to-end proof: terraform apply creates the archive on moto (behind a TLS terminator, as
// pgBackRest speaks S3 only over TLS), a PostgreSQL 15 primary archives into it with pgBackRest configured
// from pgbackrest_options, and a point-in-time restore brings back exactly the rows committed before the
// target time. The objects are stored under SSE-KMS with the bucket's key.
func TestAccArchiveBucket_pgBackRestPITR(t *testing.T) {
	motoEnv(t)
	tm := acctest.StartTLSMoto(t)
	tm.SetCABundleEnv(t) // the provider's SDK trusts the self-signed certificate through AWS_CA_BUNDLE
	key := createKMSKey(t, tm.HTTPURL, "us-east-1")
	const bucket = "tf-acc-wal-pitr"
	config := fmt.Sprintf(`
provider "pgnvme" {
  region            = "us-east-1"
  s3_use_path_style = true
  endpoints {
    s3  = %[1]q
    sts = %[1]q
    iam = %[1]q
  }
}

resource "pgnvme_archive_bucket" "wal" {
  bucket        = %[2]q
  prefix        = "cluster-a"
  kms_key_arn   = %[3]q
  force_destroy = true
  # moto enforces bucket policies on object operations and ignores their Conditions, so the TLS-only
  # statement would deny pgBackRest's requests even over TLS. Its content is asserted in _basic.
  deny_insecure_transport = false
}
`, tm.HTTPSURL, bucket, key)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkBucketDestroyed(tm.HTTPURL),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(archiveAddr, tfjsonpath.New("pgbackrest_options"), knownvalue.MapPartial(map[string]knownvalue.Check{
					"repo1-s3-endpoint":  knownvalue.StringExact("localhost"),
					"repo1-storage-port": knownvalue.StringExact(fmt.Sprint(tm.Port)),
					"repo1-s3-uri-style": knownvalue.StringExact("path"),
					"repo1-path":         knownvalue.StringExact("/cluster-a/pgbackrest"),
				})),
				newStateCheckWithAddr(archiveAddr, func(ctx context.Context, attrs map[string]any) error {
					opts := map[string]string{}
					raw, ok := attrs["pgbackrest_options"].(map[string]any)
					if !ok {
						return fmt.Errorf("pgbackrest_options is %T", attrs["pgbackrest_options"])
					}
					for k, v := range raw {
						opts[k] = fmt.Sprint(v)
					}
					// Exactly the resource's options; the harness adds only test credentials, the CA file
					// and the stanza's local paths.
					pb := acctest.NewPgBackRest(t, opts, tm)
					res := acctest.RunPITR(t, pb)
					t.Logf("pgBackRest PITR through pgnvme_archive_bucket: %s", res)
					acctest.CheckObjectsEncrypted(t, ctx, mustS3Plain(tm.HTTPURL, "us-east-1"), bucket, opts["repo1-path"], key)
					return nil
				}),
			},
		}},
	})
}

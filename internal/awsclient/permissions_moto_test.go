package awsclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
)

// The operator's published policy (awsclient.OperatorPolicy) is enough, on moto with IAM enforcement on:
// the Cloud's tests of lookups, the security group, the instance profile, the secrets, the network
// interfaces, the instances, the Elastic IPs and the load balancer pass with the Cloud signed by an IAM
// user whose only policy is the published one (the tests arrange and check as an administrator). moto
// checks each call's own action; it does not check those AWS checks beside a call (iam:PassRole, tagging
// at create), which the policy holds all the same (awsclient.OperatorImplied).
func TestOperatorPolicy_moto(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"lookups", TestAWSCloud_lookups},
		{"securityGroup", TestAWSCloud_securityGroup},
		{"instanceProfile", TestAWSCloud_instanceProfile},
		{"secrets", TestAWSCloud_secrets},
		{"ENIs", TestAWSCloud_ENIs},
		{"instances", TestAWSCloud_instances},
		{"publicIPs", TestAWSCloud_publicIPs},
		{"loadBalancer", TestAWSCloud_LoadBalancer},
	} {
		enforcedPolicy = awsclient.OperatorPolicy()
		t.Run(tc.name, tc.run)
		enforcedPolicy = ""
	}
}

// withoutAction is the operator's policy without action.
func withoutAction(t *testing.T, action string) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(awsclient.OperatorPolicy()), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, st := range doc["Statement"].([]any) {
		s := st.(map[string]any)
		var kept []any
		for _, a := range s["Action"].([]any) {
			if a == action {
				found = true
				continue
			}
			kept = append(kept, a)
		}
		s["Action"] = kept
	}
	if !found {
		t.Fatalf("%s is not in the operator's policy", action)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// With one action taken out of the published policy, the call that needs it is refused by moto's IAM,
// and the error names the action (awsclient.MissingPermission finds it for the provider's diagnostic).
func TestOperatorPolicy_actionRemoved_moto(t *testing.T) {
	for _, tc := range []struct {
		action string
		call   func(t *testing.T, c *awsTest) error
	}{
		{"ec2:DescribeSubnets", func(t *testing.T, c *awsTest) error {
			_, subnets := c.vpc(t)
			_, err := c.Subnets(t.Context(), subnets)
			return err
		}},
		{"iam:CreateRole", func(t *testing.T, c *awsTest) error {
			_, err := c.CreateInstanceProfile(t.Context(), "tf-acc-denied", awsTestRegion, "/pgnvme/tf-acc-denied", "", nil)
			return err
		}},
		// (Not an SSM action: moto answers a refused JSON-protocol call with an XML body the SDK cannot read,
		// where AWS names the action as it does here.)
		{"elasticloadbalancing:CreateLoadBalancer", func(t *testing.T, c *awsTest) error {
			_, subnets := c.vpc(t)
			_, err := c.EnsureLoadBalancer(t.Context(), "tf-acc-denied", subnets, []string{"10.20.0.10", "10.20.1.10"}, false, nil)
			return err
		}},
	} {
		t.Run(tc.action, func(t *testing.T) {
			enforcedPolicy = withoutAction(t, tc.action)
			defer func() { enforcedPolicy = "" }()
			c := newAWSTest(t)
			err := tc.call(t, c)
			if err == nil {
				t.Fatalf("without %s the call succeeded", tc.action)
			}
			if !strings.Contains(err.Error(), tc.action) {
				t.Errorf("the error does not name %s: %v", tc.action, err)
			}
			if got, ok := awsclient.MissingPermission(err); !ok || got != tc.action {
				t.Errorf("MissingPermission = %q, %v; want %s (error: %v)", got, ok, tc.action, err)
			}
			if hint := awsclient.PermissionHint(err); !strings.Contains(hint, tc.action) {
				t.Errorf("PermissionHint = %q", hint)
			}
			t.Logf("without %s: %v", tc.action, err)
		})
	}
	if !slices.Contains(awsclient.OperatorActions(), "ec2:DescribeSubnets") {
		t.Fatal("test bug")
	}
}

// motoS3Names are the S3 actions moto checks under names of its own (moto/s3/responses.py ACTION_MAP),
// by the action AWS checks for the same request. (moto also checks an unlisted bucket subresource as the
// method's default: PUT ?encryption as s3:CreateBucket, GET ?replication as s3:ListBucket; those pass with
// the published policy whatever it says of encryption or replication.)
var motoS3Names = map[string]string{
	"s3:HeadBucket":              "s3:ListBucket",
	"s3:GetPublicAccessBlock":    "s3:GetBucketPublicAccessBlock",
	"s3:PutPublicAccessBlock":    "s3:PutBucketPublicAccessBlock",
	"s3:DeletePublicAccessBlock": "s3:PutBucketPublicAccessBlock",
}

// policyOnMoto is the published policy plus a statement of moto's name for each S3 action of it moto names
// otherwise (motoS3Names), so that moto checks what AWS would.
func policyOnMoto(t *testing.T) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(awsclient.OperatorPolicy()), &doc); err != nil {
		t.Fatal(err)
	}
	var names []any
	for moto, aws := range motoS3Names {
		if slices.Contains(awsclient.OperatorActions(), aws) {
			names = append(names, moto)
		}
	}
	doc["Statement"] = append(doc["Statement"].([]any), map[string]any{"Sid": "MotoNames", "Effect": "Allow", "Action": names, "Resource": "*"})
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// enforcedClients hands out S3 and IAM clients of moto signed as one IAM user.
type enforcedClients struct {
	m     *acctest.Moto
	creds aws.Credentials
}

func (c enforcedClients) S3(_ context.Context, region string) (*s3.Client, error) {
	return s3.NewFromConfig(c.m.ConfigAs(region, c.creds), func(o *s3.Options) { o.UsePathStyle = true }), nil
}

func (c enforcedClients) IAM(_ context.Context, region string) (*iam.Client, error) {
	return iam.NewFromConfig(c.m.ConfigAs(region, c.creds)), nil
}

// The archive's whole life under the published policy (with moto's own names of four S3 actions:
// policyOnMoto), on moto with IAM enforcement (which checks S3 actions against bucket and object ARNs too): pgnvme_archive_bucket's create with a replica in another
// region and its replication role, the guards and tags read back, and destroy with force_destroy once WAL-G
// has written into it. (Not the cluster's reading of the archive's WAL and backups, ListObjectsV2 with a
// prefix and GetObject, whose actions the policy has: moto 5.2 refuses, as SignatureDoesNotMatch, every
// signed S3 request with a "/" in a query value, such as prefix=orders/wal_005/.)
func TestOperatorPolicy_archive_moto(t *testing.T) {
	const region = "eu-west-1"
	m := acctest.StartMoto(t)
	creds := m.EnforceIAM(t, region, map[string]string{"operator": policyOnMoto(t), "admin": acctest.AdminPolicy})
	op, admin := enforcedClients{m, creds["operator"]}, enforcedClients{m, creds["admin"]}
	ctx := t.Context()
	s := archive.Spec{Bucket: "tf-acc-operator-archive", Prefix: "orders", Region: region, NoncurrentVersionExpirationDays: 30,
		AbortIncompleteMultipartUploadDays: 7, Replica: &archive.Replica{Bucket: "tf-acc-operator-replica", Region: "us-west-2"}}
	tags := awsclient.ArchiveTags(map[string]string{"Owner": "tf-acc"}, s.Prefix, "lz4")
	if created, err := awsclient.CreateArchiveBucket(ctx, op, s, tags); !created || err != nil {
		t.Fatalf("CreateArchiveBucket = %v, %v", created, err)
	}
	roleARN, err := awsclient.ApplyArchive(ctx, op, s, tags)
	if err != nil {
		t.Fatalf("ApplyArchive: %v", err)
	}
	if _, err := awsclient.ReadArchive(ctx, op, s.Bucket, region, true); err != nil {
		t.Fatalf("ReadArchive: %v", err)
	}
	guards, err := awsclient.ReadArchiveGuards(ctx, op, s, roleARN)
	if err != nil {
		t.Fatalf("ReadArchiveGuards: %v", err)
	}
	t.Logf("guards: %v", guards)

	// WAL-G writes (as the nodes do, with their own role: here the administrator); destroy empties the bucket.
	as, _ := admin.S3(ctx, region)
	for key, body := range map[string]string{
		"orders/wal_005/000000010000000000000002": "wal", "orders/wal_005/000000010000000000000003": "wal",
		"orders/basebackups_005/base_000000010000000000000002_backup_stop_sentinel.json": `{"LSN":33554472,"FinishLSN":33554720,"UncompressedSize":1000,"SystemIdentifier":7400000000000000001}`,
	} {
		if _, err := as.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := awsclient.DeleteArchive(ctx, op, s, true); err != nil {
		t.Fatalf("DeleteArchive: %v", err)
	}
	for _, b := range []string{s.Bucket, s.Replica.Bucket} {
		if _, err := awsclient.FindBucket(ctx, as, b); !errors.Is(err, awsclient.ErrBucketNotFound) {
			t.Errorf("bucket %s after DeleteArchive: %v", b, err)
		}
	}
}

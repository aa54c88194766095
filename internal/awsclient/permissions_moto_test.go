package awsclient_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
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
			enforcedPolicy = acctest.PolicyWithout(t, awsclient.OperatorPolicy(), tc.action)
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

func (enforcedClients) Clock() wait.Clock { return wait.Real }

// The archive's whole life under the published policy (with moto's own names of four S3 actions:
// acctest.PolicyOnMoto), on moto with IAM enforcement (which checks S3 actions against bucket and object ARNs too): pgnvme_archive_bucket's create with a replica in another
// region and its replication role, the guards and tags read back, and destroy with force_destroy once WAL-G
// has written into it, and the cluster's reading of that WAL and those backups in between (ListObjectsV2
// with prefix=orders/wal_005/ and GetObject: moto 5.2 itself refuses every signed request with a "/" in a
// query value as SignatureDoesNotMatch, which acctest's moto corrects: nodesim.MotoIAMFixes).
func TestOperatorPolicy_archive_moto(t *testing.T) {
	const region = "eu-west-1"
	m := acctest.StartMoto(t)
	creds := m.EnforceIAM(t, region, map[string]string{"operator": acctest.PolicyOnMoto(t, awsclient.OperatorPolicy()), "admin": acctest.AdminPolicy})
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
	// The cluster's reading of the archive, as its refresh and its restore decision make it, under the policy.
	os3, _ := op.S3(ctx, region)
	loc := archive.Location{Tool: archive.ToolWALG, Bucket: s.Bucket, Region: region, Root: "orders/", Keys: []string{"orders/wal_005/", "orders/basebackups_005/"}}
	wal, err := awsclient.ListArchiveWAL(ctx, os3, loc)
	if err != nil || len(wal) != 2 {
		t.Fatalf("ListArchiveWAL under the policy = %v, %v; want the 2 segments", wal, err)
	}
	// The signature is still checked: the same listing signed with a wrong secret is refused.
	wrong := creds["operator"]
	wrong.SecretAccessKey += "x"
	ws3, _ := enforcedClients{m, wrong}.S3(ctx, region)
	if _, err := awsclient.ListArchiveWAL(ctx, ws3, loc); err == nil || !strings.Contains(err.Error(), "SignatureDoesNotMatch") {
		t.Errorf("a listing signed with a wrong secret: %v; want SignatureDoesNotMatch", err)
	}
	backups, err := awsclient.ReadArchiveBackups(ctx, os3, loc)
	if err != nil || len(backups) != 1 {
		t.Fatalf("ReadArchiveBackups under the policy = %+v, %v; want the one backup", backups, err)
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

// The nodes' instance policy, proven on moto with IAM enforcement: the role CreateInstanceProfile makes (its
// SSM read policy, and the archive's node policy as pgnvme_archive_bucket's node_policy_json gives it),
// assumed as EC2 assumes it for an instance, reads the cluster's parameters and the archive's objects under
// its prefix, and is refused another cluster's parameters, the objects under another prefix, and any EC2
// call. (moto checks no conditions: the archive listing's s3:prefix condition is not proven here.)
func TestInstancePolicy_moto(t *testing.T) {
	enforcedPolicy = awsclient.OperatorPolicy()
	defer func() { enforcedPolicy = "" }()
	c := newAWSTest(t)
	ctx := t.Context()
	const name = "tf-acc-node"
	arc := archive.Spec{Bucket: "tf-acc-node-archive", Prefix: "clusters/" + name, Region: awsTestRegion}
	s3admin := s3.NewFromConfig(*c.admin, func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := s3admin.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(arc.Bucket),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(awsTestRegion)}}); err != nil {
		t.Fatal(err)
	}
	profile, err := c.CreateInstanceProfile(ctx, name, awsTestRegion, "/pgnvme/"+name, arc.NodePolicyJSON(), nil)
	if err != nil {
		t.Fatalf("CreateInstanceProfile under the operator policy: %v", err)
	}
	for _, p := range []string{"/pgnvme/" + name + "/superuser-password", "/pgnvme/tf-acc-other/superuser-password"} {
		if _, err := c.ssm.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(p), Value: aws.String("s3cret"), Type: ssmtypes.ParameterTypeSecureString}); err != nil {
			t.Fatal(err)
		}
	}
	role, err := c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(profile)})
	if err != nil {
		t.Fatal(err)
	}
	assumed, err := sts.NewFromConfig(*c.admin).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: role.Role.Arn, RoleSessionName: aws.String("i-0123456789abcdef0")})
	if err != nil {
		t.Fatalf("assuming the node role as EC2 does: %v", err)
	}
	node := *c.admin
	node.Credentials = credentials.NewStaticCredentialsProvider(aws.ToString(assumed.Credentials.AccessKeyId), aws.ToString(assumed.Credentials.SecretAccessKey), aws.ToString(assumed.Credentials.SessionToken))
	nssm, ns3 := ssm.NewFromConfig(node), s3.NewFromConfig(node, func(o *s3.Options) { o.UsePathStyle = true })

	allowed := []struct {
		what string
		call func() error
	}{
		{"ssm:GetParameter on its own", func() error {
			_, err := nssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/pgnvme/" + name + "/superuser-password"), WithDecryption: aws.Bool(true)})
			return err
		}},
		{"ssm:GetParametersByPath on its path", func() error {
			_, err := nssm.GetParametersByPath(ctx, &ssm.GetParametersByPathInput{Path: aws.String("/pgnvme/" + name), WithDecryption: aws.Bool(true)})
			return err
		}},
		{"s3:PutObject under its prefix", func() error {
			_, err := ns3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(arc.Bucket), Key: aws.String(arc.Prefix + "/archive/x/000000010000000000000001"), Body: strings.NewReader("wal")})
			return err
		}},
		{"s3:GetObject under its prefix", func() error {
			_, err := ns3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(arc.Bucket), Key: aws.String(arc.Prefix + "/archive/x/000000010000000000000001")})
			return err
		}},
		{"s3:ListBucket of its prefix", func() error {
			_, err := ns3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(arc.Bucket), Prefix: aws.String(arc.Prefix + "/archive/")})
			return err
		}},
	}
	for _, a := range allowed {
		if err := a.call(); err != nil {
			t.Errorf("%s: %v", a.what, err)
		}
	}
	refused := []struct {
		what string
		call func() error
	}{
		{"ssm:GetParameter", func() error {
			_, err := nssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/pgnvme/tf-acc-other/superuser-password"), WithDecryption: aws.Bool(true)})
			return err
		}},
		{"ssm:GetParameters", func() error {
			_, err := nssm.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"/pgnvme/" + name + "/superuser-password", "/pgnvme/tf-acc-other/superuser-password"}})
			return err
		}},
		{"ssm:GetParametersByPath", func() error {
			_, err := nssm.GetParametersByPath(ctx, &ssm.GetParametersByPathInput{Path: aws.String("/pgnvme"), Recursive: aws.Bool(true)})
			return err
		}},
		{"ssm:PutParameter", func() error {
			_, err := nssm.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/pgnvme/" + name + "/superuser-password"), Value: aws.String("x"), Type: ssmtypes.ParameterTypeSecureString, Overwrite: aws.Bool(true)})
			return err
		}},
		{"s3:PutObject", func() error {
			_, err := ns3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(arc.Bucket), Key: aws.String("clusters/tf-acc-other/archive/x"), Body: strings.NewReader("wal")})
			return err
		}},
		{"ec2:DescribeInstances", func() error {
			_, err := ec2.NewFromConfig(node).DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
			return err
		}},
	}
	for _, r := range refused {
		err := r.call()
		// moto answers SSM's refusals in XML, which the SDK cannot decode: the status says it.
		var re *awshttp.ResponseError
		if err == nil || !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusForbidden {
			t.Errorf("%s outside the node's grant: %v; want it refused (HTTP 403)", r.what, err)
			continue
		}
		t.Logf("refused, as it should be: %s: %v", r.what, err)
	}
}

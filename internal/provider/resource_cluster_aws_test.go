package provider_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

func mustEC2Plain(endpoint, region string) *ec2.Client {
	return ec2.NewFromConfig(acctest.MotoAWSConfig(endpoint, region))
}

// awsFixture is a VPC in moto with one subnet per zone (us-east-1a..e), and an AMI of each architecture.
type awsFixture struct {
	subnets    map[string]string
	amd64, arm string
	otherVPC   string // a subnet in us-east-1a of another VPC
}

func newAWSFixture(t *testing.T, m *acctest.Moto) awsFixture {
	t.Helper()
	ctx := context.Background()
	c := mustEC2Plain(m.URL, "us-east-1")
	f := awsFixture{subnets: acctest.CreateVPC(t, c, "10.20.0.0/16", "us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e").Subnets}
	f.otherVPC = acctest.CreateVPC(t, c, "10.30.0.0/16", "us-east-1a").SubnetIDs[0]
	for arch, dst := range map[string]*string{"x86_64": &f.amd64, "arm64": &f.arm} {
		out, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{arch}}}})
		if err != nil || len(out.Images) == 0 {
			t.Fatalf("moto has no %s image: %v", arch, err)
		}
		*dst = aws.ToString(out.Images[0].ImageId)
	}
	return f
}

// awsClusterConfig is a cluster on moto with aws-block lines replaced or added by edit (applied to the
// whole resource body), so each bad input differs from a valid configuration in one place.
func (f awsFixture) config(m *acctest.Moto, edit func(string) string) string {
	body := fmt.Sprintf(`
  name = "tf-acc-bad"
  node {
    name = "node-1"
    zone = "us-east-1a"
  }
  node {
    name = "node-2"
    zone = "us-east-1b"
  }
  node {
    name = "node-3"
    zone = "us-east-1c"
  }
  archive {
    walg_env = { WALG_S3_PREFIX = "s3://tf-acc-archive/clusters/bad", AWS_REGION = "us-east-1" }
  }
  aws {
    instance_type = "m6id.large"
    ami_id        = %q
    subnet_ids = {
      "us-east-1a" = %q
      "us-east-1b" = %q
      "us-east-1c" = %q
    }
    deletion_protection = false
  }
`, f.amd64, f.subnets["us-east-1a"], f.subnets["us-east-1b"], f.subnets["us-east-1c"])
	return fmt.Sprintf(`
provider "pgnvme" {
  region                      = "us-east-1"
  skip_credentials_validation = true
  endpoints {
    ec2 = %[1]q
    ssm = %[1]q
    iam = %[1]q
    sts = %[1]q
    s3    = %[1]q
    elbv2 = %[1]q
  }
}
resource "pgnvme_cluster" "c" {%[2]s}
`, m.URL, edit(body))
}

// TestAccClusterAWS_badInputs plans bad configurations of the aws platform: each is refused at plan with
// its attribute and what to do, and nothing is created in moto (checked at the end).
func TestAccClusterAWS_badInputs(t *testing.T) {
	m := acctest.StartMoto(t)
	motoEnv(t)
	f := newAWSFixture(t, m)
	replace := func(old, new string) func(string) string {
		return func(s string) string {
			if !strings.Contains(s, old) {
				t.Fatalf("test bug: %q not in the configuration", old)
			}
			return strings.Replace(s, old, new, 1)
		}
	}
	addAWS := func(line string) func(string) string {
		return replace(`    deletion_protection = false`, "    deletion_protection = false\n    "+line)
	}
	// Two archive buckets whose rules fight the backup policy: one keeps every version for 30 days
	// (Object Lock), one expires current objects under the archive's prefix.
	ctx := context.Background()
	s3c := mustS3Plain(m.URL, "us-east-1")
	for _, b := range []string{"tf-acc-locked", "tf-acc-expiring"} {
		if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b), ObjectLockEnabledForBucket: aws.Bool(b == "tf-acc-locked")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s3c.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String("tf-acc-locked"),
		ObjectLockConfiguration: &s3types.ObjectLockConfiguration{ObjectLockEnabled: s3types.ObjectLockEnabledEnabled,
			Rule: &s3types.ObjectLockRule{DefaultRetention: &s3types.DefaultRetention{Mode: s3types.ObjectLockRetentionModeGovernance, Days: aws.Int32(30)}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("tf-acc-expiring"),
		LifecycleConfiguration: &s3types.BucketLifecycleConfiguration{Rules: []s3types.LifecycleRule{{ID: aws.String("expire-old"), Status: s3types.ExpirationStatusEnabled,
			Filter: &s3types.LifecycleRuleFilter{Prefix: aws.String("clusters/")}, Expiration: &s3types.LifecycleExpiration{Days: aws.Int32(30)}}}}}); err != nil {
		t.Fatal(err)
	}
	inBucket := func(bucket, extra string) func(string) string {
		return func(s string) string {
			s = replace("s3://tf-acc-archive/", "s3://"+bucket+"/")(s)
			return replace(`  aws {`, extra+"  aws {")(s)
		}
	}
	cases := []badInput{
		{"retention shorter than Object Lock's", f.config(m, inBucket("tf-acc-locked", "  backup {\n    retention { recovery_window_days = 14 }\n  }\n")),
			`(?s)Retention Shorter Than Object Lock.*30 days.*GOVERNANCE.*at least 30`},
		{"default retention shorter than Object Lock's", f.config(m, inBucket("tf-acc-locked", "")), `(?s)Retention Shorter Than Object Lock.*recovery window of 7 days`},
		{"lifecycle expiring the archive", f.config(m, inBucket("tf-acc-expiring", "")), `(?s)Lifecycle Expires The Archive.*"expire-old".*after 30 days`},
		{"zone without a subnet", f.config(m, replace(`      "us-east-1c" = `+fmt.Sprintf("%q", f.subnets["us-east-1c"]), ``)), `(?s)aws.subnet_ids.*us-east-1c`},
		{"two nodes in one zone", f.config(m, replace(`zone = "us-east-1c"`, `zone = "us-east-1b"`)), `(?s)node.*us-east-1b`},
		{"node without a zone", f.config(m, replace("    zone = \"us-east-1c\"\n", "")), `(?s)node.*zone`},
		// Before: three errors "Node node-1 has no zone", ... for nodes the configuration never names.
		{"node_count on aws", f.config(m, replace("  node {\n    name = \"node-1\"\n    zone = \"us-east-1a\"\n  }\n  node {\n    name = \"node-2\"\n    zone = \"us-east-1b\"\n  }\n  node {\n    name = \"node-3\"\n    zone = \"us-east-1c\"\n  }\n", "  node_count = 3\n")),
			`(?s)Nodes Need Zones.*node_count\s+gives\s+the\s+nodes\s+none.*node \{ name = "node-1" zone = "[a-z0-9-]+" \}, 3 of them in 3 zones`},
		{"type without instance store", f.config(m, replace(`"m6id.large"`, `"m6i.large"`)), `(?s)No Instance-Store NVMe.*m6i.large`},
		{"unknown type", f.config(m, replace(`"m6id.large"`, `"m6id.huge"`)), `(?s)m6id.huge`},
		{"type not offered in a zone", f.config(m, func(s string) string {
			s = replace(`zone = "us-east-1c"`, `zone = "us-east-1e"`)(s)
			return replace(`"us-east-1c" = `+fmt.Sprintf("%q", f.subnets["us-east-1c"]), `"us-east-1e" = `+fmt.Sprintf("%q", f.subnets["us-east-1e"]))(s)
		}), `(?s)not offered.*us-east-1e`},
		{"AMI architecture not matching the type", f.config(m, replace(fmt.Sprintf("%q", f.amd64), fmt.Sprintf("%q", f.arm))), `(?s)AMI Architecture Mismatch.*arm64`},
		{"AMI not found", f.config(m, replace(fmt.Sprintf("%q", f.amd64), `"ami-0123456789abcdef0"`)), `(?s)AMI Not Found`},
		{"malformed AMI", f.config(m, replace(fmt.Sprintf("%q", f.amd64), `"debian-12"`)), `(?s)aws.ami_id`},
		{"AMI and its parameter", f.config(m, addAWS(`ami_ssm_parameter = "/aws/service/debian/release/12/latest/amd64"`)), `(?s)ami_ssm_parameter`},
		{"subnet in another zone", f.config(m, replace(`"us-east-1c" = `+fmt.Sprintf("%q", f.subnets["us-east-1c"]), `"us-east-1c" = `+fmt.Sprintf("%q", f.subnets["us-east-1d"]))), `(?s)Subnet In Another Zone.*us-east-1d`},
		{"subnet of another VPC", f.config(m, replace(`"us-east-1a" = `+fmt.Sprintf("%q", f.subnets["us-east-1a"]), `"us-east-1a" = `+fmt.Sprintf("%q", f.otherVPC))), `(?s)Subnets In Several VPCs`},
		{"subnet not found", f.config(m, replace(`"us-east-1a" = `+fmt.Sprintf("%q", f.subnets["us-east-1a"]), `"us-east-1a" = "subnet-0123456789abcdef0"`)), `(?s)Subnet Not Found`},
		{"malformed subnet", f.config(m, replace(`"us-east-1a" = `+fmt.Sprintf("%q", f.subnets["us-east-1a"]), `"us-east-1a" = "default"`)), `(?s)aws.subnet_ids`},
		{"WAL-G archive without walg_env", f.config(m, replace(`walg_env = { WALG_S3_PREFIX = "s3://tf-acc-archive/clusters/bad", AWS_REGION = "us-east-1" }`, `backup_on_create = true`)), `(?s)archive`},
		{"no archive", f.config(m, replace("  archive {\n    walg_env = { WALG_S3_PREFIX = \"s3://tf-acc-archive/clusters/bad\", AWS_REGION = \"us-east-1\" }\n  }\n", "")), `(?s)archive`},
		{"password as a plain attribute", f.config(m, replace(`AWS_REGION = "us-east-1" }`, `AWS_REGION = "us-east-1", AWS_SECRET_ACCESS_KEY = "hunter2" }`)), `(?s)AWS_SECRET_ACCESS_KEY`},
		{"synchronous first", f.config(m, replace(`  aws {`, "  synchronous { method = \"first\" }\n  aws {")), `(?s)synchronous`},
		{"malformed security group", f.config(m, addAWS(`security_group_ids = ["default"]`)), `(?s)aws.security_group_ids`},
		{"bad CIDR", f.config(m, addAWS(`allowed_cidrs = ["10.0.0.0/33"]`)), `(?s)aws.allowed_cidrs`},
		{"loopback CIDR", f.config(m, addAWS(`allowed_cidrs = ["127.0.0.0/8"]`)), `(?s)aws.allowed_cidrs`},
		{"policy not JSON", f.config(m, addAWS(`node_policy_json = "{not json"`)), `(?s)aws.node_policy_json`},
		{"policy with a given profile", f.config(m, addAWS("iam_instance_profile = \"db\"\n    node_policy_json = jsonencode({ Version = \"2012-10-17\", Statement = [] })")), `(?s)aws.node_policy_json`},
		{"root volume too small", f.config(m, addAWS(`root_volume_gib = 4`)), `(?s)aws.root_volume_gib`},
		{"metadata hop limit 0", f.config(m, addAWS(`metadata_hop_limit = 0`)), `(?s)aws.metadata_hop_limit.*between 1 and 64, got: 0`},
		{"metadata hop limit too large", f.config(m, addAWS(`metadata_hop_limit = 65`)), `(?s)aws.metadata_hop_limit.*65`},
		{"Patroni timings", f.config(m, addAWS("patroni {\n      ttl           = 20\n      loop_wait     = 10\n      retry_timeout = 10\n    }")), `(?s)aws.patroni`},
		{"API address", f.config(m, addAWS(`api_address = "dns"`)), `(?s)api_address`},
		{"reserved tag", f.config(m, addAWS(`tags = { "pgnvme:cluster" = "other" }`)), `(?s)aws.tags`},
		{"aws tag", f.config(m, addAWS(`tags = { "aws:owner" = "me" }`)), `(?s)aws.tags`},
		{"two platform blocks", f.config(m, replace(`  aws {`, "  local { data_dir = \"/tmp/tf-acc-bad\" }\n  aws {")), `(?s)Invalid Attribute Combination`},
		{"region name", f.config(m, addAWS(`region = "Europe"`)), `(?s)aws.region`},
		{"PostgreSQL 18's tuning on 15", f.config(m, replace(`  aws {`, "  postgres_major = 15\n  parameters = { io_method = \"worker\" }\n  aws {")),
			`(?s)Invalid Parameter.*"io_method" is one of\s+PostgreSQL\s+18\s+and\s+later.*runs\s+PostgreSQL\s+15`},
		{"a parameter removed before the default major", f.config(m, replace(`  aws {`, "  parameters = { force_parallel_mode = \"off\" }\n  aws {")),
			`(?s)Invalid Parameter.*"force_parallel_mode" is one of\s+PostgreSQL\s+15\s+and\s+earlier.*runs\s+PostgreSQL\s+18`},
		{"name too long for the created role", f.config(m, replace(`name = "tf-acc-bad"`, `name = "tf-acc-`+strings.Repeat("x", 55)+`"`)), `(?s)Cluster Name Too Long For Its Role`},
	}
	checkBadInputs(t, cases)
	// Nothing was created: no interface, instance, security group or parameter.
	c := mustEC2Plain(m.URL, "us-east-1")
	enis, err := c.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{})
	if err != nil {
		t.Fatal(err)
	}
	insts, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	if err != nil {
		t.Fatal(err)
	}
	sgs, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("group-name"), Values: []string{"pgnvme-tf-acc-bad"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(enis.NetworkInterfaces) != 0 || len(insts.Reservations) != 0 || len(sgs.SecurityGroups) != 0 {
		t.Errorf("bad inputs created objects: %d interfaces, %d reservations, %d security groups", len(enis.NetworkInterfaces), len(insts.Reservations), len(sgs.SecurityGroups))
	}
	t.Logf("%d bad inputs refused at plan; nothing created", len(cases))
}

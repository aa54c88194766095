package awsspec_test

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// awsInput is a configuration on EC2 as given: the neutral part and the aws block.
type awsInput struct {
	cluster.Input
	AWS   *awsspec.Input
	Local *localspec.Block
}

// spec is the configuration with its defaults, as the glue builds it.
func (in awsInput) spec() cluster.Spec {
	c := in.Input
	c.Blocks = nil
	if in.AWS != nil {
		c.Blocks = append(c.Blocks, in.AWS)
	}
	if in.Local != nil {
		c.Blocks = append(c.Blocks, in.Local)
	}
	return cluster.FromInput(c)
}

// validAWS is a three-node cluster in eu-west-1 that Validate accepts.
func validAWS() awsInput {
	return awsInput{Input: cluster.Input{
		Name:  "demo",
		Nodes: []cluster.Node{{Name: "node-1", Zone: "eu-west-1a"}, {Name: "node-2", Zone: "eu-west-1b"}, {Name: "node-3", Zone: "eu-west-1c"}},
		Archive: &cluster.ArchiveInput{WALGEnv: map[string]string{
			"WALG_S3_PREFIX": "s3://demo-archive/demo", "AWS_REGION": "eu-west-1", "WALG_S3_SSE": "aws:kms",
		}}},
		AWS: &awsspec.Input{Block: awsspec.Block{
			Region:       "eu-west-1",
			InstanceType: "m6id.large",
			SubnetIDs: map[string]string{
				"eu-west-1a": "subnet-0123456789abcdef0", "eu-west-1b": "subnet-0123456789abcdef1", "eu-west-1c": "subnet-0123456789abcdef2",
			},
		}},
	}
}

// TestValidateAWS: every aws rule, each problem at its attribute, none reported twice and none without
// its attribute (the aws block as a whole).
func TestValidateAWS(t *testing.T) {
	tags := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = "v"
		}
		return m
	}
	ca, err := pki.NewCA("my authority", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := pki.Issue(ca, pki.Subject{CommonName: "a leaf"}, pki.Server, time.Now(), time.Hour)
	own := func(cert, key string) func(*awsInput) {
		return func(in *awsInput) {
			in.TLS = &cluster.TLSInput{}
			if cert != "" {
				in.TLS.CACertPEM = &cert
			}
			if key != "" {
				in.TLS.CAKeyParameter = &key
			}
		}
	}
	caPEM := string(ca.CertPEM)
	pcaArn := "arn:aws:acm-pca:us-east-1:123456789012:certificate-authority/11111111-2222-3333-4444-555555555555"
	pca := func(arn string, withOwn bool) func(*awsInput) {
		return func(in *awsInput) {
			in.TLS = &cluster.TLSInput{ACMPCAArn: &arn}
			if withOwn {
				in.TLS.CACertPEM = &caPEM
			}
		}
	}
	tests := []struct {
		name   string
		change func(*awsInput)
		path   string // "" = valid
		detail string
	}{
		{"valid", func(*awsInput) {}, "", ""},
		{"valid: tls with an authority of one's own", own(caPEM, "/pki/demo-ca/key"), "", ""},
		{"valid: tls from an ACM Private CA", pca(pcaArn, false), "", ""},
		{"ACM Private CA beside one's own", pca(pcaArn, true), "tls.acm_pca_arn", "each name the authority"},
		{"ACM Private CA ARN of a certificate", pca(pcaArn+"/certificate/0123", false), "tls.acm_pca_arn", "is not an ACM Private CA's ARN"},
		{"ACM Private CA ARN of ACM", pca("arn:aws:acm:us-east-1:123456789012:certificate/11111111-2222-3333-4444-555555555555", false), "tls.acm_pca_arn", "is not an ACM Private CA's ARN"},
		{"own authority without its key", own(caPEM, ""), "tls.ca_key_ssm_parameter", "does not say where its private key is"},
		{"own authority's key without its certificate", own("", "/pki/demo-ca/key"), "tls.ca_cert_pem", "does not give its certificate"},
		{"own authority that is a leaf", own(string(leaf.CertPEM), "/pki/demo-ca/key"), "tls.ca_cert_pem", "is not a certificate authority's certificate"},
		{"own authority not PEM", own("-----BEGIN NOTHING", "/pki/demo-ca/key"), "tls.ca_cert_pem", "is not a PEM certificate"},
		{"own authority's key under the nodes' path", own(caPEM, "/pgnvme/demo/ca-key"), "tls.ca_key_ssm_parameter", "under the cluster's SSM path /pgnvme/demo"},
		{"own authority's key not a parameter name", own(caPEM, "pki/key"), "tls.ca_key_ssm_parameter", "is not an SSM parameter name"},
		{"valid: a subnet for a zone no node uses", func(in *awsInput) { in.AWS.SubnetIDs["eu-west-1d"] = "subnet-0123456789abcdef3" }, "", ""},
		{"valid: region from the zones", func(in *awsInput) { in.AWS.Region = "" }, "", ""},
		{"valid: arm64, pgBackRest, options", func(in *awsInput) {
			in.AWS.InstanceType = "m6gd.large"
			in.Archive = &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"repo1-type": "s3", "repo1-s3-bucket": "b", "repo1-s3-region": "eu-west-1", "repo1-s3-endpoint": "s3.eu-west-1.amazonaws.com", "repo1-path": "/demo"}}
			in.AWS.AMIParameter = "/my/ami/debian-12"
			in.AWS.SecurityGroupIDs = []string{"sg-01234567", "sg-0123456789abcdef0", "sg-0123456789abcdef1", "sg-0123456789abcdef2", "sg-0123456789abcdef3"}
			in.AWS.AllowedCIDRs = []string{"10.0.0.0/16", "192.168.1.7/32"}
			in.AWS.NodePolicyJSON = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}`
			in.AWS.KeyName = "ops key"
			in.AWS.RootVolumeGiB = 100
			in.AWS.APIAddress = awsspec.APIAddressPublic
			in.AWS.Patroni = awsspec.Patroni{TTL: 20, LoopWait: 5, RetryTimeout: 5, MaximumLagOnFailover: 0}
			in.AWS.Tags = tags(awsspec.MaxAWSTags)
			in.AWS.Tags["Team"] = "db"
			delete(in.AWS.Tags, "k0")
		}, "", ""},
		{"valid: one node", func(in *awsInput) { in.Nodes = in.Nodes[:1] }, "", ""},
		{"valid: Local Zone name", func(in *awsInput) {
			in.AWS.Region = "us-west-2"
			in.Nodes = []cluster.Node{{Name: "node-1", Zone: "us-west-2-lax-1a"}}
			in.AWS.SubnetIDs = map[string]string{"us-west-2-lax-1a": "subnet-0123456789abcdef0"}
		}, "", ""},

		// TLS on aws: the block is accepted; its lifetimes are checked as on local.
		{"tls", func(in *awsInput) { in.TLS = &cluster.TLSInput{} }, "", ""},
		{"tls margin longer than the validity", func(in *awsInput) {
			h, m := 24, 24
			in.TLS = &cluster.TLSInput{ValidityPeriodHours: &h, EarlyRenewalHours: &m}
		}, "tls.early_renewal_hours", "must be shorter than the validity"},

		// The instance type.
		{"type empty", func(in *awsInput) { in.AWS.InstanceType = "" }, "aws.instance_type", "aws.instance_type is empty"},
		{"type not a name", func(in *awsInput) { in.AWS.InstanceType = "m6id" }, "aws.instance_type", "not an EC2 instance type name"},
		{"type without instance store", func(in *awsInput) { in.AWS.InstanceType = "m6i.large" }, "aws.instance_type", "has no instance-store NVMe"},
		{"type with SSD but not NVMe", func(in *awsInput) { in.AWS.InstanceType = "c3.large" }, "aws.instance_type", "but not NVMe"},
		{"type with a GPU", func(in *awsInput) { in.AWS.InstanceType = "g4dn.xlarge" }, "aws.instance_type", "gpu accelerators"},
		{"type is a Mac", func(in *awsInput) { in.AWS.InstanceType = "mac-m4.metal" }, "aws.instance_type", "a Mac"},
		{"type not offered in the region", func(in *awsInput) { in.AWS.InstanceType = "c8id.2xlarge" }, "aws.instance_type", "not offered in region eu-west-1"},
		{"type offered in too few zones", func(in *awsInput) {
			in.AWS.Region, in.AWS.InstanceType = "us-east-1", "i8ge.large"
			in.Nodes = []cluster.Node{{Name: "a", Zone: "us-east-1a"}, {Name: "b", Zone: "us-east-1b"}, {Name: "c", Zone: "us-east-1c"}, {Name: "d", Zone: "us-east-1d"}}
			in.AWS.SubnetIDs = map[string]string{"us-east-1a": "subnet-0000000a", "us-east-1b": "subnet-0000000b", "us-east-1c": "subnet-0000000c", "us-east-1d": "subnet-0000000d"}
		}, "aws.instance_type", "offered in only 3 of region us-east-1's zones"},

		// Region, zones and subnets.
		{"region not a name", func(in *awsInput) { in.AWS.Region = "Ireland" }, "aws.region", "not an AWS region name"},
		{"zone outside the region", func(in *awsInput) {
			in.Nodes[2].Zone = "eu-central-1a"
			in.AWS.SubnetIDs["eu-central-1a"] = "subnet-0123456789abcdef9"
		}, "node", "node-3 is in zone eu-central-1a, which is in region eu-central-1, not in the cluster's region eu-west-1"},
		{"zone the region does not have", func(in *awsInput) {
			in.Nodes[2].Zone = "eu-west-1z"
			in.AWS.SubnetIDs["eu-west-1z"] = "subnet-0123456789abcdef9"
		}, "node", "not one of region eu-west-1's zones (eu-west-1a, eu-west-1b, eu-west-1c"},
		{"region unset, zones in two regions", func(in *awsInput) {
			in.AWS.Region = ""
			in.Nodes[2].Zone = "eu-central-1a"
			in.AWS.SubnetIDs["eu-central-1a"] = "subnet-0123456789abcdef9"
		}, "node", "2 regions (eu-west-1, eu-central-1)"},
		{"region unset, zone not a zone", func(in *awsInput) { in.AWS.Region = ""; in.Nodes[0].Zone = "zone-a" }, "node", `zone "zone-a", which is not an availability zone name`},
		{"a region is not a zone", func(in *awsInput) { in.Nodes[0].Zone = "eu-west-1" }, "node", "not an availability zone name"},
		{"node without a zone", func(in *awsInput) { in.Nodes[1].Zone = "" }, "node", "Node node-2 has no zone"},
		{"two nodes in one zone", func(in *awsInput) { in.Nodes[2].Zone = "eu-west-1a" }, "node", "node-1 and node-3 are both in zone eu-west-1a"},
		{"zone without a subnet", func(in *awsInput) { delete(in.AWS.SubnetIDs, "eu-west-1c") }, "aws.subnet_ids", "Zone eu-west-1c (node node-3) has no subnet"},
		{"no subnets at all", func(in *awsInput) { in.AWS.SubnetIDs = nil }, "aws.subnet_ids", "Zone eu-west-1a (node node-1) has no subnet"},
		{"subnet ID malformed", func(in *awsInput) { in.AWS.SubnetIDs["eu-west-1b"] = "subnet-xyz" }, "aws.subnet_ids", `aws.subnet_ids["eu-west-1b"] is "subnet-xyz", which is not a subnet ID`},
		{"subnet ID too short", func(in *awsInput) { in.AWS.SubnetIDs["eu-west-1b"] = "subnet-0123" }, "aws.subnet_ids", "not a subnet ID"},
		{"one subnet for two zones", func(in *awsInput) { in.AWS.SubnetIDs["eu-west-1b"] = in.AWS.SubnetIDs["eu-west-1a"] }, "aws.subnet_ids", "for both eu-west-1a and eu-west-1b"},
		{"subnet key not a zone", func(in *awsInput) { in.AWS.SubnetIDs["private"] = "subnet-0123456789abcdef9" }, "aws.subnet_ids", `the key "private", which is not an availability zone name`},

		// The image.
		{"AMI ID malformed", func(in *awsInput) { in.AWS.AMIID = "ami-12" }, "aws.ami_id", "not an AMI ID"},
		{"AMI ID and parameter", func(in *awsInput) {
			in.AWS.AMIID, in.AWS.AMIParameter = "ami-0123456789abcdef0", awsspec.DefaultAMIParameterAMD64
		}, "aws.ami_ssm_parameter", "both set"},
		{"AMI parameter not a path", func(in *awsInput) { in.AWS.AMIParameter = "debian-12" }, "aws.ami_ssm_parameter", "not an SSM parameter name"},
		{"AMI parameter with a space", func(in *awsInput) { in.AWS.AMIParameter = "/my ami" }, "aws.ami_ssm_parameter", "not an SSM parameter name"},

		// Networks.
		{"security group malformed", func(in *awsInput) { in.AWS.SecurityGroupIDs = []string{"default"} }, "aws.security_group_ids", `"default", which is not a security group ID`},
		{"six security groups", func(in *awsInput) {
			for i := range 6 {
				in.AWS.SecurityGroupIDs = append(in.AWS.SecurityGroupIDs, fmt.Sprintf("sg-0000000%d", i))
			}
		}, "aws.security_group_ids", "lists 6 security groups; a network interface takes at most 5"},
		{"security group twice", func(in *awsInput) { in.AWS.SecurityGroupIDs = []string{"sg-01234567", "sg-01234567"} }, "aws.security_group_ids", "sg-01234567 twice"},
		{"CIDR malformed", func(in *awsInput) { in.AWS.AllowedCIDRs = []string{"10.0.0.0"} }, "aws.allowed_cidrs", `"10.0.0.0", which is not a CIDR`},
		{"CIDR IPv6", func(in *awsInput) { in.AWS.AllowedCIDRs = []string{"fd00::/8"} }, "aws.allowed_cidrs", "an IPv6 network"},
		{"CIDR with host bits", func(in *awsInput) { in.AWS.AllowedCIDRs = []string{"10.0.3.7/16"} }, "aws.allowed_cidrs", "write the network, 10.0.0.0/16"},
		{"CIDR loopback", func(in *awsInput) { in.AWS.AllowedCIDRs = []string{"127.0.0.0/8"} }, "aws.allowed_cidrs", "a loopback network"},
		{"CIDR open to all", func(in *awsInput) { in.AWS.AllowedCIDRs = []string{"0.0.0.0/0"} }, "aws.allowed_cidrs", "every network"},
		{"CIDR twice", func(in *awsInput) { in.AWS.AllowedCIDRs = []string{"10.0.0.0/16", "10.0.0.0/16"} }, "aws.allowed_cidrs", "10.0.0.0/16 twice"},
		{"API address", func(in *awsInput) { in.AWS.APIAddress = "dns_name" }, "aws.api_address", `aws.api_address is "dns_name"`},

		// IAM.
		{"instance profile an ARN", func(in *awsInput) {
			in.AWS.IAMInstanceProfile = "arn:aws:iam::123456789012:instance-profile/db"
		}, "aws.iam_instance_profile", "not an instance profile name"},
		{"node policy not JSON", func(in *awsInput) { in.AWS.NodePolicyJSON = "s3:*" }, "aws.node_policy_json", "not a JSON object"},
		{"node policy a list", func(in *awsInput) { in.AWS.NodePolicyJSON = `[{"Effect":"Allow"}]` }, "aws.node_policy_json", "not a JSON object"},
		{"node policy without Statement", func(in *awsInput) { in.AWS.NodePolicyJSON = `{"Version":"2012-10-17"}` }, "aws.node_policy_json", `no "Statement"`},
		{"node policy Statement a string", func(in *awsInput) { in.AWS.NodePolicyJSON = `{"Statement":"allow"}` }, "aws.node_policy_json", `no "Statement"`},
		{"node policy with own profile", func(in *awsInput) {
			in.AWS.IAMInstanceProfile, in.AWS.NodePolicyJSON = "db-nodes", `{"Statement":[]}`
		}, "aws.node_policy_json", "only to the role the platform creates"},

		// The instance.
		{"key name too long", func(in *awsInput) { in.AWS.KeyName = strings.Repeat("k", 256) }, "aws.key_name", "not an EC2 key pair name"},
		{"key name not ASCII", func(in *awsInput) { in.AWS.KeyName = "clé" }, "aws.key_name", "printable ASCII"},
		{"placement group name too long", func(in *awsInput) { in.AWS.PlacementGroup = strings.Repeat("p", 256) }, "aws.placement_group", "not an EC2 placement group name"},
		{"root volume too small", func(in *awsInput) { in.AWS.RootVolumeGiB = 4 }, "aws.root_volume_gib", "give 8 to 16384 GiB"},
		{"root volume too large", func(in *awsInput) { in.AWS.RootVolumeGiB = 20000 }, "aws.root_volume_gib", "aws.root_volume_gib is 20000"},
		{"valid: metadata hop limit 1", func(in *awsInput) { in.AWS.MetadataHopLimit = 1 }, "", ""},
		{"metadata hop limit negative", func(in *awsInput) { in.AWS.MetadataHopLimit = -1 }, "aws.metadata_hop_limit", "aws.metadata_hop_limit is -1; give 1 to 64"},
		{"metadata hop limit too large", func(in *awsInput) { in.AWS.MetadataHopLimit = 65 }, "aws.metadata_hop_limit", "aws.metadata_hop_limit is 65"},

		// Patroni.
		{"ttl below 20", func(in *awsInput) { in.AWS.Patroni.TTL = 15 }, "aws.patroni", "ttl is 15 seconds; use 20 or more"},
		{"loop_wait negative", func(in *awsInput) { in.AWS.Patroni.LoopWait = -1 }, "aws.patroni", "loop_wait is -1 seconds"},
		{"retry_timeout below 3", func(in *awsInput) { in.AWS.Patroni.RetryTimeout = 2 }, "aws.patroni", "retry_timeout is 2 seconds"},
		{"ttl below loop_wait + 2 retry_timeout (defaults)", func(in *awsInput) { in.AWS.Patroni.TTL = 25 }, "aws.patroni", "aws.patroni.loop_wait 10 + 2 x aws.patroni.retry_timeout 10 is more than aws.patroni.ttl 25"},
		{"maximum lag negative", func(in *awsInput) { in.AWS.Patroni.MaximumLagOnFailover = -1 }, "aws.patroni", "maximum_lag_on_failover is -1"},

		// Tags.
		{"tag key aws:", func(in *awsInput) { in.AWS.Tags = map[string]string{"AWS:owner": "x"} }, "aws.tags", "aws: prefix is reserved"},
		{"tag key pgnvme:", func(in *awsInput) { in.AWS.Tags = map[string]string{"pgnvme:cluster": "other"} }, "aws.tags", "pgnvme: prefix is reserved"},
		{"tag key empty", func(in *awsInput) { in.AWS.Tags = map[string]string{"": "x"} }, "aws.tags", "1 to 128 characters"},
		{"tag key too long", func(in *awsInput) { in.AWS.Tags = map[string]string{strings.Repeat("k", 129): "x"} }, "aws.tags", "1 to 128 characters"},
		{"tag value too long", func(in *awsInput) { in.AWS.Tags = map[string]string{"k": strings.Repeat("é", 257)} }, "aws.tags", "257 characters; a tag value has at most 256"},
		{"too many tags", func(in *awsInput) { in.AWS.Tags = tags(awsspec.MaxAWSTags + 1) }, "aws.tags", "41 tags; give at most 40"},

		// The cluster on EC2.
		{"no archive", func(in *awsInput) { in.Archive = nil }, "archive", "needs an archive"},
		{"valid: restore from another WAL-G archive in another region", func(in *awsInput) {
			in.Restore = &cluster.RestoreInput{WALGEnv: map[string]string{"WALG_S3_PREFIX": "s3://dr/orders", "AWS_REGION": "us-west-2"},
				Target: cluster.RestoreTargetInput{Time: "2026-12-02T10:30:00Z"}}
		}, "", ""},
		{"restore with the other archiver", func(in *awsInput) {
			in.Restore = &cluster.RestoreInput{PgBackRestOptions: map[string]string{"repo1-type": "s3", "repo1-s3-bucket": "dr", "repo1-s3-region": "us-west-2", "repo1-s3-endpoint": "s3.us-west-2.amazonaws.com", "repo1-path": "/orders"}, Stanza: "orders"}
		}, "restore.archive", "written by pgBackRest (pgbackrest_options) but archives with WAL-G (walg_env)"},
		{"restore with a secret", func(in *awsInput) {
			in.Restore = &cluster.RestoreInput{WALGEnv: map[string]string{"WALG_S3_PREFIX": "s3://dr/orders", "AWS_SECRET_ACCESS_KEY": "abc"}}
		}, "restore.archive.walg_env", "AWS_SECRET_ACCESS_KEY holds a secret"},
		{"restore from the cluster's own archive", func(in *awsInput) {
			in.Restore = &cluster.RestoreInput{WALGEnv: maps.Clone(in.Archive.WALGEnv)}
		}, "restore.archive", "archive to it as well"},
		{"restore from a posix repository", func(in *awsInput) {
			in.Archive = &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"repo1-type": "s3", "repo1-s3-bucket": "b", "repo1-s3-region": "eu-west-1", "repo1-s3-endpoint": "s3.eu-west-1.amazonaws.com", "repo1-path": "/demo"}}
			in.Restore = &cluster.RestoreInput{PgBackRestOptions: map[string]string{"repo1-path": "/var/lib/pgbackrest"}, Stanza: "orders"}
		}, "restore.archive", "is not a bucket"},
		{"archive with both archivers", func(in *awsInput) {
			in.Archive.PgBackRestOptions = map[string]string{"repo1-path": "/r"}
		}, "archive", "give exactly one of them"},
		{"archive with neither", func(in *awsInput) { in.Archive = &cluster.ArchiveInput{} }, "archive", "give exactly one of them"},
		{"WAL-G secret", func(in *awsInput) { in.Archive.WALGEnv["AWS_SECRET_ACCESS_KEY"] = "abc" }, "archive.walg_env", "AWS_SECRET_ACCESS_KEY holds a secret"},
		{"WAL-G access key ID", func(in *awsInput) { in.Archive.WALGEnv["AWS_KEY_ID"] = "AKIAABCDEFGHIJKLMNOP" }, "archive.walg_env", "holds an AWS access key ID"},
		{"WAL-G variable the platform sets", func(in *awsInput) { in.Archive.WALGEnv["PGHOST"] = "localhost" }, "archive.walg_env", "set by the EC2 platform"},
		{"WAL-G allowed to overwrite", func(in *awsInput) { in.Archive.WALGEnv["WALG_PREVENT_WAL_OVERWRITE"] = "false" }, "archive.walg_env", "pgnvme always sets it true"},
		{"pgBackRest secret", func(in *awsInput) {
			in.Archive = &cluster.ArchiveInput{PgBackRestOptions: map[string]string{"repo1-type": "s3", "repo1-path": "/demo", "repo1-s3-key-secret": "abc"}}
		}, "archive.pgbackrest_options", "repo1-s3-key-secret holds a secret"},
		{"synchronous first", func(in *awsInput) { in.Synchronous.Method = "first" }, "synchronous.method", "quorum mode"},

		// Names a node's bootstrap refuses (etcd and Patroni members), with their attribute.
		{"node name etcd cannot use", func(in *awsInput) { in.Nodes[0].Name = "node_1" }, "node", "cannot name an etcd and Patroni member"},
		{"node name ending in -", func(in *awsInput) { in.Nodes[2].Name = "node-" }, "node", "cannot name an etcd and Patroni member"},
	}
	refused := 0
	for _, tt := range tests {
		if tt.path != "" {
			refused++
		}
		t.Run(tt.name, func(t *testing.T) {
			in := validAWS()
			tt.change(&in)
			errs := cluster.Validate(in.spec())
			seen := map[string]bool{}
			for _, e := range errs {
				if seen[e.Detail] {
					t.Errorf("reported twice: %v", e)
				}
				seen[e.Detail] = true
				if len(e.Path) == 1 && e.Path[0] == "aws" {
					t.Errorf("a problem without its attribute: %v", e)
				}
				if e.Summary == "" || !strings.HasSuffix(e.Detail, ".") {
					t.Errorf("summary %q and detail %q: want a title and full sentences", e.Summary, e.Detail)
				}
			}
			if tt.path == "" {
				if len(errs) > 0 {
					t.Fatalf("Validate: %v, want none", errs)
				}
				return
			}
			for _, e := range errs {
				if strings.Join(e.Path, ".") == tt.path && strings.Contains(e.Detail, tt.detail) {
					return
				}
			}
			t.Fatalf("Validate: %v; want one at %s containing %q", errs, tt.path, tt.detail)
		})
	}
	if refused < 25 {
		t.Errorf("%d refused inputs, want at least 25", refused)
	}
}

// Rules a node's bootstrap shares are reported once, with their attribute, however many there are.
func TestValidateAWSReportsOnce(t *testing.T) {
	in := validAWS()
	in.Synchronous.Method = "first"
	in.AWS.Patroni = awsspec.Patroni{TTL: 10, MaximumLagOnFailover: -5}
	in.Archive.WALGEnv["AWS_SECRET_ACCESS_KEY"] = "x"
	in.AWS.AllowedCIDRs = []string{"127.0.0.1/32", "10.0.0.0/16"}
	in.Nodes[1].Zone = ""
	errs := cluster.Validate(in.spec())
	count := map[string]int{}
	for _, e := range errs {
		count[strings.Join(e.Path, ".")]++
	}
	want := map[string]int{"synchronous.method": 1, "aws.patroni": 2, "archive.walg_env": 1, "aws.allowed_cidrs": 1, "node": 1}
	if !reflect.DeepEqual(count, want) {
		t.Fatalf("problems by path = %v, want %v: %v", count, want, errs)
	}
}

// Both platform blocks: the platform is missing, and each block is still checked.
func TestValidateTwoPlatforms(t *testing.T) {
	in := validAWS()
	in.Local = &localspec.Block{DataDir: "/var/lib/pgnvme/demo"}
	errs := cluster.Validate(in.spec())
	var paths []string
	for _, e := range errs {
		paths = append(paths, strings.Join(e.Path, "."))
		if len(e.Path) == 0 && !strings.Contains(e.Detail, "aws { instance_type") {
			t.Errorf("the message names both blocks: %q", e.Detail)
		}
	}
	if !slices.Contains(paths, "") {
		t.Errorf("Validate = %v, want the missing platform", errs)
	}
}

func TestFromInputAWS(t *testing.T) {
	in := validAWS()
	in.Nodes[0].Zone = ""
	s := in.spec()
	if s.Nodes[0].Zone != "" {
		t.Errorf("on aws a node without a zone keeps none: %+v", s.Nodes[0])
	}
	if s.Platform() != cluster.PlatformAWS || awsspec.Of(s).RootVolumeGiB != awsspec.DefaultRootVolumeGiB || awsspec.Of(s).APIAddress != awsspec.APIAddressPrivate || !awsspec.Of(s).DeletionProtection {
		t.Errorf("aws defaults: %+v", awsspec.Of(s))
	}
}

func awsAddrs() map[string]string {
	return map[string]string{"node-1": "10.0.1.10", "node-2": "10.0.2.10", "node-3": "10.0.3.10"}
}

func TestBootstrap(t *testing.T) {
	in := validAWS()
	in.AWS.Patroni = awsspec.Patroni{TTL: 40, LoopWait: 5, MaximumLagOnFailover: 1 << 24}
	s := in.spec()
	facts := awsspec.Facts{Architecture: bootstrap.ArchX86_64, DiskCount: 1}
	c, nodes := awsspec.Bootstrap(s, "eu-west-1", awsAddrs(), []string{"10.0.0.0/16", "10.0.2.10/32"}, facts)
	if c.Name != "demo" || !slices.Equal(c.Nodes, []string{"node-1", "node-2", "node-3"}) || c.PostgresMajor == 0 || c.Archive != s.Archive {
		t.Errorf("cluster = %+v", c)
	}
	if len(nodes) != 3 {
		t.Fatalf("%d nodes", len(nodes))
	}
	n := nodes[1]
	want := bootstrap.EC2Node{
		Name: "node-2", Zone: "eu-west-1b", PrivateIP: "10.0.2.10",
		Peers:        []bootstrap.Peer{{Name: "node-1", IP: "10.0.1.10"}, {Name: "node-3", IP: "10.0.3.10"}},
		InstanceType: "m6id.large", DiskCount: 1, Architecture: bootstrap.ArchX86_64, Region: "eu-west-1",
		// The given networks, then every node's /32 not already listed.
		AllowedCIDRs: []string{"10.0.0.0/16", "10.0.2.10/32", "10.0.1.10/32", "10.0.3.10/32"},
		Patroni:      bootstrap.Patroni{TTL: 40, LoopWait: 5, MaximumLagOnFailover: 1 << 24},
	}
	if !reflect.DeepEqual(n, want) {
		t.Errorf("node-2 =\n%+v\nwant\n%+v", n, want)
	}
	if nodes[0].Peers[0].Name != "node-2" || nodes[2].Peers[1].Name != "node-2" {
		t.Errorf("peers in priority order: %+v / %+v", nodes[0].Peers, nodes[2].Peers)
	}
	// No allowed networks (the VPC's unknown): the members still reach each other.
	_, nodes = awsspec.Bootstrap(s, "eu-west-1", awsAddrs(), nil, facts)
	if !slices.Equal(nodes[0].AllowedCIDRs, []string{"10.0.1.10/32", "10.0.2.10/32", "10.0.3.10/32"}) {
		t.Errorf("AllowedCIDRs = %v", nodes[0].AllowedCIDRs)
	}
}

func TestRender(t *testing.T) {
	s := validAWS().spec()
	got, err := awsspec.Render(s, "eu-west-1", awsAddrs(), []string{"10.0.0.0/16"}, awsspec.Facts{Architecture: bootstrap.ArchX86_64, DiskCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(got)), []string{"node-1", "node-2", "node-3"}) {
		t.Fatalf("Render rendered %v", slices.Sorted(maps.Keys(got)))
	}
	superuser, replication, restAPI := awsspec.SSMParameterNames("demo")
	if awsspec.SSMPath("demo") != "/pgnvme/demo" || superuser != "/pgnvme/demo/superuser-password" || replication != "/pgnvme/demo/replication-password" || restAPI != "/pgnvme/demo/restapi-password" {
		t.Errorf("SSM names: %s %s %s %s", awsspec.SSMPath("demo"), superuser, replication, restAPI)
	}
	// A password-like setting holds a reference (an SSM name or an environment variable), never a value.
	passwordSetting := regexp.MustCompile(`(?i)(password|passwd|secret)[a-z_]*\s*[:=]\s*("?)([^\s"]+)`)
	for name, u := range got {
		for _, p := range []string{superuser, replication, restAPI} {
			if !strings.Contains(u.CloudConfig, p) {
				t.Errorf("%s: the user-data does not name the parameter %s", name, p)
			}
		}
		if m := regexp.MustCompile(`(?im)^\s*-?\s*password:\s*\S.*$`).FindString(u.CloudConfig); m != "" {
			t.Errorf("%s: a password in the user-data: %q", name, m)
		}
		for _, m := range passwordSetting.FindAllStringSubmatch(u.CloudConfig, -1) {
			v := m[3]
			if !strings.HasPrefix(v, "/pgnvme/demo/") && !strings.HasPrefix(v, "$") && !strings.HasPrefix(v, "%") && !strings.HasPrefix(v, "'") {
				t.Errorf("%s: %q looks like a password value", name, m[0])
			}
		}
		if !strings.Contains(u.CloudConfig, "10.0.0.0/16") {
			t.Errorf("%s: allowed network missing", name)
		}
		for _, ip := range awsAddrs() {
			if !strings.Contains(u.PatroniYAML, ip) {
				t.Errorf("%s: Patroni's configuration does not name %s", name, ip)
			}
		}
	}
	if y := got["node-2"].PatroniYAML; !strings.Contains(y, `name: "node-2"`) || !strings.Contains(y, `connect_address: "10.0.2.10:5432"`) {
		t.Errorf("node-2's own address and name:\n%s", got["node-2"].PatroniYAML)
	}

	// A node bootstrap refuses: the error names it.
	addrs := awsAddrs()
	addrs["node-3"] = "127.0.0.1"
	if _, err := awsspec.Render(s, "eu-west-1", addrs, nil, awsspec.Facts{Architecture: bootstrap.ArchX86_64, DiskCount: 1}); err == nil || !strings.Contains(err.Error(), "node node-1") {
		t.Errorf("Render with a loopback address: %v", err)
	}
}

// TestRenderClone: a cluster with a restore block forms from the planned backup of the source archive to
// the target (each target kind as PostgreSQL's setting), with the identity of Render's, and records the
// restore at its own archive's record path; a plan without a backup is refused.
func TestRenderClone(t *testing.T) {
	in := validAWS()
	in.Restore = &cluster.RestoreInput{WALGEnv: map[string]string{"WALG_S3_PREFIX": "s3://dr/orders", "AWS_REGION": "us-west-2"}}
	s := in.spec()
	facts := awsspec.Facts{Architecture: bootstrap.ArchX86_64, DiskCount: 1}
	at := time.Date(2026, 12, 2, 10, 30, 0, 250_000_000, time.UTC)
	p := cluster.RestorePlan{From: archive.Location{Tool: archive.ToolWALG, Bucket: "dr", Root: "orders/"},
		Backup: archive.Backup{Label: "base_000000010000000000000004", Stop: at.Add(-time.Hour).Unix(), LSNStart: "0/4000028", Size: 1 << 30},
		Target: archive.Target{Time: at}}
	plain, err := awsspec.Render(s, "eu-west-1", awsAddrs(), nil, facts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := awsspec.RenderClone(s, "eu-west-1", awsAddrs(), nil, facts, p)
	if err != nil {
		t.Fatal(err)
	}
	for name, u := range got {
		if u.Identity != plain[name].Identity {
			t.Errorf("%s: the clone's identity is not the node's usual one", name)
		}
		for _, want := range []string{`recovery_target_time: "2026-12-02 10:30:00.25+00"`, "backup-fetch", "base_000000010000000000000004", "pgnvme/restored.json"} {
			if !strings.Contains(u.CloudConfig+u.PatroniYAML, want) {
				t.Errorf("%s: the clone's user-data lacks %q", name, want)
			}
		}
	}
	src, err := awsspec.Source(s, p)
	if err != nil || src.RecordPath != "pgnvme/restored.json" || !strings.Contains(src.Record, `"backup_lsn_start":"0/4000028"`) || !strings.Contains(src.Record, `"backup_bytes":1073741824`) {
		t.Errorf("Source: %+v, %v", src, err)
	}
	if _, err := awsspec.RenderClone(s, "eu-west-1", awsAddrs(), nil, facts, cluster.RestorePlan{}); err == nil {
		t.Error("a clone without a planned backup rendered")
	}
}

func TestLaunch(t *testing.T) {
	aws := &awsspec.Block{InstanceType: "m6id.large", RootVolumeGiB: 20, MetadataHopLimit: awsspec.DefaultMetadataHopLimit}
	base := awsspec.NewLaunch(aws, "ami-0123456789abcdef0", []byte("user-data"))
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(base.Fingerprint()) {
		t.Fatalf("Fingerprint = %q, want 16 hex digits", base.Fingerprint())
	}
	if again := awsspec.NewLaunch(aws, "ami-0123456789abcdef0", []byte("user-data")); again.Fingerprint() != base.Fingerprint() {
		t.Errorf("not stable: %s, %s", base.Fingerprint(), again.Fingerprint())
	}
	if got := base.Changes("m6id.large", "ami-0123456789abcdef0", base.Tags()); got != nil {
		t.Errorf("an instance launched so: changes %q; want none", got)
	}
	// Each field changes the fingerprint and is named as the reason.
	for _, tc := range []struct {
		change func(l *awsspec.Launch)
		want   string
	}{
		{func(l *awsspec.Launch) { l.InstanceType = "m6id.xlarge" }, "aws.instance_type m6id.large -> m6id.xlarge"},
		{func(l *awsspec.Launch) { l.AMI = "ami-0123456789abcdef1" }, "aws.ami_id ami-0123456789abcdef0 -> ami-0123456789abcdef1"},
		{func(l *awsspec.Launch) { l.RootVolumeGiB = 40 }, "aws.root_volume_gib 20 -> 40"},
		{func(l *awsspec.Launch) { l.KeyName = "ops" }, "aws.key_name (none) -> ops"},
		{func(l *awsspec.Launch) { l.PlacementGroup = "racks" }, "aws.placement_group (none) -> racks"},
		{func(l *awsspec.Launch) { l.UserData = awsspec.NewLaunch(aws, "", []byte("user-data2")).UserData }, "its user-data changed"},
		{func(l *awsspec.Launch) { l.MetadataHopLimit = 3 }, "aws.metadata_hop_limit 2 -> 3"},
	} {
		want := base
		tc.change(&want)
		if want.Fingerprint() == base.Fingerprint() {
			t.Errorf("%s: the fingerprint stays %s", tc.want, base.Fingerprint())
		}
		got := want.Changes(base.InstanceType, base.AMI, base.Tags())
		if len(got) != 1 || !strings.HasPrefix(got[0], tc.want) {
			t.Errorf("changes %q; want one, %q", got, tc.want)
		}
	}
	// The fingerprint of the rows before aws.metadata_hop_limit is what it was (as computed before the
	// launch became a table), so no instance launched then is replaced.
	for _, tc := range []struct {
		l    awsspec.Launch
		want string
	}{
		{awsspec.Launch{InstanceType: "m6id.large", AMI: "ami-0123456789abcdef0", RootVolumeGiB: 20, UserData: "00112233aabbccdd", MetadataHopLimit: 2}, "d58a0adee2fa4435"},
		{awsspec.Launch{InstanceType: "i4i.xlarge", AMI: "ami-1", RootVolumeGiB: 40, KeyName: "ops", PlacementGroup: "racks", UserData: "ffeeddccbbaa9988", MetadataHopLimit: 2}, "2cdc3d157e06d23e"},
	} {
		if got := tc.l.Fingerprint(); got != tc.want {
			t.Errorf("Fingerprint of %+v = %s, want %s (the fingerprint before the metadata hop limit)", tc.l, got, tc.want)
		}
	}
	// An instance launched before the hop limit was a setting has no tag for it: it ran with the default.
	before := base.Tags()
	delete(before, awsspec.TagMetadataHopLimit)
	if got := base.Changes(base.InstanceType, base.AMI, before); got != nil {
		t.Errorf("an instance from before the hop limit, default wanted: changes %q; want none", got)
	}
	three := base
	three.MetadataHopLimit = 3
	if got := three.Changes(base.InstanceType, base.AMI, before); len(got) != 1 || got[0] != "aws.metadata_hop_limit 2 -> 3" {
		t.Errorf("an instance from before the hop limit, 3 wanted: changes %q; want the hop limit 2 -> 3", got)
	}
	if tags := three.Tags(); tags[awsspec.TagMetadataHopLimit] != "3" || tags[awsspec.TagKeyName] != "" || tags[awsspec.TagRootVolume] != "20" {
		t.Errorf("tags %v: want the hop limit 3, no key, the root volume 20", tags)
	}
	// An instance from before the named tags: its fingerprint alone says it differs.
	if got := base.Changes("m6id.large", "ami-0123456789abcdef0", map[string]string{awsspec.TagConfig: "0123456789abcdef"}); len(got) != 1 || !strings.Contains(got[0], "pgnvme:config") {
		t.Errorf("an untagged instance: changes %q; want the general reason", got)
	}
	// The same bytes split differently are another launch.
	if x, y := (awsspec.Launch{InstanceType: "ab", AMI: "c"}), (awsspec.Launch{InstanceType: "a", AMI: "bc"}); x.Fingerprint() == y.Fingerprint() {
		t.Error("fingerprints of different launches agree")
	}
	// Real user-data: a node whose peers move changes; rendering again does not.
	s := validAWS().spec()
	facts := awsspec.Facts{Architecture: bootstrap.ArchX86_64, DiskCount: 1}
	a, _ := awsspec.Render(s, "eu-west-1", awsAddrs(), nil, facts)
	b, _ := awsspec.Render(s, "eu-west-1", awsAddrs(), nil, facts)
	addrs := awsAddrs()
	addrs["node-3"] = "10.0.3.11"
	c, _ := awsspec.Render(s, "eu-west-1", addrs, nil, facts)
	fp := func(m map[string]bootstrap.UserData) string {
		return awsspec.NewLaunch(aws, "ami-0123456789abcdef0", []byte(m["node-1"].Identity)).Fingerprint()
	}
	if fp(a) != fp(b) || fp(a) == fp(c) {
		t.Errorf("fingerprints of node-1: %s, again %s, with node-3 moved %s", fp(a), fp(b), fp(c))
	}
	// Parameters go through Patroni's dynamic configuration: the identity, so the fingerprint, stays.
	s.Parameters = map[string]string{"work_mem": "64MB"}
	d, err := awsspec.Render(s, "eu-west-1", awsAddrs(), nil, facts)
	if err != nil {
		t.Fatal(err)
	}
	if fp(d) != fp(a) || string(d["node-1"].Gzip()) == string(a["node-1"].Gzip()) {
		t.Errorf("a parameter change: fingerprint %s -> %s (want the same), user-data changed: %v", fp(a), fp(d), string(d["node-1"].Gzip()) != string(a["node-1"].Gzip()))
	}
}

// TestDynamicConfig: the dynamic configuration is every node's, whatever the instance type.
func TestDynamicConfig(t *testing.T) {
	s := validAWS().spec()
	s.Parameters = map[string]string{"work_mem": "64MB"}
	got, err := awsspec.DynamicConfig(s, awsAddrs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ud, err := awsspec.Render(s, "eu-west-1", awsAddrs(), nil, awsspec.Facts{Architecture: bootstrap.ArchARM64, DiskCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	for name, u := range ud {
		if !reflect.DeepEqual(u.DynamicConfig, got) {
			t.Errorf("node %s's dynamic configuration %v differs from DynamicConfig's %v", name, u.DynamicConfig, got)
		}
	}
	if got["postgresql"].(map[string]any)["parameters"].(map[string]any)["work_mem"] != "64MB" {
		t.Errorf("DynamicConfig lacks the parameters: %v", got)
	}
}

func TestConnectionURIs(t *testing.T) {
	members := []cluster.Member{{Name: "a", Host: "10.0.1.10"}, {Name: "b", Host: "fd00::2"}, {Name: "c"}, {Name: "d", Host: "10.0.3.10"}}
	rw, ro := awsspec.ConnectionURIs(members, 5432, "app user", "app")
	if want := "postgresql://app%20user@10.0.1.10:5432,[fd00::2]:5432,10.0.3.10:5432/app?target_session_attrs=read-write"; rw != want {
		t.Errorf("read-write = %q, want %q", rw, want)
	}
	if want := "postgresql://app%20user@10.0.1.10:5432,[fd00::2]:5432,10.0.3.10:5432/app?target_session_attrs=prefer-standby"; ro != want {
		t.Errorf("read-only = %q, want %q", ro, want)
	}
	if rw, ro := awsspec.ConnectionURIs(nil, 5432, "postgres", "postgres"); rw != "" || ro != "" {
		t.Errorf("no members: %q %q", rw, ro)
	}
	if rw, _ := awsspec.ConnectionURIs([]cluster.Member{{Name: "x"}}, 5432, "postgres", "postgres"); rw != "" {
		t.Errorf("no addresses: %q", rw)
	}
}

func TestNodeListChange(t *testing.T) {
	three := []string{"a", "b", "c"}
	for _, tc := range []struct {
		prior, want    []string
		added, removed []string
		err            string
	}{
		{three, three, nil, nil, ""},
		{three, []string{"a", "b", "c", "d", "e"}, []string{"d", "e"}, nil, ""},
		{[]string{"a", "b", "c", "d", "e"}, three, nil, []string{"d", "e"}, ""},
		{[]string{"a"}, []string{"a", "b"}, []string{"b"}, nil, ""},
		{[]string{"a", "b"}, []string{"a"}, nil, []string{"b"}, ""},
		{[]string{"a", "b"}, three, nil, nil, "first 1 run etcd"},
		{three, []string{"a", "b"}, nil, nil, "first 3 run etcd"},
		{three, []string{"a", "c", "b"}, nil, nil, "renaming or reordering"},
		{three, []string{"a", "b", "x", "d"}, nil, nil, "renaming or reordering"},
	} {
		added, removed, err := awsspec.NodeListChange(tc.prior, tc.want)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%v -> %v: %v", tc.prior, tc.want, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v -> %v: error %v, want one saying %q", tc.prior, tc.want, err, tc.err)
		case tc.err == "" && (!slices.Equal(added, tc.added) || !slices.Equal(removed, tc.removed)):
			t.Errorf("%v -> %v: added %v removed %v, want %v and %v", tc.prior, tc.want, added, removed, tc.added, tc.removed)
		}
	}
}

// TestWarnings_restoreSourceRead: a restore whose source the nodes' created role cannot be granted to read
// (by node_policy_json) is warned about at aws.node_policy_json, naming each missing call; a policy that
// covers the source, a profile of the user's own, or no restore give no warning.
func TestWarnings_restoreSourceRead(t *testing.T) {
	restore := func(in *awsInput) {
		in.Restore = &cluster.RestoreInput{WALGEnv: map[string]string{"WALG_S3_PREFIX": "s3://dr/orders", "AWS_REGION": "us-west-2"}}
	}
	own := archive.Spec{Bucket: "demo-archive", Prefix: "demo", Region: "eu-west-1"}.NodePolicy().JSON()
	source := archive.Spec{Bucket: "dr", Prefix: "orders", Region: "us-west-2"}.NodePolicy().JSON()
	both := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:ListBucket","s3:GetObject"],"Resource":["arn:aws:s3:::dr","arn:aws:s3:::dr/orders/*"]}]}`
	for _, tc := range []struct {
		name   string
		change func(*awsInput)
		want   []string // the warning's missing calls; none for no warning
	}{
		{"no restore", func(in *awsInput) { in.AWS.NodePolicyJSON = own }, nil},
		{"no node policy", restore, []string{"s3:ListBucket on arn:aws:s3:::dr", "s3:GetObject on arn:aws:s3:::dr/orders/wal_005/*", "s3:GetObject on arn:aws:s3:::dr/orders/basebackups_005/*", "is not set"}},
		{"the cluster's own archive only", func(in *awsInput) { restore(in); in.AWS.NodePolicyJSON = own }, []string{"s3:ListBucket on arn:aws:s3:::dr (prefix orders/wal_005/) and", "grants none of them"}},
		// Listing the source's bucket is allowed under the other prefix only (its s3:prefix condition).
		{"another prefix of the source's bucket", func(in *awsInput) {
			restore(in)
			in.AWS.NodePolicyJSON = archive.Spec{Bucket: "dr", Prefix: "billing", Region: "us-west-2"}.NodePolicy().JSON()
		}, []string{"s3:ListBucket on arn:aws:s3:::dr (prefix orders/wal_005/)", "s3:ListBucket on arn:aws:s3:::dr (prefix orders/basebackups_005/)", "s3:GetObject on arn:aws:s3:::dr/orders/wal_005/*"}},
		{"the source's node policy", func(in *awsInput) { restore(in); in.AWS.NodePolicyJSON = source }, nil},
		{"a statement for the source", func(in *awsInput) { restore(in); in.AWS.NodePolicyJSON = both }, nil},
		{"the user's own profile", func(in *awsInput) { restore(in); in.AWS.IAMInstanceProfile = "db-nodes" }, nil},
	} {
		in := validAWS()
		tc.change(&in)
		s := in.spec()
		if errs := cluster.Validate(s); len(errs) > 0 {
			t.Fatalf("%s: the configuration is not valid: %v", tc.name, errs)
		}
		got := cluster.Warnings(s)
		switch {
		case len(tc.want) == 0 && len(got) > 0:
			t.Errorf("%s: want no warning, got %v", tc.name, got)
		case len(tc.want) > 0 && (len(got) != 1 || strings.Join(got[0].Path, ".") != "aws.node_policy_json"):
			t.Errorf("%s: want one warning at aws.node_policy_json, got %v", tc.name, got)
		case len(tc.want) > 0:
			for _, w := range tc.want {
				if !strings.Contains(got[0].Detail, w) {
					t.Errorf("%s: the warning does not say %q: %s", tc.name, w, got[0].Detail)
				}
			}
		}
	}
}

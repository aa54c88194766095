package awsclient

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Call is one AWS API operation the provider makes (service.Operation, as the SDK names it), the IAM
// actions AWS checks for it and what the provider uses it for.
type Call struct {
	Operation string
	Actions   []string
	Use       string
}

// Implied is an IAM action AWS checks beside another call, not an operation of its own: tagging a resource
// as it is created, passing a role to a service.
type Implied struct {
	Action, Use string
}

// OperatorCalls are every AWS operation this package makes for the provider (the operator's credentials:
// the provider block's), with their IAM actions: the one list the operator's policy and its documentation
// are made of. A test reads this package's source and fails when an operation it makes is missing here, or
// one listed here is made nowhere.
var OperatorCalls = []Call{
	// Placement, images and the instance catalog.
	{"ec2.DescribeAvailabilityZones", []string{"ec2:DescribeAvailabilityZones"}, "the zones of the region"},
	{"ec2.DescribeInstanceTypes", []string{"ec2:DescribeInstanceTypes"}, "instance types with instance store (the catalog's `ec2` source, the plan)"},
	{"ec2.DescribeInstanceTypeOfferings", []string{"ec2:DescribeInstanceTypeOfferings"}, "the zones that offer the instance type"},
	{"ec2.DescribeImages", []string{"ec2:DescribeImages"}, "the AMI's architecture and root device"},
	{"ec2.DescribePlacementGroups", []string{"ec2:DescribePlacementGroups"}, "the placement group's strategy"},
	{"ec2.DescribeSubnets", []string{"ec2:DescribeSubnets"}, "the subnets' zones and VPC"},
	{"ec2.DescribeVpcs", []string{"ec2:DescribeVpcs"}, "the VPC's address range for the security group"},
	{"ssm.GetParameter", []string{"ssm:GetParameter"}, "the public Debian AMI parameter; the cluster's passwords, certificates and takeover instruction under its SSM path, and its certificate authority (/pgnvme-ca/<name>)"},
	// The nodes: network interfaces, security group, addresses, instances.
	{"ec2.DescribeNetworkInterfaces", []string{"ec2:DescribeNetworkInterfaces"}, "each node's stable interface"},
	{"ec2.CreateNetworkInterface", []string{"ec2:CreateNetworkInterface"}, "each node's stable interface (its address outlives the instance)"},
	{"ec2.ModifyNetworkInterfaceAttribute", []string{"ec2:ModifyNetworkInterfaceAttribute"}, "the interfaces' security groups"},
	{"ec2.DeleteNetworkInterface", []string{"ec2:DeleteNetworkInterface"}, "destroy"},
	{"ec2.DescribeSecurityGroups", []string{"ec2:DescribeSecurityGroups"}, "the cluster's security group"},
	{"ec2.CreateSecurityGroup", []string{"ec2:CreateSecurityGroup"}, "the cluster's security group (without aws.security_group_ids)"},
	{"ec2.AuthorizeSecurityGroupIngress", []string{"ec2:AuthorizeSecurityGroupIngress"}, "its rules: PostgreSQL, Patroni and etcd between the nodes, clients from allowed_cidrs"},
	{"ec2.DeleteSecurityGroup", []string{"ec2:DeleteSecurityGroup"}, "destroy"},
	{"ec2.DescribeAddresses", []string{"ec2:DescribeAddresses"}, "the nodes' Elastic IPs (aws.public)"},
	{"ec2.AllocateAddress", []string{"ec2:AllocateAddress"}, "an Elastic IP per node (aws.public)"},
	{"ec2.AssociateAddress", []string{"ec2:AssociateAddress"}, "an Elastic IP to its node's interface"},
	{"ec2.DisassociateAddress", []string{"ec2:DisassociateAddress"}, "destroy"},
	{"ec2.ReleaseAddress", []string{"ec2:ReleaseAddress"}, "destroy"},
	{"ec2.DescribeInstances", []string{"ec2:DescribeInstances"}, "the nodes' instances, on every refresh"},
	{"ec2.RunInstances", []string{"ec2:RunInstances"}, "a node's instance: create, replacement of a lost or outdated node, restore"},
	{"ec2.TerminateInstances", []string{"ec2:TerminateInstances"}, "replacement, a stopped node's instance, destroy"},
	// The nodes' instance role (without aws.iam_instance_profile).
	{"iam.GetRole", []string{"iam:GetRole"}, "the nodes' role"},
	{"iam.CreateRole", []string{"iam:CreateRole"}, "the nodes' role"},
	{"iam.UpdateAssumeRolePolicy", []string{"iam:UpdateAssumeRolePolicy"}, "its trust policy (ec2.amazonaws.com) when it drifted"},
	{"iam.ListRoleTags", []string{"iam:ListRoleTags"}, "its tags"},
	{"iam.TagRole", []string{"iam:TagRole"}, "its tags (also checked when the role is created with tags)"},
	{"iam.UntagRole", []string{"iam:UntagRole"}, "its tags"},
	{"iam.PutRolePolicy", []string{"iam:PutRolePolicy"}, "its inline policy: the cluster's SSM path, the archive's prefix, aws.node_policy_json"},
	{"iam.ListRolePolicies", []string{"iam:ListRolePolicies"}, "destroy: its inline policies"},
	{"iam.DeleteRolePolicy", []string{"iam:DeleteRolePolicy"}, "destroy"},
	{"iam.ListAttachedRolePolicies", []string{"iam:ListAttachedRolePolicies"}, "destroy: its attached policies"},
	{"iam.DetachRolePolicy", []string{"iam:DetachRolePolicy"}, "destroy"},
	{"iam.DeleteRole", []string{"iam:DeleteRole"}, "destroy"},
	{"iam.GetInstanceProfile", []string{"iam:GetInstanceProfile"}, "the nodes' instance profile"},
	{"iam.CreateInstanceProfile", []string{"iam:CreateInstanceProfile"}, "the nodes' instance profile"},
	{"iam.AddRoleToInstanceProfile", []string{"iam:AddRoleToInstanceProfile"}, "the role in the profile"},
	{"iam.RemoveRoleFromInstanceProfile", []string{"iam:RemoveRoleFromInstanceProfile"}, "destroy"},
	{"iam.DeleteInstanceProfile", []string{"iam:DeleteInstanceProfile"}, "destroy"},
	// The cluster's SSM parameters (passwords as SecureString, the takeover instruction).
	{"ssm.GetParameters", []string{"ssm:GetParameters"}, "whether a cluster runs with TLS (its certificate authority or the nodes' certificates exist), in one call per plan"},
	{"ssm.PutParameter", []string{"ssm:PutParameter"}, "the passwords, the cluster's certificate authority and the nodes' certificates (SecureString, the account's aws/ssm key) and the takeover instruction"},
	{"ssm.DeleteParameters", []string{"ssm:DeleteParameters"}, "the takeover instruction once done; destroy"},
	// The load balancer (aws.load_balancer).
	{"elbv2.DescribeLoadBalancers", []string{"elasticloadbalancing:DescribeLoadBalancers"}, "the cluster's network load balancer"},
	{"elbv2.CreateLoadBalancer", []string{"elasticloadbalancing:CreateLoadBalancer"}, "the cluster's network load balancer"},
	{"elbv2.SetSubnets", []string{"elasticloadbalancing:SetSubnets"}, "its subnets when the nodes' zones change"},
	{"elbv2.DeleteLoadBalancer", []string{"elasticloadbalancing:DeleteLoadBalancer"}, "destroy"},
	{"elbv2.DescribeTargetGroups", []string{"elasticloadbalancing:DescribeTargetGroups"}, "the primary's and the replicas' target groups"},
	{"elbv2.CreateTargetGroup", []string{"elasticloadbalancing:CreateTargetGroup"}, "the target groups, health-checked on Patroni's /primary and /replica"},
	{"elbv2.DeleteTargetGroup", []string{"elasticloadbalancing:DeleteTargetGroup"}, "destroy"},
	{"elbv2.DescribeTargetHealth", []string{"elasticloadbalancing:DescribeTargetHealth"}, "the targets"},
	{"elbv2.RegisterTargets", []string{"elasticloadbalancing:RegisterTargets"}, "each node's address"},
	{"elbv2.DeregisterTargets", []string{"elasticloadbalancing:DeregisterTargets"}, "a replaced node's address"},
	{"elbv2.DescribeListeners", []string{"elasticloadbalancing:DescribeListeners"}, "the listeners"},
	{"elbv2.CreateListener", []string{"elasticloadbalancing:CreateListener"}, "the listeners"},
	{"elbv2.ModifyListener", []string{"elasticloadbalancing:ModifyListener"}, "a listener's target group"},
	{"elbv2.DeleteListener", []string{"elasticloadbalancing:DeleteListener"}, "destroy"},
	{"elbv2.DescribeTags", []string{"elasticloadbalancing:DescribeTags"}, "which load balancer and target groups are the cluster's"},
	// The archive (pgnvme_archive_bucket, and the cluster's reading of its archive and a restore's source).
	{"s3.HeadBucket", []string{"s3:ListBucket"}, "whether the bucket exists"},
	{"s3.GetBucketLocation", []string{"s3:GetBucketLocation"}, "the bucket's region"},
	{"s3.ListObjectsV2", []string{"s3:ListBucket"}, "the archive's WAL and backups; whether a prefix holds history"},
	{"s3.GetObject", []string{"s3:GetObject"}, "backup.info, WAL-G's sentinels, pgnvme's records (verification, restore) in the archive"},
	{"s3.HeadObject", []string{"s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectRetention", "s3:GetObjectLegalHold"}, "destroy with force_destroy: what keeps a version"},
	{"s3.CreateBucket", []string{"s3:CreateBucket"}, "the archive bucket"},
	{"s3.DeleteBucket", []string{"s3:DeleteBucket"}, "destroy"},
	{"s3.ListObjectVersions", []string{"s3:ListBucketVersions"}, "destroy with force_destroy"},
	{"s3.DeleteObjects", []string{"s3:DeleteObject", "s3:DeleteObjectVersion"}, "destroy with force_destroy"},
	{"s3.GetBucketVersioning", []string{"s3:GetBucketVersioning"}, "drift"},
	{"s3.PutBucketVersioning", []string{"s3:PutBucketVersioning"}, "versioning on"},
	{"s3.GetBucketEncryption", []string{"s3:GetEncryptionConfiguration"}, "drift"},
	{"s3.PutBucketEncryption", []string{"s3:PutEncryptionConfiguration"}, "SSE-KMS with a bucket key, or AES256"},
	{"s3.DeleteBucketEncryption", []string{"s3:PutEncryptionConfiguration"}, "drift repair"},
	{"s3.GetPublicAccessBlock", []string{"s3:GetBucketPublicAccessBlock"}, "drift"},
	{"s3.PutPublicAccessBlock", []string{"s3:PutBucketPublicAccessBlock"}, "every public access block"},
	{"s3.GetBucketOwnershipControls", []string{"s3:GetBucketOwnershipControls"}, "drift"},
	{"s3.PutBucketOwnershipControls", []string{"s3:PutBucketOwnershipControls"}, "BucketOwnerEnforced"},
	{"s3.DeleteBucketOwnershipControls", []string{"s3:PutBucketOwnershipControls"}, "drift repair"},
	{"s3.GetBucketPolicy", []string{"s3:GetBucketPolicy"}, "drift"},
	{"s3.PutBucketPolicy", []string{"s3:PutBucketPolicy"}, "the TLS-only policy"},
	{"s3.DeleteBucketPolicy", []string{"s3:DeleteBucketPolicy"}, "drift repair"},
	{"s3.GetBucketLifecycleConfiguration", []string{"s3:GetLifecycleConfiguration"}, "drift; rules that would expire the archive"},
	{"s3.PutBucketLifecycleConfiguration", []string{"s3:PutLifecycleConfiguration"}, "noncurrent versions expire, current ones never"},
	{"s3.DeleteBucketLifecycle", []string{"s3:PutLifecycleConfiguration"}, "drift repair"},
	{"s3.GetObjectLockConfiguration", []string{"s3:GetBucketObjectLockConfiguration"}, "Object Lock's default retention"},
	{"s3.PutObjectLockConfiguration", []string{"s3:PutBucketObjectLockConfiguration"}, "Object Lock's default retention (object_lock)"},
	{"s3.GetBucketTagging", []string{"s3:GetBucketTagging"}, "drift"},
	{"s3.PutBucketTagging", []string{"s3:PutBucketTagging"}, "tags"},
	{"s3.DeleteBucketTagging", []string{"s3:PutBucketTagging"}, "drift repair"},
	{"s3.GetBucketReplication", []string{"s3:GetReplicationConfiguration"}, "the replica in another region (replica)"},
	{"s3.PutBucketReplication", []string{"s3:PutReplicationConfiguration"}, "the replica in another region (replica)"},
	{"s3.DeleteBucketReplication", []string{"s3:PutReplicationConfiguration"}, "removing the replica"},
	// ACM Private CA (tls.acm_pca_arn only; the actions may be limited to that authority's ARN).
	{"acmpca.DescribeCertificateAuthority", []string{"acm-pca:DescribeCertificateAuthority"}, "the authority's status, usage mode and signing algorithm"},
	{"acmpca.GetCertificateAuthorityCertificate", []string{"acm-pca:GetCertificateAuthorityCertificate"}, "its certificate and chain, which the nodes and clients trust"},
	{"acmpca.IssueCertificate", []string{"acm-pca:IssueCertificate"}, "each node's certificates, from a request the provider makes with the node's key"},
	{"acmpca.GetCertificate", []string{"acm-pca:GetCertificate"}, "the certificate once issued"},
	// Identity.
	{"sts.GetCallerIdentity", []string{"sts:GetCallerIdentity"}, "the account, for ARNs (always allowed by AWS)"},
}

// OperatorImplied are the actions AWS checks beside the operator's calls.
var OperatorImplied = []Implied{
	{"ec2:CreateTags", "RunInstances, CreateNetworkInterface, CreateSecurityGroup and AllocateAddress tag what they create"},
	{"iam:PassRole", "RunInstances with the nodes' instance profile; PutBucketReplication with the replication role"},
	{"ssm:AddTagsToResource", "PutParameter creates the parameters with the cluster's tags"},
	{"elasticloadbalancing:AddTags", "CreateLoadBalancer and CreateTargetGroup tag what they create"},
	{"iam:TagInstanceProfile", "CreateInstanceProfile creates the profile with the cluster's tags"},
	{"iam:CreateServiceLinkedRole", "the first load balancer of an account creates Elastic Load Balancing's service-linked role"},
	{"s3:BypassGovernanceRetention", "destroy with force_destroy and bypass_governance_retention, of a bucket with GOVERNANCE Object Lock"},
}

// OperatorActions are every IAM action of OperatorCalls and OperatorImplied, sorted, each once.
func OperatorActions() []string {
	set := map[string]bool{}
	for _, c := range OperatorCalls {
		for _, a := range c.Actions {
			set[a] = true
		}
	}
	for _, i := range OperatorImplied {
		set[i.Action] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// OperatorPolicy is the operator's IAM policy document: OperatorActions, one statement per service.
func OperatorPolicy() string {
	type statement struct {
		Sid      string   `json:"Sid"`
		Effect   string   `json:"Effect"`
		Action   []string `json:"Action"`
		Resource string   `json:"Resource"`
	}
	by := map[string][]string{}
	for _, a := range OperatorActions() {
		svc, _, _ := strings.Cut(a, ":")
		by[svc] = append(by[svc], a)
	}
	sids := map[string]string{"ec2": "PgnvmeEC2", "elasticloadbalancing": "PgnvmeLoadBalancer", "iam": "PgnvmeNodeRole",
		"s3": "PgnvmeArchive", "ssm": "PgnvmeParameters", "sts": "PgnvmeIdentity", "acm-pca": "PgnvmePrivateCA"}
	doc := struct {
		Version   string      `json:"Version"`
		Statement []statement `json:"Statement"`
	}{Version: "2012-10-17"}
	for _, svc := range slices.Sorted(maps.Keys(by)) {
		sid := sids[svc]
		if sid == "" {
			sid = "Pgnvme" + svc
		}
		doc.Statement = append(doc.Statement, statement{Sid: sid, Effect: "Allow", Action: by[svc], Resource: "*"})
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // a fixed structure of strings always marshals
	}
	return string(b) + "\n"
}

// notAuthorized is how AWS (and moto) name the action a caller lacks: "... is not authorized to perform:
// ec2:RunInstances on resource ..." (some services quote it, or end the sentence after it).
var notAuthorized = regexp.MustCompile(`not authorized to perform:? ([a-z0-9-]+:[A-Za-z0-9]+)`)

// MissingPermission is the IAM action an AWS error says the caller lacks, if it says one.
func MissingPermission(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	m := notAuthorized.FindStringSubmatch(err.Error())
	if m == nil {
		return "", false
	}
	return m[1], true
}

// PermissionHint is what to do about an error that says the caller lacks an IAM action ("" for any other
// error): the action, and where the operator's policy is.
func PermissionHint(err error) string {
	action, ok := MissingPermission(err)
	if !ok {
		return ""
	}
	return "The provider's AWS credentials lack the IAM permission " + action + ". Grant it: the operator's policy, with " +
		"every action the provider needs, is in the AWS permissions guide (docs/guides/aws-permissions.md)."
}

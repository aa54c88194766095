package awsspec

import (
	"encoding/json"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// image checks the AMI settings.
func (v *awsCheck) image() {
	a := v.a
	if a.AMIID != "" && !amiIDPattern.MatchString(a.AMIID) {
		v.add(awsAt("ami_id"), "Invalid AMI ID", "aws.ami_id %q is not an AMI ID; give one such as ami-0123456789abcdef0 (ami- and 8 to 17 hex digits), or leave it unset for Debian 12's latest AMI.", a.AMIID)
	}
	if a.AMIParameter == "" {
		return
	}
	at := awsAt("ami_ssm_parameter")
	if a.AMIID != "" {
		v.add(at, "Conflicting AMI Settings", "aws.ami_id and aws.ami_ssm_parameter are both set; set ami_id to run that image, or ami_ssm_parameter to run the AMI an SSM parameter names, not both "+
			"(with neither, the nodes run Debian 12's latest AMI for the instance type's architecture).")
	}
	if !ssmParameterPattern.MatchString(a.AMIParameter) || len(a.AMIParameter) > maxSSMNameBytes {
		v.add(at, "Invalid AMI Parameter", "aws.ami_ssm_parameter %q is not an SSM parameter name; give a path of at most %d bytes starting with / and made of letters, digits, _ . - and /, such as %s.",
			a.AMIParameter, maxSSMNameBytes, DefaultAMIParameterAMD64)
	}
}

// network checks the security groups, the allowed networks and the API address.
func (v *awsCheck) network() {
	a := v.a
	at := awsAt("security_group_ids")
	if len(a.SecurityGroupIDs) > MaxAWSSecurityGroups {
		v.add(at, "Too Many Security Groups", "aws.security_group_ids lists %d security groups; a network interface takes at most %d: merge their rules, or leave the list empty for a group the platform creates.",
			len(a.SecurityGroupIDs), MaxAWSSecurityGroups)
	}
	seen := map[string]bool{}
	for _, id := range a.SecurityGroupIDs {
		switch {
		case !securityGroupIDPattern.MatchString(id):
			v.add(at, "Invalid Security Group ID", "aws.security_group_ids has %q, which is not a security group ID; give IDs such as sg-0123456789abcdef0 (sg- and 8 to 17 hex digits).", id)
		case seen[id]:
			v.add(at, "Duplicate Security Group", "aws.security_group_ids lists %s twice; list each security group once.", id)
		}
		seen[id] = true
	}

	at = awsAt("allowed_cidrs")
	seen = map[string]bool{}
	for _, c := range a.AllowedCIDRs {
		p, err := netip.ParsePrefix(c)
		switch {
		case err != nil:
			v.add(at, "Invalid CIDR", "aws.allowed_cidrs has %q, which is not a CIDR; write a network with its prefix length, such as 10.0.0.0/16.", c)
		case !p.Addr().Is4():
			v.add(at, "IPv4 CIDR Required", "aws.allowed_cidrs has %s, an IPv6 network; the nodes serve clients over IPv4: list IPv4 networks, such as the VPC's 10.0.0.0/16.", c)
		case p != p.Masked():
			v.add(at, "CIDR With Host Bits", "aws.allowed_cidrs has %s, whose address has bits set beyond its /%d prefix; write the network, %s.", c, p.Bits(), p.Masked())
		case p.Bits() >= 8 && p.Addr().IsLoopback():
			v.add(at, "Loopback CIDR", "aws.allowed_cidrs has %s, a loopback network: no client reaches a node over it, and pg_hba trusts loopback without a password (the local platform's setting); "+
				"list the networks clients connect from, such as the VPC's.", c)
		case p.Bits() == 0:
			v.add(at, "Network Open To All", "aws.allowed_cidrs has %s, which would let every network reach PostgreSQL and Patroni's REST API; "+
				"list the networks clients connect from, such as the VPC's CIDR (leave allowed_cidrs unset for it) or a client's address/32.", c)
		case seen[p.String()]:
			v.add(at, "Duplicate CIDR", "aws.allowed_cidrs lists %s twice; list each network once.", c)
		default:
			seen[p.String()] = true
		}
	}

	if a.APIAddress != APIAddressPrivate && a.APIAddress != APIAddressPublic {
		v.add(awsAt("api_address"), "Invalid API Address", "aws.api_address is %q; use %q (the provider reaches Patroni's REST API at the nodes' private addresses, the default) or %q (at their public addresses).",
			a.APIAddress, APIAddressPrivate, APIAddressPublic)
	}
}

// iam checks the instance profile and the node policy.
func (v *awsCheck) iam() {
	a := v.a
	if a.IAMInstanceProfile != "" && !iamNamePattern.MatchString(a.IAMInstanceProfile) {
		v.add(awsAt("iam_instance_profile"), "Invalid Instance Profile", "aws.iam_instance_profile %q is not an instance profile name; give the name (not the ARN) of 1 to 128 letters, digits and + = , . @ _ -.", a.IAMInstanceProfile)
	}
	if a.IAMInstanceProfile == "" && len(v.s.Name) > MaxCreatedRoleClusterName {
		v.add([]string{"name"}, "Cluster Name Too Long For Its Role", "Without aws.iam_instance_profile the platform creates the IAM role and instance profile pgnvme-%s, "+
			"and IAM names have at most 64 characters; use a cluster name of at most %d characters, or give aws.iam_instance_profile.", v.s.Name, MaxCreatedRoleClusterName)
	}
	if a.NodePolicyJSON == "" {
		return
	}
	at := awsAt("node_policy_json")
	if a.IAMInstanceProfile != "" {
		v.add(at, "Node Policy With Own Profile", "aws.node_policy_json is set together with aws.iam_instance_profile, but the policy is attached only to the role the platform creates when no profile is given; "+
			"grant its permissions to your profile's role and remove node_policy_json, or remove iam_instance_profile.")
		return
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(a.NodePolicyJSON), &doc); err != nil {
		v.add(at, "Invalid Node Policy", "aws.node_policy_json is not a JSON object (%s); give an IAM policy document, such as pgnvme_archive_bucket.x.node_policy_json or a data.aws_iam_policy_document's json.", err)
		return
	}
	st := strings.TrimSpace(string(doc["Statement"]))
	if st == "" || (st[0] != '[' && st[0] != '{') {
		v.add(at, "Invalid Node Policy", "aws.node_policy_json has no \"Statement\" (a list of statements, or one); give an IAM policy document, such as pgnvme_archive_bucket.x.node_policy_json.")
	}
}

func printableASCIIOnly(s string) bool {
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// patroni checks Patroni's timings (bootstrap's rule, with pgnvme's defaults for zero values).
func (v *awsCheck) patroni() {
	p := v.a.Patroni
	for _, err := range bootstrap.PatroniTimingProblems(bootstrap.Patroni{TTL: p.TTL, LoopWait: p.LoopWait, RetryTimeout: p.RetryTimeout, MaximumLagOnFailover: p.MaximumLagOnFailover}, "aws.patroni.") {
		v.add(awsAt("patroni"), "Invalid Patroni Timings", "%s", err.Error())
	}
}

// tags checks aws.tags against EC2's limits and the prefixes AWS and the platform reserve.
func (v *awsCheck) tags() {
	at := awsAt("tags")
	if len(v.a.Tags) > MaxAWSTags {
		v.add(at, "Too Many Tags", "aws.tags has %d tags; give at most %d: EC2 allows 50 per object, and the platform and the provider's default tags need the rest.", len(v.a.Tags), MaxAWSTags)
	}
	for _, k := range slices.Sorted(maps.Keys(v.a.Tags)) {
		val := v.a.Tags[k]
		lk := strings.ToLower(k)
		switch {
		case k == "" || utf8.RuneCountInString(k) > maxTagKeyChars:
			v.add(at, "Invalid Tag", "aws.tags has the key %q; a tag key has 1 to %d characters.", k, maxTagKeyChars)
		case strings.HasPrefix(lk, "aws:"):
			v.add(at, "Reserved Tag", "aws.tags has the key %q, but the aws: prefix is reserved for AWS's own tags; choose another key.", k)
		case strings.HasPrefix(lk, "pgnvme:"):
			v.add(at, "Reserved Tag", "aws.tags has the key %q, but the pgnvme: prefix is reserved for the tags the platform sets itself (%s, %s, %s); choose another key.", k, TagCluster, TagNode, TagConfig)
		case utf8.RuneCountInString(val) > maxTagValueChars:
			v.add(at, "Invalid Tag", "aws.tags[%q] has %d characters; a tag value has at most %d.", k, utf8.RuneCountInString(val), maxTagValueChars)
		}
	}
}

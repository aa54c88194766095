package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// Limits of the aws block.
const (
	// MaxAWSSecurityGroups is the most security groups aws.security_group_ids may list (EC2's default
	// quota per network interface).
	MaxAWSSecurityGroups = 5
	// MaxAWSTags is the most tags aws.tags may hold: EC2 allows 50 per object, and the platform adds its own
	// (pgnvme:cluster, pgnvme:node, pgnvme:config, Name) besides the provider's default tags.
	MaxAWSTags = 40
	// maxTagKeyChars and maxTagValueChars are EC2's limits, in Unicode characters.
	maxTagKeyChars   = 128
	maxTagValueChars = 256
	// maxSSMNameBytes is the longest SSM parameter name.
	maxSSMNameBytes = 1011
	// maxKeyNameBytes is the longest EC2 key pair name.
	maxKeyNameBytes = 255
)

var (
	instanceTypePattern = regexp.MustCompile(`^[a-z][a-z0-9-]*\.[a-z0-9-]+$`)
	awsRegionPattern    = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	// awsZonePattern is an availability zone (us-east-1a) or Local Zone (us-west-2-lax-1a) name; the first
	// group is its region.
	awsZonePattern         = regexp.MustCompile(`^([a-z]{2}(?:-[a-z]+)+-[0-9]+)(?:-[a-z0-9]+)*[a-z]$`)
	subnetIDPattern        = regexp.MustCompile(`^subnet-[0-9a-f]{8,17}$`)
	amiIDPattern           = regexp.MustCompile(`^ami-[0-9a-f]{8,17}$`)
	securityGroupIDPattern = regexp.MustCompile(`^sg-[0-9a-f]{8,17}$`)
	ssmParameterPattern    = regexp.MustCompile(`^(/[A-Za-z0-9_.-]+)+$`)
	iamNamePattern         = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)
)

// exampleSubnetID is the subnet ID messages show.
const exampleSubnetID = "subnet-0123456789abcdef0"

// awsCheck is one run of validateAWS: the problems so far, and what later checks need to know of earlier
// ones (the render at the end must not report a rule a check above has reported with its path).
type awsCheck struct {
	s   Spec
	a   *AWS
	out []*FieldError
	// reported are the details reported so far, to drop the render's copies of bootstrap's own sentences.
	reported map[string]bool

	snap *catalog.Snapshot
	// typ is the instance type's catalog entry when the type is usable.
	typ *catalog.InstanceType
	// region is the cluster's region when it is known (aws.region, or the zones' one region when unset),
	// else "".
	region string
	// zoneOK are the nodes whose zone is a valid zone name.
	zoneOK map[string]bool
	// cidrs are the allowed CIDRs that passed.
	cidrs []string
	// patroniOK, synchronousOK and archiveOK are false when that check reported a problem.
	patroniOK, synchronousOK, archiveOK bool
}

// validateAWS checks the aws block and what a cluster needs on EC2. Each problem is at the attribute it is
// about; what bootstrap.RenderEC2 still refuses after the checks here is reported under ["aws"], once.
//
// Decisions: a subnet_ids entry for a zone no node uses is allowed (a VPC's subnets by zone are the natural
// input, and nodes may move into that zone later); 0.0.0.0/0 in allowed_cidrs is refused (it would open
// PostgreSQL and Patroni's REST API to every network); synchronous method "first" is refused whatever the
// number (the platform's Patroni runs quorum mode, ANY, only). Instance type offerings are checked per
// region and by the number of zones offering the type, not per zone name: zone names map to physical zones
// differently in each account, so only the account can say whether its us-east-1e offers a type.
func validateAWS(s Spec, a *AWS) []*FieldError {
	v := &awsCheck{s: s, a: a, reported: map[string]bool{}, zoneOK: map[string]bool{}, patroniOK: true, synchronousOK: true, archiveOK: true}
	v.instanceType()
	v.placement()
	v.image()
	v.network()
	v.iam()
	v.instance()
	v.patroni()
	v.tags()
	v.cluster()
	v.render()
	return v.out
}

func (v *awsCheck) add(path []string, summary, format string, args ...any) {
	e := Errorf(path, summary, format, args...)
	v.out = append(v.out, e)
	v.reported[e.Detail] = true
}

func awsAt(attr string) []string { return []string{"aws", attr} }

// instanceType checks aws.instance_type against the catalog.
func (v *awsCheck) instanceType() {
	at := awsAt("instance_type")
	snap, err := catalog.Embedded()
	if err != nil {
		v.add(at, "Instance Type Catalog Unreadable", "%s.", capitalize(err.Error()))
		return
	}
	v.snap = snap
	name := v.a.InstanceType
	switch {
	case name == "":
		v.add(at, "Missing Instance Type", "aws.instance_type is empty; choose an instance type with instance-store NVMe, such as m6id.large or i4i.large (the pgnvme_instance_types data source lists them).")
		return
	case !instanceTypePattern.MatchString(name):
		v.add(at, "Invalid Instance Type", "aws.instance_type %q is not an EC2 instance type name (family.size, such as m6id.large); choose one from the pgnvme_instance_types data source.", name)
		return
	}
	i, found := slices.BinarySearchFunc(snap.Types, name, func(t catalog.InstanceType, n string) int { return strings.Compare(t.Name, n) })
	if !found {
		v.add(at, "No Instance-Store NVMe", "Instance type %s has no instance-store NVMe: it is not among the %d types with SSD instance storage in the provider's catalog (read %s). "+
			"pgnvme keeps PostgreSQL's data on local NVMe only; choose a type from the pgnvme_instance_types data source, such as m6id.large or i4i.large.", name, len(snap.Types), snap.Date)
		return
	}
	t := snap.Types[i]
	arch := awsArchitecture(t)
	switch {
	case t.NVMeSupport == "unsupported":
		v.add(at, "Instance Storage Is Not NVMe", "Instance type %s has instance storage, but not NVMe (an older generation whose disks attach as plain block devices); "+
			"pgnvme finds and prepares instance-store NVMe disks only: choose a current type from the pgnvme_instance_types data source, such as m6id.large or i4i.large.", name)
	case t.SpecialPurpose():
		v.add(at, "Special-Purpose Instance Type", "Instance type %s is a special-purpose type (%s): you would pay for hardware PostgreSQL does not use, or need a dedicated host running macOS; "+
			"choose a general-purpose, memory- or storage-optimized type with instance-store NVMe from the pgnvme_instance_types data source, such as m6id.large or i4i.large.", name, specialPurposeKind(t))
	case arch == "":
		v.add(at, "Unsupported Architecture", "Instance type %s runs on %s; pgnvme's nodes run Debian on %s or %s only: choose another type from the pgnvme_instance_types data source.",
			name, strings.Join(t.Architectures, ", "), bootstrap.ArchX86_64, bootstrap.ArchARM64)
	default:
		v.typ = &t
	}
}

// awsArchitecture is the architecture the nodes of type t run, "" when pgnvme has no image for any of its
// architectures.
func awsArchitecture(t catalog.InstanceType) string {
	for _, a := range []string{bootstrap.ArchX86_64, bootstrap.ArchARM64} {
		if slices.Contains(t.Architectures, a) {
			return a
		}
	}
	return ""
}

func specialPurposeKind(t catalog.InstanceType) string {
	if len(t.Accelerators) > 0 {
		return "it carries " + strings.Join(t.Accelerators, ", ") + " accelerators"
	}
	return "a Mac"
}

// placement checks the region, each node's zone, the subnets, and that the region offers the type.
func (v *awsCheck) placement() {
	nodeAt := []string{"node"}
	a := v.a
	zoneOf := map[string]string{} // zone -> the first node in it
	regionOf := map[string]string{}
	var zones []string // the nodes' valid zones, in node order, each once
	for _, n := range v.s.Nodes {
		m := awsZonePattern.FindStringSubmatch(n.Zone)
		switch {
		case n.Zone == "":
			v.add(nodeAt, "Missing Availability Zone", "Node %s has no zone; on aws every node needs zone = the availability zone it runs in, such as %s, each node in a zone of its own.", n.Name, exampleZone(a.Region))
			continue
		case m == nil:
			v.add(nodeAt, "Invalid Availability Zone", "Node %s has zone %q, which is not an availability zone name; use one such as %s (the region followed by the zone's letter).", n.Name, n.Zone, exampleZone(a.Region))
			continue
		}
		v.zoneOK[n.Name] = true
		regionOf[n.Zone] = m[1]
		if prev, dup := zoneOf[n.Zone]; dup {
			v.add(nodeAt, "Nodes Share A Zone", "Nodes %s and %s are both in zone %s; losing that zone would take both members at once (and with them the synchronous standby or etcd's majority). "+
				"Put every node in a zone of its own; a region's zones bound the cluster's size.", prev, n.Name, n.Zone)
			continue
		}
		zoneOf[n.Zone] = n.Name
		zones = append(zones, n.Zone)
	}

	// The region: aws.region when set, else the one region of the nodes' zones.
	switch {
	case a.Region != "" && !awsRegionPattern.MatchString(a.Region):
		v.add(awsAt("region"), "Invalid Region", "aws.region %q is not an AWS region name; use one such as eu-west-1, or leave it unset for the provider's region.", a.Region)
	case a.Region != "":
		v.region = a.Region
		for _, n := range v.s.Nodes {
			if r := regionOf[n.Zone]; v.zoneOK[n.Name] && r != a.Region {
				v.add(nodeAt, "Zone Outside Region", "Node %s is in zone %s, which is in region %s, not in the cluster's region %s (aws.region); put it in a zone of %s, such as %sa.", n.Name, n.Zone, r, a.Region, a.Region, a.Region)
			}
		}
	}
	if a.Region == "" || v.region == "" {
		var regions []string
		for _, z := range zones {
			if !slices.Contains(regions, regionOf[z]) {
				regions = append(regions, regionOf[z])
			}
		}
		switch {
		case len(regions) > 1:
			v.add(nodeAt, "Zones In Several Regions", "The nodes' zones are in %d regions (%s); a cluster runs in one region: put every node in a zone of the same region, and set aws.region when it is not the provider's.",
				len(regions), strings.Join(regions, ", "))
		case len(regions) == 1 && a.Region == "":
			v.region = regions[0]
		}
	}

	v.subnets(zones)

	// What the provider's catalog knows of the region: its zone names and where the type is offered.
	if v.snap == nil || v.region == "" {
		return
	}
	r, ok := v.snap.Region(v.region)
	if !ok {
		return
	}
	var inRegion []string
	for _, n := range v.s.Nodes {
		if !v.zoneOK[n.Name] || regionOf[n.Zone] != v.region || len(n.Zone) != len(v.region)+1 {
			continue // the catalog knows the region's availability zones, not its Local Zones
		}
		if _, ok := r.ZoneByName(n.Zone); !ok {
			v.add(nodeAt, "Unknown Availability Zone", "Node %s is in zone %s, which is not one of region %s's zones (%s, in the provider's catalog read %s); choose one of them.",
				n.Name, n.Zone, r.Name, strings.Join(zoneNames(r), ", "), v.snap.Date)
			continue
		}
		if !slices.Contains(inRegion, n.Zone) {
			inRegion = append(inRegion, n.Zone)
		}
	}
	if v.typ == nil {
		return
	}
	offered := r.Offerings[v.typ.Name]
	switch {
	case len(offered) == 0:
		v.add(awsAt("instance_type"), "Instance Type Not Offered", "Instance type %s is not offered in region %s (the provider's catalog, read %s); choose a type the pgnvme_instance_types data source lists for %s.",
			v.typ.Name, r.Name, v.snap.Date, r.Name)
	case len(inRegion) > len(offered):
		v.add(awsAt("instance_type"), "Instance Type Offered In Too Few Zones", "Instance type %s is offered in only %d of region %s's zones (zone IDs %s, in the provider's catalog read %s), but the nodes are in %d zones (%s); "+
			"choose a type offered in every zone the cluster uses, or use fewer nodes.", v.typ.Name, len(offered), r.Name, strings.Join(offered, ", "), v.snap.Date, len(inRegion), strings.Join(inRegion, ", "))
	}
}

// subnets checks aws.subnet_ids: well-formed, one zone per subnet, and a subnet for every node's zone.
// An entry for a zone no node is in is allowed: it is not used until a node moves there.
func (v *awsCheck) subnets(zones []string) {
	at := awsAt("subnet_ids")
	zoneOf := map[string]string{} // subnet -> zone
	for _, z := range slices.Sorted(maps.Keys(v.a.SubnetIDs)) {
		id := v.a.SubnetIDs[z]
		if !awsZonePattern.MatchString(z) {
			v.add(at, "Invalid Subnet Zone", "aws.subnet_ids has the key %q, which is not an availability zone name; key each subnet by its zone, such as \"%s\" = %q.", z, exampleZone(v.a.Region), exampleSubnetID)
		}
		switch prev, dup := zoneOf[id]; {
		case !subnetIDPattern.MatchString(id):
			v.add(at, "Invalid Subnet ID", "aws.subnet_ids[%q] is %q, which is not a subnet ID; give one such as %s (subnet- and 8 to 17 hex digits).", z, id, exampleSubnetID)
		case dup:
			v.add(at, "Subnet In Two Zones", "aws.subnet_ids gives %s for both %s and %s, but a subnet lies in one zone; give each zone a subnet of its own in that zone.", id, prev, z)
		default:
			zoneOf[id] = z
		}
	}
	for _, z := range zones {
		if _, ok := v.a.SubnetIDs[z]; !ok {
			var names []string
			for _, n := range v.s.Nodes {
				if n.Zone == z {
					names = append(names, n.Name)
				}
			}
			v.add(at, "Missing Subnet", "Zone %s (node %s) has no subnet in aws.subnet_ids; add \"%s\" = \"subnet-...\", a subnet of the cluster's VPC in that zone.", z, strings.Join(names, ", "), z)
		}
	}
}

func exampleZone(region string) string {
	if awsRegionPattern.MatchString(region) {
		return region + "a"
	}
	return "eu-west-1a"
}

func zoneNames(r catalog.Region) []string {
	var out []string
	for _, z := range r.Zones {
		out = append(out, z.Name)
	}
	slices.Sort(out)
	return out
}

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
			v.cidrs = append(v.cidrs, p.String())
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

// instance checks the key pair and the root volume.
func (v *awsCheck) instance() {
	a := v.a
	if a.KeyName != "" && (len(a.KeyName) > maxKeyNameBytes || !printableASCIIOnly(a.KeyName)) {
		v.add(awsAt("key_name"), "Invalid Key Pair Name", "aws.key_name %q is not an EC2 key pair name; give the name of an existing key pair, 1 to %d printable ASCII characters, or leave it unset for no SSH key.",
			a.KeyName, maxKeyNameBytes)
	}
	if a.RootVolumeGiB < MinRootVolumeGiB || a.RootVolumeGiB > MaxRootVolumeGiB {
		v.add(awsAt("root_volume_gib"), "Invalid Root Volume Size", "aws.root_volume_gib is %d; give %d to %d GiB (the default %d holds the system, etcd's data and the logs; PostgreSQL's data is on the instance store).",
			a.RootVolumeGiB, MinRootVolumeGiB, MaxRootVolumeGiB, DefaultRootVolumeGiB)
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

// patroni checks Patroni's timings as bootstrap.RenderEC2 does (with Patroni's defaults for zero values),
// here with their attribute.
func (v *awsCheck) patroni() {
	at := awsAt("patroni")
	p := v.a.Patroni
	ttl, loop, retry := orInt(p.TTL, bootstrap.DefaultPatroniTTL), orInt(p.LoopWait, bootstrap.DefaultPatroniLoopWait), orInt(p.RetryTimeout, bootstrap.DefaultPatroniRetryTimeout)
	bad := func(format string, args ...any) {
		v.patroniOK = false
		v.add(at, "Invalid Patroni Timings", format, args...)
	}
	switch {
	case ttl < 20:
		bad("aws.patroni.ttl is %d seconds; use 20 or more (Patroni's minimum), or leave it unset for %d.", ttl, bootstrap.DefaultPatroniTTL)
	case loop < 1:
		bad("aws.patroni.loop_wait is %d seconds; use 1 or more, or leave it unset for %d.", loop, bootstrap.DefaultPatroniLoopWait)
	case retry < 3:
		bad("aws.patroni.retry_timeout is %d seconds; use 3 or more, or leave it unset for %d.", retry, bootstrap.DefaultPatroniRetryTimeout)
	case loop+2*retry > ttl:
		bad("Patroni's loop_wait %d + 2 x retry_timeout %d is more than its ttl %d (unset values are Patroni's defaults: ttl %d, loop_wait %d, retry_timeout %d); "+
			"Patroni requires loop_wait + 2 x retry_timeout <= ttl: raise aws.patroni.ttl or lower the others.",
			loop, retry, ttl, bootstrap.DefaultPatroniTTL, bootstrap.DefaultPatroniLoopWait, bootstrap.DefaultPatroniRetryTimeout)
	}
	if p.MaximumLagOnFailover < 0 {
		bad("aws.patroni.maximum_lag_on_failover is %d bytes; use 0 or more (unset is Patroni's default, 1 MiB).", p.MaximumLagOnFailover)
	}
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
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

// cluster checks what the cluster's own settings must be on EC2: an archive without secrets, and
// quorum-mode synchronous replication.
func (v *awsCheck) cluster() {
	if v.s.Synchronous.Method == quorum.MethodFirst {
		v.synchronousOK = false
		v.add([]string{"synchronous", "method"}, "Synchronous Method Not Supported On AWS", "On aws the nodes run Patroni's quorum mode, in which a commit waits for any %d of the standbys (ANY), not the first ones in node order; use synchronous method %q (the default).",
			v.s.Synchronous.Number, quorum.MethodAny)
	}
	a := v.s.Archive
	if a == nil {
		v.archiveOK = false
		v.add([]string{"archive"}, "Missing Archive", "On aws a cluster needs an archive: the instance store dies with its machine, and the archive is what seeds a replacement node and restores the cluster. "+
			"Set archive.walg_env (such as pgnvme_archive_bucket.x.walg_env) or archive.pgbackrest_options.")
		return
	}
	// Secrets (user-data and state must hold none: the instance role provides credentials) are bootstrap's
	// rule; each is reported at the map it is in.
	for _, part := range []struct {
		attr string
		a    *bootstrap.Archive
	}{
		{"walg_env", &bootstrap.Archive{WALGEnv: a.WALGEnv}},
		{"pgbackrest_options", &bootstrap.Archive{PgBackRestOptions: a.PgBackRestOptions}},
	} {
		for _, err := range bootstrap.ArchiveSecretProblems(part.a) {
			v.archiveOK = false
			v.add([]string{"archive", part.attr}, "Secret In Archive Settings", "%s", err.Error())
		}
	}
}

// render renders every node with placeholder addresses (10.0.<i>.10) and reports what bootstrap.RenderEC2
// still refuses (such as a node name etcd cannot use, or user-data over EC2's limit) under ["aws"], each
// sentence once. Settings refused above are replaced by harmless ones first, and nothing is rendered while
// the cluster itself is refused (the render would only repeat it).
func (v *awsCheck) render() {
	s := v.s
	if CheckName(s.Name) != nil {
		return
	}
	for _, n := range s.Nodes {
		if CheckNodeName(n.Name) != nil {
			return
		}
	}
	a := *v.a
	if !v.patroniOK {
		a.Patroni = AWSPatroni{}
	}
	s.AWS = &a
	if !v.synchronousOK {
		s.Synchronous.Method = quorum.MethodAny
	}
	if s.Archive == nil {
		s.Archive = &bootstrap.Archive{WALGEnv: map[string]string{"WALG_S3_PREFIX": "s3://placeholder/" + s.Name}}
	}
	region := v.region
	if region == "" {
		region = "eu-west-1"
	}
	s.Nodes = slices.Clone(s.Nodes)
	addrs := map[string]string{}
	for i, n := range s.Nodes {
		if !v.zoneOK[n.Name] {
			s.Nodes[i].Zone = region + "a"
		}
		addrs[n.Name] = fmt.Sprintf("10.0.%d.10", i+1)
	}
	facts := AWSFacts{Architecture: bootstrap.ArchX86_64, DiskCount: 1}
	if t := v.typ; t != nil {
		facts = AWSFacts{Architecture: awsArchitecture(*t), DiskCount: t.DiskCount}
	}
	c, nodes := AWSBootstrap(s, region, addrs, v.cidrs, facts)
	if len(c.Problems()) > 0 {
		return // reported by Validate with their attributes
	}
	for _, n := range nodes {
		_, err := bootstrap.RenderEC2(c, n)
		for _, e := range splitErrors(err) {
			if d := e.Error(); !v.reported[d] {
				v.add([]string{"aws"}, "Invalid Node Bootstrap", "%s", d)
			}
		}
	}
}

// splitErrors are the errors errors.Join joined in err, or err alone.
func splitErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok { //nolint:errorlint // walking a join, not matching
		return j.Unwrap()
	}
	return []error{err}
}

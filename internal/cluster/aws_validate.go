package cluster

import (
	"fmt"
	"regexp"
	"slices"

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
	// maxKeyNameBytes is the longest EC2 key pair (and placement group) name.
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

package awsspec

import (
	"regexp"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
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
	// ssmNamePattern is a fully qualified SSM parameter name.
	ssmNamePattern = regexp.MustCompile(`^/[a-zA-Z0-9_.\-/]+$`)
)

// awsCheck is one run of Validate: the problems so far, and what later checks need to know of earlier ones.
type awsCheck struct {
	s   cluster.Spec
	a   *Block
	out []*cluster.FieldError

	snap *catalog.Snapshot
	// typ is the instance type's catalog entry when the type is usable.
	typ *catalog.InstanceType
	// region is the cluster's region when it is known (aws.region, or the zones' one region when unset),
	// else "".
	region string
	// zoneOK are the nodes whose zone is a valid zone name.
	zoneOK map[string]bool
}

// Validate checks the aws block and what a cluster needs on EC2, each problem at the attribute it is
// about. These are rules, one each, never a rendering of the user-data: what only a rendering can tell (the
// user-data's size) the EC2 platform's plan reports, and the rules a node's bootstrap shares (node names,
// Patroni's timings, secrets in the archive's settings) are bootstrap's own functions.
//
// Decisions: a subnet_ids entry for a zone no node uses is allowed (a VPC's subnets by zone are the natural
// input, and nodes may move into that zone later); 0.0.0.0/0 in allowed_cidrs is refused (it would open
// PostgreSQL and Patroni's REST API to every network); synchronous method "first" is refused whatever the
// number (the platform's Patroni runs quorum mode, ANY, only). Instance type offerings are checked per
// region and by the number of zones offering the type, not per zone name: zone names map to physical zones
// differently in each account, so only the account can say whether its us-east-1e offers a type.
func (a *Block) Validate(s cluster.Spec) []*cluster.FieldError {
	v := &awsCheck{s: s, a: a, zoneOK: map[string]bool{}}
	v.nodes()
	v.instanceType()
	v.placement()
	v.image()
	v.network()
	v.iam()
	v.launch()
	v.patroni()
	v.tags()
	v.cluster()
	return v.out
}

func (v *awsCheck) add(path []string, summary, format string, args ...any) {
	v.out = append(v.out, cluster.Errorf(path, summary, format, args...))
}

func awsAt(attr string) []string { return []string{"aws", attr} }

// nodes checks what a node's name must be on EC2, beyond the neutral rule (which cluster.Validate reports):
// it names an etcd and a Patroni member.
func (v *awsCheck) nodes() {
	for _, n := range v.s.Nodes {
		if cluster.CheckNodeName(n.Name) != nil {
			continue // the neutral rule says so
		}
		if err := bootstrap.CheckEC2NodeName(n.Name); err != nil {
			v.add([]string{"node"}, "Invalid Node Name", "%s", err.Error())
		}
	}
}

// cluster checks what the cluster's own settings must be on EC2: an archive without secrets, and
// quorum-mode synchronous replication.
func (v *awsCheck) cluster() {
	if v.s.Synchronous.Method == quorum.MethodFirst {
		v.add([]string{"synchronous", "method"}, "Synchronous Method Not Supported On AWS", "On aws the nodes run Patroni's quorum mode, in which a commit waits for any %d of the standbys (ANY), not the first ones in node order; use synchronous method %q (the default).",
			v.s.Synchronous.Number, quorum.MethodAny)
	}
	v.restore()
	v.ownCA()
	a := v.s.Archive
	if a == nil {
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
			v.add([]string{"archive", part.attr}, "Secret In Archive Settings", "%s", err.Error())
		}
	}
}

// restore checks the restore block on EC2: the nodes read the source archive with the archiver they
// install for their own (one of pgBackRest and WAL-G), from S3 with their instance role (no secret in its
// settings).
func (v *awsCheck) restore() {
	r := v.s.Restore
	if r == nil {
		return
	}
	walg := len(r.Archive.WALGEnv) > 0
	if a := v.s.Archive; a != nil && walg != (len(a.WALGEnv) > 0) {
		name := map[bool]string{true: "WAL-G (walg_env)", false: "pgBackRest (pgbackrest_options)"}
		v.add([]string{"restore", "archive"}, "Restore Archiver Differs From The Archive's",
			"The cluster is restored from an archive written by %s but archives with %s: on aws each node installs one archiver, which both "+
				"restores the source and archives the new cluster. Archive with the source's archiver, or restore from an archive of the cluster's.",
			name[walg], name[!walg])
	}
	for _, part := range []struct {
		attr string
		a    *bootstrap.Archive
	}{
		{"walg_env", &bootstrap.Archive{WALGEnv: r.Archive.WALGEnv}},
		{"pgbackrest_options", &bootstrap.Archive{PgBackRestOptions: r.Archive.PgBackRestOptions}},
	} {
		for _, err := range bootstrap.ArchiveSecretProblems(part.a) {
			v.add([]string{"restore", "archive", part.attr}, "Secret In Restore Archive Settings", "%s The nodes read the source archive with their instance role: "+
				"grant it s3:ListBucket and s3:GetObject on the source (aws.node_policy_json, or the instance profile given).", err.Error())
		}
	}
	if loc, ok := v.s.RestoreLocation(); ok && loc.Bucket == "" {
		v.add([]string{"restore", "archive"}, "Restore Archive Not In S3", "On aws the nodes restore from S3, and %s is not a bucket: "+
			"give the source archive's S3 settings (such as pgnvme_archive_bucket.x.pgbackrest_options or walg_env).", loc)
	}
}

// capitalize is s with its first letter in upper case.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ownCA checks where the user's certificate authority's key is: an SSM parameter name, outside the
// cluster's SSM path (the nodes' role reads everything under it, and no node may read the authority's key).
func (v *awsCheck) ownCA() {
	t := v.s.TLS
	if !t.OwnCA() || t.CAKeyParameter == "" {
		return
	}
	at := []string{"tls", "ca_key_ssm_parameter"}
	p, path := t.CAKeyParameter, SSMPath(v.s.Name)
	switch {
	case !ssmNamePattern.MatchString(p) || len(p) > 2048:
		v.add(at, "Invalid SSM Parameter Name", "tls.ca_key_ssm_parameter %q is not an SSM parameter name: give the full name of a SecureString, "+
			"such as /pki/orders-ca/key (letters, digits, and _.-/ only, starting with /).", p)
	case p == path || strings.HasPrefix(p, path+"/"):
		v.add(at, "Key Readable By The Nodes", "tls.ca_key_ssm_parameter %s is under the cluster's SSM path %s, which every node's role reads: "+
			"a node could read the authority's key and issue itself any certificate. Keep the key elsewhere, such as /pki/%s-ca/key.", p, path, v.s.Name)
	}
}

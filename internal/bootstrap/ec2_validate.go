package bootstrap

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// Limits of an EC2 node.
const (
	// MaxInstanceStoreDisks is the most instance-store disks an instance
	// type has (24, the d3en family's).
	MaxInstanceStoreDisks = 24
	// maxWaitSeconds bounds the waits at boot.
	maxWaitSeconds = 3600
	// maxSSMNameBytes is the longest SSM parameter name (with its path).
	maxSSMNameBytes = 1011
)

var (
	// ec2NodeNamePattern is a node name on EC2: it also names an etcd
	// member, a Patroni member (an etcd key) and, through Patroni, a
	// replication slot.
	ec2NodeNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	// safePathPattern is a path rendered into scripts and systemd units
	// without quoting: components of letters, digits, '_', '.' and '-', none
	// starting with '.' or '-'.
	safePathPattern = regexp.MustCompile(`^(/[A-Za-z0-9_][A-Za-z0-9_.-]*)+$`)
	// globPattern is InstanceStoreGlob.
	globPattern = regexp.MustCompile(`^/[A-Za-z0-9_./*?-]+$`)
	// zonePattern and regionPattern are AWS zone and region names.
	zonePattern   = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)+$`)
	regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	// ssmNamePattern is an SSM parameter name in a hierarchy.
	ssmNamePattern = regexp.MustCompile(`^(/[A-Za-z0-9_.-]+)+$`)
	// walgVersionPattern is a WAL-G release tag.
	walgVersionPattern = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)
	// urlPattern is a download URL that needs no quoting.
	urlPattern = regexp.MustCompile(`^https?://[A-Za-z0-9.-]+(:[0-9]+)?/[A-Za-z0-9_./%~+=-]*$`)
	// sha256Pattern is a SHA-256 in hex.
	sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// accessKeyIDPattern is an AWS access key ID.
	accessKeyIDPattern = regexp.MustCompile(`(AKIA|ASIA)[A-Z0-9]{16}`)
	// secretPgBackRestOption are pgBackRest options that hold secrets.
	secretPgBackRestOption = regexp.MustCompile(`^repo[0-9]+-(s3-key|s3-key-secret|s3-token|cipher-pass|azure-key|sftp-private-key-passphrase)$`)
)

// reservedMountPoints are directories the instance store must not be
// mounted on.
var reservedMountPoints = []string{"/boot", "/dev", "/etc", "/home", "/opt", "/proc", "/root", "/run", "/srv", "/sys",
	"/tmp", "/usr", "/var", "/var/lib", "/var/log", "/mnt", "/media", "/var/lib/postgresql", "/var/lib/etcd"}

// platformWALGEnv are WAL-G variables the EC2 platform sets itself.
var platformWALGEnv = []string{"PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGDATA", "WALG_PREFETCH_DIR"}

// secretEnvName reports whether an environment variable's name says it
// holds a secret.
func secretEnvName(k string) bool {
	for _, w := range []string{"SECRET", "PASSWORD", "PASSPHRASE", "TOKEN", "ACCESS_KEY"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return strings.HasSuffix(k, "_KEY") || strings.HasSuffix(k, "_CREDENTIALS")
}

// validateEC2 reports every problem with c and n (with defaults) for an
// EC2 node, each a sentence saying what to change.
func (c Cluster) validateEC2(n EC2Node) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	// The cluster, as the EC2 platform runs it.
	if s := c.Synchronous; s.Number > 0 && s.Method != quorum.MethodAny {
		bad("The EC2 platform runs Patroni's quorum mode, which waits for any %d standbys (ANY), not the first ones in node order; use synchronous method %q.", s.Number, quorum.MethodAny)
	}
	for _, name := range c.Nodes {
		if err := CheckEC2NodeName(name); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Archive == nil {
		bad("A cluster on instance-store NVMe needs an archive: a lost machine takes its disks with it, and the archive is what seeds its replacement and restores the cluster; set archive.walg_env or archive.pgbackrest_options.")
	} else {
		errs = append(errs, validateArchiveSecrets(c.Archive)...)
	}

	// The node and its peers.
	isNode := slices.Contains(c.Nodes, n.Name)
	if !isNode {
		bad("The node %q is not one of the cluster's nodes (%s); render one of them.", n.Name, strings.Join(c.Nodes, ", "))
	}
	if !zonePattern.MatchString(n.Zone) {
		bad("Node %s has availability zone %q; give its zone, such as eu-west-1a.", n.Name, n.Zone)
	}
	if !regionPattern.MatchString(n.Region) {
		bad("Node %s has region %q; give the AWS region its SSM parameters are in, such as eu-west-1.", n.Name, n.Region)
	}
	if e := n.SSMEndpoint; e != "" {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(e, " \t\n") {
			bad("Node %s has SSM endpoint %q; give a URL such as https://ssm.eu-west-1.amazonaws.com, or none.", n.Name, e)
		}
	}
	ips := map[string]string{}
	checkIP := func(who, ip string) {
		a, err := netip.ParseAddr(ip)
		switch {
		case err != nil || !a.Is4():
			bad("%s has private IP %q; give its ENI's private IPv4 address, such as 10.0.1.10.", who, ip)
		case a.IsLoopback() || a.IsUnspecified() || a.IsMulticast() || a.IsLinkLocalUnicast():
			bad("%s has private IP %s, which other machines cannot reach; give its ENI's private IPv4 address.", who, ip)
		default:
			if prev, dup := ips[a.String()]; dup {
				bad("%s and %s have the same private IP %s; give every node its own ENI.", prev, who, ip)
			}
			ips[a.String()] = who
		}
	}
	checkIP("Node "+n.Name, n.PrivateIP)
	want := others(c, n.Name)
	var got []string
	for _, p := range n.Peers {
		got = append(got, p.Name)
		checkIP("Peer "+p.Name, p.IP)
	}
	if isNode && !slices.Equal(got, want) {
		bad("Node %s lists peers [%s]; list every other node of the cluster once, in priority order: [%s].", n.Name, strings.Join(got, ", "), strings.Join(want, ", "))
	}

	// Networks: every node must be able to reach every other.
	var prefixes []netip.Prefix
	if len(n.AllowedCIDRs) == 0 {
		bad("Node %s allows no network; list the CIDRs clients and the other nodes connect from, such as the VPC's.", n.Name)
	}
	for _, s := range n.AllowedCIDRs {
		p, err := netip.ParsePrefix(s)
		switch {
		case err != nil:
			bad("Node %s allows %q, which is not a CIDR; write an address with its prefix length, such as 10.0.0.0/16.", n.Name, s)
		case isLoopback(p.Masked()):
			bad("Node %s allows the loopback network %s, which pg_hba trusts without a password (the local platform's setting); on EC2 list the VPC's networks only.", n.Name, s)
		default:
			prefixes = append(prefixes, p.Masked())
		}
	}
	if len(prefixes) > 0 && len(prefixes) == len(n.AllowedCIDRs) {
		for _, ip := range slices.Sorted(maps.Keys(ips)) {
			a := netip.MustParseAddr(ip)
			if !slices.ContainsFunc(prefixes, func(p netip.Prefix) bool { return p.Contains(a) }) {
				bad("%s (%s) is outside the allowed networks (%s), so it could not replicate; add a CIDR that holds it, such as the VPC's.", ips[ip], ip, strings.Join(n.AllowedCIDRs, ", "))
			}
		}
	}

	// Disks and paths.
	switch {
	case n.DiskCount == 0 && n.InstanceType != "":
		bad("Instance type %s has no instance-store NVMe disk; choose a type with local NVMe (pgnvme_instance_types lists them).", n.InstanceType)
	case n.DiskCount <= 0:
		bad("Node %s has %d instance-store disks; give the instance type's disk count (pgnvme_instance_types' disk_count), 1 or more: pgnvme runs PostgreSQL on local NVMe only.", n.Name, n.DiskCount)
	case n.DiskCount > MaxInstanceStoreDisks:
		bad("Node %s has %d instance-store disks; no instance type has more than %d: give the instance type's disk count.", n.Name, n.DiskCount, MaxInstanceStoreDisks)
	}
	if n.Architecture != ArchX86_64 && n.Architecture != ArchARM64 {
		bad("Node %s has architecture %q; use %q or %q, the instance type's.", n.Name, n.Architecture, ArchX86_64, ArchARM64)
	}
	checkPath := func(what, p string) bool {
		if !safePathPattern.MatchString(p) || path.Clean(p) != p {
			bad("Node %s has %s %q; use an absolute path of letters, digits, '_', '.', '-' and '/', without '.' or '..' components.", n.Name, what, p)
			return false
		}
		return true
	}
	mountOK := checkPath("mount point", n.MountPoint)
	if mountOK && slices.Contains(reservedMountPoints, n.MountPoint) {
		bad("Node %s would mount the instance store on %s, hiding what the system keeps there; use a directory of its own, such as %s.", n.Name, n.MountPoint, DefaultEC2MountPoint)
		mountOK = false
	}
	// The data directory and etcd's are checked against a usable mount point.
	if mountOK && checkPath("data directory", n.DataDir) && path.Dir(n.DataDir) != n.MountPoint {
		bad("Node %s has data directory %s; put it exactly one level below the mount point %s (such as %s), so that an unmounted instance store leaves no data directory to start on.", n.Name, n.DataDir, n.MountPoint, path.Join(n.MountPoint, "data"))
	}
	if checkPath("etcd data directory", n.Etcd.DataDir) && mountOK && (n.Etcd.DataDir == n.MountPoint || strings.HasPrefix(n.Etcd.DataDir, n.MountPoint+"/")) {
		bad("Node %s keeps etcd's data in %s, on the instance store, which a stop/start wipes; keep it on the root volume, such as %s.", n.Name, n.Etcd.DataDir, DefaultEtcdDataDir)
	}
	if !globPattern.MatchString(n.InstanceStoreGlob) {
		bad("Node %s has instance-store pattern %q; use an absolute shell pattern of letters, digits, '_', '.', '-', '/', '*' and '?', such as %s.", n.Name, n.InstanceStoreGlob, DefaultInstanceStoreGlob)
	}
	if n.DiskWaitSeconds < 1 || n.DiskWaitSeconds > maxWaitSeconds {
		bad("Node %s waits %d seconds for its disks; use 1 to %d.", n.Name, n.DiskWaitSeconds, maxWaitSeconds)
	}

	// Ports.
	ports := map[int]string{}
	for _, p := range []struct {
		what string
		port int
	}{{"PostgreSQL", n.Port}, {"etcd's client", n.Etcd.ClientPort}, {"etcd's peer", n.Etcd.PeerPort}, {"Patroni's REST API", n.Patroni.RESTAPIPort}} {
		switch {
		case p.port < 1 || p.port > 65535:
			bad("Node %s has %s port %d; use 1 to 65535.", n.Name, p.what, p.port)
		case ports[p.port] != "":
			bad("Node %s has port %d for both %s and %s; give each its own port.", n.Name, p.port, ports[p.port], p.what)
		default:
			ports[p.port] = p.what
		}
	}

	// etcd.
	switch e := n.Etcd; {
	case e.Members != 1 && e.Members != 3 && e.Members != 5:
		bad("The cluster has %d etcd members; use 1, 3 or 5 (an odd number keeps a majority when one fails).", e.Members)
	case e.Members > len(c.Nodes):
		bad("The cluster has %d etcd members but %d nodes; use at most one member per node.", e.Members, len(c.Nodes))
	}
	if n.Etcd.JoinWaitSeconds < 1 || n.Etcd.JoinWaitSeconds > maxWaitSeconds {
		bad("Node %s waits %d seconds for the other etcd members; use 1 to %d.", n.Name, n.Etcd.JoinWaitSeconds, maxWaitSeconds)
	}

	// Patroni.
	p := n.Patroni
	errs = append(errs, PatroniTimingProblems(p, "Patroni's ")...)
	for _, u := range []struct{ what, name string }{{"REST API user", p.RESTAPIUser}, {"superuser", p.Superuser}, {"replication user", p.ReplicationUser}} {
		if !roleNamePattern.MatchString(u.name) {
			bad("Patroni's %s %q is not valid; use a letter or '_', then letters, digits or '_', at most 63 bytes.", u.what, u.name)
		}
	}
	if p.Superuser == p.ReplicationUser {
		bad("The superuser and the replication user are both %q; give the replication user its own role.", p.Superuser)
	}

	// SSM: names, never values.
	errs = append(errs, validateSSM(n.SSM)...)

	// WAL-G, when it archives (its default URL follows the architecture).
	archOK := n.Architecture == ArchX86_64 || n.Architecture == ArchARM64
	if c.Archive != nil && len(c.Archive.WALGEnv) > 0 && archOK {
		w := n.WALG
		if !walgVersionPattern.MatchString(w.Version) {
			bad("The WAL-G version %q is not a release tag; use one such as %s.", w.Version, DefaultWALGVersion)
		}
		if !urlPattern.MatchString(w.URL) {
			bad("The WAL-G download URL %q is not valid; give an http(s) URL of the wal-g binary itself (not a tarball), without spaces or quotes.", w.URL)
		}
		switch {
		case w.SHA256 == "":
			bad("WAL-G %s from %s has no SHA-256; give the binary's SHA-256 (sha256sum of the file at that URL): pgnvme pins one only for %s from GitHub.", w.Version, w.URL, DefaultWALGVersion)
		case !sha256Pattern.MatchString(w.SHA256):
			bad("The WAL-G SHA-256 %q is not 64 lower-case hex digits; give the binary's SHA-256.", w.SHA256)
		}
	}
	return errors.Join(errs...)
}

// CheckEC2NodeName says what is wrong with name as the name of an EC2 node, nil when it is valid: it also
// names an etcd member, a Patroni member (an etcd key) and, through Patroni, a replication slot.
func CheckEC2NodeName(name string) error {
	if !ec2NodeNamePattern.MatchString(name) {
		return fmt.Errorf("The node name %q cannot name an etcd and Patroni member; on EC2 use 1 to 63 lower-case letters, digits and '-', starting and ending with a letter or digit.", name) //nolint:staticcheck // a sentence for the user
	}
	return nil
}

// PatroniTimingProblems are what is wrong with p's timings (0 is pgnvme's default for each: ttl 30,
// loop_wait 10, retry_timeout 10; maximum_lag_on_failover Patroni's 1 MiB), each a sentence naming each
// setting after prefix (such as "Patroni's " or "aws.patroni."); none when Patroni accepts them.
func PatroniTimingProblems(p Patroni, prefix string) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	or := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	ttl, loop, retry := or(p.TTL, DefaultPatroniTTL), or(p.LoopWait, DefaultPatroniLoopWait), or(p.RetryTimeout, DefaultPatroniRetryTimeout)
	switch {
	case ttl < 20:
		bad("%sttl is %d seconds; use 20 or more (Patroni's minimum), or leave it unset for %d.", prefix, ttl, DefaultPatroniTTL)
	case loop < 1:
		bad("%sloop_wait is %d seconds; use 1 or more, or leave it unset for %d.", prefix, loop, DefaultPatroniLoopWait)
	case retry < 3:
		bad("%sretry_timeout is %d seconds; use 3 or more, or leave it unset for %d.", prefix, retry, DefaultPatroniRetryTimeout)
	case loop+2*retry > ttl:
		bad("%[1]sloop_wait %[2]d + 2 x %[1]sretry_timeout %[3]d is more than %[1]sttl %[4]d (unset values are pgnvme's defaults: ttl %[5]d, loop_wait %[6]d, retry_timeout %[7]d); "+
			"Patroni requires loop_wait + 2 x retry_timeout <= ttl: raise %[1]sttl or lower the others.",
			prefix, loop, retry, ttl, DefaultPatroniTTL, DefaultPatroniLoopWait, DefaultPatroniRetryTimeout)
	}
	if p.MaximumLagOnFailover < 0 {
		bad("%smaximum_lag_on_failover is %d bytes; use 0 or more (unset is Patroni's default, 1 MiB).", prefix, p.MaximumLagOnFailover)
	}
	return errs
}

// validateSSM checks the parameter names.
func validateSSM(s SSMParameters) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	pathOK := ssmNamePattern.MatchString(s.Path)
	if !pathOK {
		bad("The SSM parameter path %q is not valid; use a path such as /pgnvme/demo (letters, digits, '_', '.', '-' and '/').", s.Path)
	}
	if top := strings.ToLower(strings.TrimPrefix(s.Path, "/")); strings.HasPrefix(top, "aws") || strings.HasPrefix(top, "ssm") {
		bad("The SSM parameter path %q starts with \"aws\" or \"ssm\", which SSM reserves; use another, such as /pgnvme/demo.", s.Path)
	}
	seen := map[string]string{}
	for _, p := range []struct {
		what, name string
		secret     bool
	}{
		{"superuser password", s.SuperuserPassword, true},
		{"replication password", s.ReplicationPassword, true},
		{"REST API password", s.RESTAPIPassword, true},
		{"takeover instruction", s.Takeover, false},
	} {
		switch {
		case p.secret && !strings.HasPrefix(p.name, "/"):
			bad("The %s parameter %q is not an SSM parameter name (it looks like a value): user-data is readable by anyone allowed ec2:DescribeInstanceAttribute, so give the name of a SecureString under %s/, never the password.", p.what, p.name, s.Path)
		case !strings.HasPrefix(p.name, "/"):
			bad("The %s parameter %q is not an SSM parameter name; give a name under %s/, such as %s/takeover.", p.what, p.name, s.Path, s.Path)
		case !ssmNamePattern.MatchString(p.name) || len(p.name) > maxSSMNameBytes:
			bad("The %s parameter name %q is not valid; use letters, digits, '_', '.', '-' and '/', at most %d bytes.", p.what, p.name, maxSSMNameBytes)
		case pathOK && !strings.HasPrefix(p.name, s.Path+"/"):
			bad("The %s parameter %s is outside the cluster's path %s; put it under %s/ so the node's role can be limited to that path.", p.what, p.name, s.Path, s.Path)
		case seen[p.name] != "" && p.secret:
			bad("The %s and the %s are both in %s; give each password its own parameter.", seen[p.name], p.what, p.name)
		case seen[p.name] != "":
			bad("The %s and the %s are both in %s; give the takeover instruction its own parameter.", seen[p.name], p.what, p.name)
		default:
			seen[p.name] = p.what
		}
	}
	return errs
}

// ArchiveSecretProblems are what RenderEC2 refuses in a's settings, each a
// sentence: secrets and AWS access key IDs (user-data is readable; nodes
// reach S3 with their instance role) and WAL-G variables the EC2 platform
// sets itself. They let a caller report each at the setting it is about.
func ArchiveSecretProblems(a *Archive) []error { return validateArchiveSecrets(a) }

// validateArchiveSecrets refuses secrets in the archive's settings, which
// would end up in user-data.
func validateArchiveSecrets(a *Archive) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, k := range slices.Sorted(maps.Keys(a.WALGEnv)) {
		v := a.WALGEnv[k]
		switch {
		case secretEnvName(k):
			bad("The WAL-G variable %s holds a secret, and user-data is readable by anyone allowed ec2:DescribeInstanceAttribute; remove it: nodes reach S3 with their instance role.", k)
		case accessKeyIDPattern.MatchString(v):
			bad("The WAL-G variable %s holds an AWS access key ID; remove it: nodes reach S3 with their instance role.", k)
		case slices.Contains(platformWALGEnv, k):
			bad("The WAL-G variable %s is set by the EC2 platform (the node's socket, superuser, data directory and prefetch directory); remove it.", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.PgBackRestOptions)) {
		v := a.PgBackRestOptions[k]
		switch {
		case secretPgBackRestOption.MatchString(k):
			bad("The pgBackRest option %s holds a secret, and user-data is readable by anyone allowed ec2:DescribeInstanceAttribute; remove it: with repo1-s3-key-type=auto nodes reach S3 with their instance role.", k)
		case accessKeyIDPattern.MatchString(v):
			bad("The pgBackRest option %s holds an AWS access key ID; remove it: with repo1-s3-key-type=auto nodes reach S3 with their instance role.", k)
		}
	}
	return errs
}

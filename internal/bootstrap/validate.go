package bootstrap

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// reservedParameters are the parameters Cluster.Parameters may not set, with
// what sets them instead.
var reservedParameters = map[string]string{
	// The node's identity on its machine: the platform's.
	"listen_addresses":        "the platform (the node's address)",
	"port":                    "the platform (the node's port)",
	"unix_socket_directories": "the platform (the node's socket directory)",
	"data_directory":          "the platform (the node's data directory)",
	"config_file":             "the platform (the node's data directory)",
	"hba_file":                "the platform (pg_hba.conf in the data directory)",
	"ident_file":              "the platform (pg_ident.conf in the data directory)",
	"external_pid_file":       "the platform (postmaster.pid in the data directory)",
	"logging_collector":       "the platform (where the server logs)",
	"include":                 "nothing: include directives are not parameters",
	"include_if_exists":       "nothing: include directives are not parameters",
	"include_dir":             "nothing: include directives are not parameters",
	// TLS: the cluster's own certificates (the tls block).
	"ssl":           "the tls block (the cluster's certificates)",
	"ssl_cert_file": "the tls block (the cluster's certificates)",
	"ssl_key_file":  "the tls block (the cluster's certificates)",
	"ssl_ca_file":   "the tls block (the cluster's certificates)",
	// Replication, quorum and archive: pgnvme's.
	"hot_standby":               "pgnvme (always on: pgnvme reads every standby's state over SQL)",
	"primary_conninfo":          "pgnvme (each standby's connection to its primary)",
	"primary_slot_name":         "pgnvme (standbys use no replication slots)",
	"synchronous_standby_names": "the synchronous block (method and number)",
	"synchronous_commit":        "the synchronous block (commit)",
	"archive_mode":              "the archive block",
	"archive_command":           "the archive block",
	"archive_library":           "the archive block",
	"restore_command":           "the archive block",
	// Restore targets stop recovery; on every node they would stop the standbys.
	"recovery_target":           "a point-in-time restore, for one restore only: set on every node, it would stop the standbys",
	"recovery_target_name":      "a point-in-time restore, for one restore only: set on every node, it would stop the standbys",
	"recovery_target_time":      "a point-in-time restore, for one restore only: set on every node, it would stop the standbys",
	"recovery_target_xid":       "a point-in-time restore, for one restore only: set on every node, it would stop the standbys",
	"recovery_target_lsn":       "a point-in-time restore, for one restore only: set on every node, it would stop the standbys",
	"recovery_target_inclusive": "a point-in-time restore, for one restore only: set on every node, it would stop the standbys",
	"recovery_target_action":    "a point-in-time restore, for one restore only: set on every node, it would stop the standbys",
	"recovery_target_timeline":  "a point-in-time restore, for one restore only: standbys follow the latest timeline",
}

// ReservedParameters returns the parameter names Cluster.Parameters may not
// set, each with a phrase saying what sets it instead.
func ReservedParameters() map[string]string {
	return maps.Clone(reservedParameters)
}

var (
	// clusterNamePattern is what Cluster.Name may be.
	clusterNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)
	// paramNamePattern is a configuration parameter's name, custom
	// (extension.name) ones included, in lower case.
	paramNamePattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`)
	// pgBackRestOptionPattern is a pgBackRest option name.
	pgBackRestOptionPattern = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	// pgBackRestNodeOption matches the options that belong to one node: pg1-path, pg2-host, ...
	pgBackRestNodeOption = regexp.MustCompile(`^pg[0-9]+-`)
	// stanzaPattern is a pgBackRest stanza name.
	stanzaPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)
	// envNamePattern is an environment variable name.
	envNamePattern = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
	// envValuePattern is what a WAL-G environment value may hold: readable
	// unquoted by a shell, a systemd EnvironmentFile and a dotenv parser.
	envValuePattern = regexp.MustCompile(`^[A-Za-z0-9_./:@,+=-]*$`)
	// roleNamePattern is Node.ReplicationUser.
	roleNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)
)

// pgBackRestNodeOptions are pgBackRest options the Node sets, with the Node
// field that sets them.
var pgBackRestNodeOptions = map[string]string{
	"log-path":   "the node's PgBackRestLogDir",
	"spool-path": "the node's PgBackRestSpoolDir",
	"stanza":     "the archive's stanza (the command line names it)",
	"config":     "the node's PgBackRestConfigPath (the command line names it)",
}

// validCommits are the values Synchronous.Commit may take.
var validCommits = []string{CommitOn, CommitRemoteApply, CommitRemoteWrite, CommitLocal, CommitOff}

// Problem is one thing wrong with a Cluster: Path names the setting at fault with the resource's
// attribute names (such as ["synchronous", "number"]), Err says what to change.
type Problem struct {
	Path []string
	Err  error
}

// Validate reports every problem with c, each as a sentence saying what to
// change, joined with errors.Join; nil when Render accepts c.
func (c Cluster) Validate() error {
	var errs []error
	for _, p := range c.Problems() {
		errs = append(errs, p.Err)
	}
	return errors.Join(errs...)
}

// Problems is what Validate reports, each problem with the setting it is about.
func (c Cluster) Problems() []Problem {
	var out []Problem
	add := func(errs []error, at ...string) {
		for _, err := range errs {
			out = append(out, Problem{Path: at, Err: err})
		}
	}
	badAt := func(at []string, format string, args ...any) { add([]error{fmt.Errorf(format, args...)}, at...) }
	bad := func(at, format string, args ...any) { badAt([]string{at}, format, args...) }
	if !clusterNamePattern.MatchString(c.Name) {
		bad("name", "The cluster name %q is not valid; use 1 to 63 letters, digits, '_', '.' or '-', starting with a letter or digit.", c.Name)
	}
	if c.PostgresMajor < capacity.MinPostgresMajor || c.PostgresMajor > capacity.MaxPostgresMajor {
		bad("postgres_major", "PostgreSQL major version %d is not supported; use %d to %d.", c.PostgresMajor, capacity.MinPostgresMajor, capacity.MaxPostgresMajor)
	}
	add(c.validateNodes(), "node")
	out = append(out, c.validateSynchronous()...)
	add(c.validateParameters(), "parameters")
	versions := ParameterVersionProblems(c.Parameters, c.PostgresMajor)
	for _, name := range slices.Sorted(maps.Keys(versions)) {
		add([]error{versions[name]}, "parameters", name)
	}
	if c.Archive != nil {
		out = append(out, c.Archive.ProblemsAt([]string{"archive"})...)
		params := defaultParameters()
		for k, v := range c.Parameters {
			params[strings.ToLower(k)] = v
		}
		if b, least := c.Archive.MaxBacklogMiB, MinBacklogMiB(params); b < 0 || (b > 0 && b < least) {
			badAt([]string{"archive", "max_backlog_gib"}, "The archive's backlog bound is %d MiB, below %d MiB: twice the WAL a node holds in normal operation (max_wal_size plus wal_keep_size). "+
				"A node would drop segments (a hole in the archive) while the archive works; raise max_backlog_gib to at least %.2f, or lower max_wal_size.", b, least, float64(least)/1024)
		}
		for _, p := range c.Archive.BackupPolicy().Problems() {
			badAt(append([]string{"backup"}, strings.Split(p.Attribute, ".")...), "%s", p.Detail)
		}
	}
	return out
}

func (c Cluster) validateNodes() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Nodes) < MinNodes || len(c.Nodes) > MaxNodes {
		bad("The cluster has %d nodes; give it %d to %d.", len(c.Nodes), MinNodes, MaxNodes)
	}
	seen := map[string]string{}
	for _, n := range c.Nodes {
		if !checkNodeName(n, bad) {
			continue
		}
		key := foldASCII(n)
		if prev, dup := seen[key]; dup {
			if prev == n {
				bad("The node name %q is listed twice; give every node its own name.", n)
			} else {
				bad("The node names %q and %q differ only in letter case, which PostgreSQL ignores when it matches standbys; give every node its own name.", prev, n)
			}
			continue
		}
		seen[key] = n
	}
	return errs
}

// checkNodeName reports with bad what is wrong with one node name (see
// Cluster.Nodes), and whether it is valid.
func checkNodeName(n string, bad func(format string, args ...any)) bool {
	switch {
	case n == "":
		bad("A node name is empty; give every node a name.")
	case n == quorum.Wildcard:
		bad(`The node name "*" means every standby in synchronous_standby_names; choose another name.`)
	case len(n) > MaxNameBytes:
		bad("The node name %q is %d bytes long; use at most %d, the longest application_name PostgreSQL keeps.", n, len(n), MaxNameBytes)
	case !printableASCII(n):
		bad("The node name %q has characters outside printable ASCII, which PostgreSQL replaces in an application_name; use ASCII letters, digits and punctuation.", n)
	case strings.TrimSpace(n) != n:
		bad("The node name %q starts or ends with a space; remove it.", n)
	default:
		return true
	}
	return false
}

func (c Cluster) validateSynchronous() []Problem {
	var errs []Problem
	bad := func(field, format string, args ...any) {
		errs = append(errs, Problem{Path: []string{"synchronous", field}, Err: fmt.Errorf(format, args...)})
	}
	s := c.Synchronous
	if s.Method != quorum.MethodAny && s.Method != quorum.MethodFirst {
		bad("method", "The synchronous method %q is not supported; use %q (a commit waits for any n standbys) or %q (for the first n in node order).",
			s.Method, quorum.MethodAny, quorum.MethodFirst)
	}
	if s.DataDurability != DurabilityRequired && s.DataDurability != DurabilityPreferred {
		bad("data_durability", "The data durability %q is not supported; use %q (commits wait for the standbys) or %q (commits continue with fewer standbys).",
			s.DataDurability, DurabilityRequired, DurabilityPreferred)
	}
	if !slices.Contains(validCommits, s.Commit) {
		bad("commit", "synchronous_commit %q is not supported; use one of %s.", s.Commit, strings.Join(validCommits, ", "))
	}
	standbys := max(len(c.Nodes)-1, 0)
	switch {
	case s.Number < 0:
		bad("number", "The number of synchronous standbys is %d; use 0 (asynchronous replication) or more.", s.Number)
	case s.Number > standbys && s.DataDurability == DurabilityRequired:
		bad("number", "The number of synchronous standbys (%d) is more than the cluster's %d standbys, so with data durability %q no commit could complete; lower the number to at most %d, add nodes, or use data durability %q.",
			s.Number, standbys, DurabilityRequired, standbys, DurabilityPreferred)
	}
	return errs
}

func (c Cluster) validateParameters() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	seen := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(c.Parameters)) {
		v := c.Parameters[k]
		name := strings.ToLower(k)
		switch {
		case !paramNamePattern.MatchString(name):
			bad("The parameter name %q is not a PostgreSQL parameter name; use letters, digits and '_' (extension parameters as extension.name).", k)
			continue
		case reservedParameters[name] != "":
			bad("The parameter %q is set by %s; remove it from the parameters.", k, reservedParameters[name])
			continue
		case strings.ContainsAny(v, "\n\r\x00"):
			bad("The value of parameter %q contains a line break or NUL byte; write it on one line.", k)
			continue
		}
		if prev, dup := seen[name]; dup {
			bad("The parameters %q and %q are the same parameter (names ignore letter case); keep one.", prev, k)
			continue
		}
		seen[name] = k
		switch name {
		case "wal_level":
			if lv := strings.ToLower(strings.TrimSpace(v)); lv != "replica" && lv != "logical" {
				bad("wal_level %q cannot feed standbys or an archive; use \"replica\" or \"logical\", or remove it.", v)
			}
		case "max_wal_senders":
			need := max(len(c.Nodes)-1, 0) + 2
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || n < need {
				bad("max_wal_senders %q is too low for %d standbys; use at least %d (one per standby and two for seeding a new standby), or remove it.", v, max(len(c.Nodes)-1, 0), need)
			}
		}
	}
	return errs
}

// ProblemsAt reports every problem with a's archiver settings and stanza, each at its attribute under root
// (the block that gives them: archive, or restore.archive for the archive a cluster is restored from).
func (a *Archive) ProblemsAt(root []string) []Problem {
	var errs []Problem
	under := func(name string) []string { return append(slices.Clip(root), name) }
	at := root
	bad := func(format string, args ...any) {
		errs = append(errs, Problem{Path: at, Err: fmt.Errorf(format, args...)})
	}
	switch {
	case len(a.PgBackRestOptions) == 0 && len(a.WALGEnv) == 0:
		bad("The archive has neither pgBackRest options nor a WAL-G environment; give exactly one of them.")
		return errs
	case len(a.PgBackRestOptions) > 0 && len(a.WALGEnv) > 0:
		bad("The archive has both pgBackRest options and a WAL-G environment; give exactly one of them.")
		return errs
	}
	at = under("pgbackrest_options")
	for _, k := range slices.Sorted(maps.Keys(a.PgBackRestOptions)) {
		v := a.PgBackRestOptions[k]
		switch {
		case !pgBackRestOptionPattern.MatchString(k):
			bad("The pgBackRest option name %q is not valid; use pgBackRest's lower-case names such as repo1-path.", k)
		case pgBackRestNodeOption.MatchString(k):
			bad("The pgBackRest option %q belongs to one node and is rendered from the node; remove it from the archive's options.", k)
		case pgBackRestNodeOptions[k] != "":
			bad("The pgBackRest option %q is set from %s; remove it from the archive's options.", k, pgBackRestNodeOptions[k])
		case strings.ContainsAny(v, "\n\r\x00"):
			bad("The value of pgBackRest option %q contains a line break or NUL byte; write it on one line.", k)
		case strings.TrimSpace(v) != v:
			bad("The value of pgBackRest option %q starts or ends with white space, which pgBackRest drops; remove it.", k)
		}
	}
	if len(a.PgBackRestOptions) > 0 && a.Stanza != "" && !stanzaPattern.MatchString(a.Stanza) {
		at = under("stanza")
		bad("The pgBackRest stanza %q is not valid; use 1 to 63 letters, digits, '_', '.' or '-', starting with a letter or digit.", a.Stanza)
	}
	at = under("walg_env")
	if len(a.WALGEnv) > 0 {
		hasPrefix := false
		for _, k := range slices.Sorted(maps.Keys(a.WALGEnv)) {
			v := a.WALGEnv[k]
			switch {
			case !envNamePattern.MatchString(k):
				bad("The WAL-G variable name %q is not valid; use upper-case letters, digits and '_', such as WALG_S3_PREFIX.", k)
			case !envValuePattern.MatchString(v):
				bad("The value of WAL-G variable %s has characters that would need quoting (spaces, quotes, '$', '#', ...); use letters, digits and _ . / : @ , + = - only.", k)
			case k == WALGPreventWALOverwrite && v != "true":
				bad("%s is %q; pgnvme always sets it true, so that a push never writes over a segment of other content in the archive (another cluster's history, or a promoted standby's copy of a segment); remove it.", k, v)
			}
			if strings.HasSuffix(k, "_PREFIX") && v != "" {
				hasPrefix = true
			}
		}
		if !hasPrefix {
			bad("The WAL-G environment names no storage; set WALG_S3_PREFIX (or another storage's *_PREFIX).")
		}
	}
	return errs
}

// validateNode reports every problem with n as a node of c (which is valid).
func (c Cluster) validateNode(n Node) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !slices.Contains(c.Nodes, n.Name) {
		bad("The node %q is not one of the cluster's nodes (%s); render one of them.", n.Name, strings.Join(c.Nodes, ", "))
	}
	switch {
	case n.Role == RolePrimary, n.Role == RoleStandby:
	case n.Role == "" && n.Patroni:
		// Patroni decides the role.
	default:
		bad("Node %s has role %q; use %q or %q.", n.Name, n.Role, RolePrimary, RoleStandby)
	}
	if n.Port < 1 || n.Port > 65535 {
		bad("Node %s has port %d; use 1 to 65535.", n.Name, n.Port)
	}
	checkPath := func(what, p string, required bool) {
		switch {
		case p == "" && !required:
		case p == "":
			bad("Node %s has no %s; set it to an absolute path.", n.Name, what)
		case !path.IsAbs(p) || path.Clean(p) == "/":
			bad("Node %s has %s %q; use an absolute path below /.", n.Name, what, p)
		case strings.ContainsAny(p, "\n\r\x00"):
			bad("Node %s has %s %q with a line break or NUL byte; use another path.", n.Name, what, p)
		}
	}
	checkPath("data directory", n.DataDir, true)
	checkPath("socket directory", n.SocketDir, false)
	checkPath("archiver path", n.ArchiverPath, false)
	pgBackRest := c.Archive != nil && len(c.Archive.PgBackRestOptions) > 0
	walg := c.Archive != nil && len(c.Archive.WALGEnv) > 0
	checkPath("pgBackRest configuration path", n.PgBackRestConfigPath, pgBackRest)
	checkPath("pgBackRest log directory", n.PgBackRestLogDir, false)
	checkPath("pgBackRest spool directory", n.PgBackRestSpoolDir, false)
	checkPath("WAL-G environment file path", n.WALGEnvPath, walg)

	multi := len(c.Nodes) > 1
	switch {
	case n.ReplicationUser == "" && multi:
		bad("Node %s has no replication user; set the role standbys connect as.", n.Name)
	case n.ReplicationUser != "" && !roleNamePattern.MatchString(n.ReplicationUser):
		bad("Node %s has replication user %q; use a plain identifier: a letter or '_', then letters, digits or '_', at most 63 bytes.", n.Name, n.ReplicationUser)
	}
	if n.Role == RoleStandby && !n.Patroni {
		switch {
		case n.PrimaryHost == "":
			bad("Standby %s has no primary host; set the address of its primary.", n.Name)
		case quorum.HasControl(n.PrimaryHost):
			bad("Standby %s has primary host %q with a control character; use a host name or IP address.", n.Name, n.PrimaryHost)
		}
		if n.PrimaryPort < 1 || n.PrimaryPort > 65535 {
			bad("Standby %s has primary port %d; use its primary's port, 1 to 65535.", n.Name, n.PrimaryPort)
		}
	}
	if len(n.AllowedCIDRs) == 0 && multi {
		bad("Node %s allows no network; list the CIDRs its standbys and clients connect from (127.0.0.1/32 on the local platform).", n.Name)
	}
	for _, s := range n.AllowedCIDRs {
		if _, err := netip.ParsePrefix(s); err != nil {
			bad("Node %s allows %q, which is not a CIDR; write an address with its prefix length, such as 10.0.0.0/16 or 10.0.0.5/32.", n.Name, s)
		}
	}
	return errors.Join(errs...)
}

// foldASCII lower-cases ASCII letters only, as PostgreSQL's pg_strcasecmp
// compares standby names.
func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// printableASCII reports whether every byte of s is in 0x20..0x7e.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

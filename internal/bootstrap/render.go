package bootstrap

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
)

// Replication and archive defaults, which Cluster.Parameters may override.
const (
	// DefaultMaxWALSenders is max_wal_senders: the most nodes (9) need 8 for
	// the standbys and 2 for seeding a new standby with pg_basebackup.
	DefaultMaxWALSenders = 10
	// DefaultMaxReplicationSlots is max_replication_slots.
	DefaultMaxReplicationSlots = 10
	// DefaultWALKeepSize is wal_keep_size: WAL kept for a standby that
	// falls behind; beyond it the standby reads from the archive (with one)
	// or must be seeded again.
	DefaultWALKeepSize = "256MB"
	// DefaultArchiveTimeout is archive_timeout with an archive: an idle
	// primary still archives a segment a minute, which bounds what a loss
	// of the whole cluster loses.
	DefaultArchiveTimeout = "60s"
)

// defaultParameters are the replication settings every node gets unless
// Cluster.Parameters overrides them.
func defaultParameters() map[string]string {
	return map[string]string{
		"wal_level":             "replica",
		"wal_log_hints":         "on", // pg_rewind needs it when data checksums are off
		"max_wal_senders":       strconv.Itoa(DefaultMaxWALSenders),
		"max_replication_slots": strconv.Itoa(DefaultMaxReplicationSlots),
		"wal_keep_size":         DefaultWALKeepSize,
	}
}

// Render validates c and n and renders n's configuration. The error joins
// every problem found, each a sentence saying what to change.
func Render(c Cluster, n Node) (Rendered, error) {
	if err := c.Validate(); err != nil {
		return Rendered{}, err
	}
	if err := c.validateNode(n); err != nil {
		return Rendered{}, err
	}

	params := defaultParameters()
	if c.Archive != nil {
		params["archive_timeout"] = DefaultArchiveTimeout
	}
	for k, v := range c.Parameters {
		params[strings.ToLower(k)] = v
	}
	params["hot_standby"] = "on"
	if !n.Patroni {
		// Under Patroni, its quorum mode owns synchronous_standby_names.
		ssn, err := synchronousStandbyNames(c, n.Name, c.Synchronous.Number)
		if err != nil {
			return Rendered{}, err
		}
		params["synchronous_standby_names"] = ssn
	}
	params["synchronous_commit"] = c.Synchronous.Commit

	r := Rendered{Parameters: params, HBA: renderHBA(c, n)}
	if n.Role == RoleStandby && !n.Patroni {
		r.StandbySignal = true
		r.PrimaryConnInfo = "host=" + quoteConnValue(n.PrimaryHost) +
			" port=" + strconv.Itoa(n.PrimaryPort) +
			" user=" + quoteConnValue(n.ReplicationUser) +
			" application_name=" + quoteConnValue(n.Name)
	}
	if a := c.Archive; a != nil {
		params["archive_mode"] = "on"
		if len(a.PgBackRestOptions) > 0 {
			stanza := a.stanza(c)
			bin := commandWord(orDefault(n.ArchiverPath, "pgbackrest"))
			prefix := bin + " --config=" + commandWord(n.PgBackRestConfigPath) + " --stanza=" + commandWord(stanza)
			params["archive_command"] = prefix + " archive-push %p"
			params["restore_command"] = prefix + ` archive-get %f "%p"`
			r.PgBackRestConf = renderPgBackRestConf(c, n, stanza)
		} else {
			bin := commandWord(orDefault(n.ArchiverPath, "wal-g"))
			// The environment file is sourced with set -a, which exports
			// every variable it assigns; a missing file fails the command.
			env := "set -a && . " + commandWord(n.WALGEnvPath) + " && exec " + bin
			params["archive_command"] = env + " wal-push %p"
			params["restore_command"] = env + " wal-fetch %f %p"
			r.WALGEnvFile = renderWALGEnv(c, n)
		}
		if a.MaxBacklogMiB > 0 {
			params["archive_command"] = backlogGuard(a.MaxBacklogMiB) + params["archive_command"]
		}
	}
	return r, nil
}

// backlogGuard is the start of an archive_command that drops the segment it is given (exits 0 without
// archiving it, after a line on standard error, which PostgreSQL logs) while pg_wal (the command runs in
// the data directory) holds more than limitMiB: Archive.MaxBacklogMiB. PostgreSQL then recycles the segment
// like an archived one, so the node keeps writing with the archive down, and the archive has a hole from
// that segment on.
func backlogGuard(limitMiB int) string {
	return fmt.Sprintf(`w=$(du -sm pg_wal | cut -f1); [ "$w" -le %d ] || { echo "pgnvme: pg_wal holds $w MiB, over archive.max_backlog_gib (%d MiB): %%f is dropped, not archived" >&2; exit 0; }; `,
		limitMiB, limitMiB)
}

// MinBacklogMiB is the least Archive.MaxBacklogMiB params allow: twice the WAL pg_wal holds in normal
// operation (max_wal_size plus wal_keep_size, PostgreSQL's defaults when unset), so that segments are only
// dropped while the archive is really behind, never under a burst of writes a checkpoint is still catching.
func MinBacklogMiB(params map[string]string) int {
	size := func(name, def string) int64 {
		v, ok := params[name]
		if !ok {
			v = def
		}
		b, err := capacity.ParseMemory(v, capacity.MegaBytes)
		if err != nil {
			b, _ = capacity.ParseMemory(def, capacity.MegaBytes)
		}
		return b
	}
	held := size("max_wal_size", "1GB") + size("wal_keep_size", DefaultWALKeepSize)
	return int(2 * held / capacity.MegaBytes)
}

// orDefault returns s, or def when s is "".
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// stanza is the pgBackRest stanza: Stanza, or the cluster's name.
func (a *Archive) stanza(c Cluster) string {
	if a.Stanza != "" {
		return a.Stanza
	}
	return c.Name
}

// others are the names of c's nodes other than self, in priority order.
func others(c Cluster, self string) []string {
	var out []string
	for _, name := range c.Nodes {
		if name != self {
			out = append(out, name)
		}
	}
	return out
}

// synchronousStandbyNames is the value of synchronous_standby_names on node
// self when number standbys are to confirm each commit: the cluster's method
// over the other nodes, with number lowered to how many there are; "" for
// asynchronous replication.
func synchronousStandbyNames(c Cluster, self string, number int) (string, error) {
	names := others(c, self)
	number = min(number, len(names))
	if number <= 0 {
		return "", nil
	}
	return formatSpec(c.Synchronous.Method, number, names)
}

// renderHBA is n's pg_hba.conf, one line per element.
func renderHBA(c Cluster, n Node) []string {
	type net struct {
		cidr     string
		loopback bool
	}
	var loop, other []net
	for _, s := range n.AllowedCIDRs {
		p := netip.MustParsePrefix(s).Masked() // validated
		if isLoopback(p) {
			loop = append(loop, net{p.String(), true})
		} else {
			other = append(other, net{p.String(), false})
		}
	}
	socket := "peer"
	if len(loop) > 0 {
		socket = "trust"
	}
	repl := ""
	if n.ReplicationUser != "" {
		repl = quoteHBAName(n.ReplicationUser)
	}

	header := fmt.Sprintf("# pg_hba.conf of node %s in cluster %s, rendered by pgnvme. The first matching line applies.", n.Name, c.Name)
	if n.Patroni {
		// Patroni's dynamic configuration: one file for every node.
		header = fmt.Sprintf("# pg_hba.conf of cluster %s, rendered by pgnvme. The first matching line applies.", c.Name)
	}
	out := []string{header}
	if len(loop) > 0 {
		out = append(out,
			"# Loopback connections and the Unix socket are trusted without a password: for the local platform only,",
			"# where every node listens on this machine's loopback address. Every other network needs scram-sha-256.")
	} else {
		out = append(out, "# Unix socket: the operating system user must match the role (peer). Networks need scram-sha-256.")
	}
	row := func(typ, db, user, addr, method string) string {
		return strings.TrimRight(fmt.Sprintf("%-7s %-12s %-16s %-24s %s", typ, db, user, addr, method), " ")
	}
	out = append(out, row("# TYPE", "DATABASE", "USER", "ADDRESS", "METHOD"))
	out = append(out, row("local", "all", "all", "", socket))
	out = append(out, row("local", "replication", "all", "", socket))
	if n.TLS {
		// Every network connection without TLS is refused before any other line can match it (the node
		// listens on its IPv4 address only); the replication user and the provider's (ProviderUser) are
		// authenticated by their client certificates (cert: the certificate's common name is the user),
		// everyone else by password over TLS.
		out = append(out, row("hostnossl", "all", "all", "0.0.0.0/0", "reject"), row("hostnossl", "replication", "all", "0.0.0.0/0", "reject"))
	}
	for _, list := range [][]net{loop, other} {
		for _, nw := range list {
			typ, method, replMethod := "host", "scram-sha-256", "scram-sha-256"
			switch {
			case nw.loopback:
				method, replMethod = "trust", "trust"
			case n.TLS:
				typ, replMethod = "hostssl", "cert"
			}
			if repl != "" {
				out = append(out, row(typ, "replication", repl, nw.cidr, replMethod))
			}
			if n.TLS && !nw.loopback {
				// The provider's own role, by its client certificate only.
				out = append(out, row(typ, "all", ProviderUser, nw.cidr, "cert"))
			}
			out = append(out, row(typ, "all", "all", nw.cidr, method))
		}
	}
	return out
}

// isLoopback reports whether every address of p is a loopback address.
func isLoopback(p netip.Prefix) bool {
	a := p.Addr()
	if a.Is4() {
		return p.Bits() >= 8 && a.IsLoopback()
	}
	return p.Bits() == 128 && a.IsLoopback()
}

// HBAFile is the pg_hba.conf text: the HBA lines, each ended by a newline.
func (r Rendered) HBAFile() string {
	if len(r.HBA) == 0 {
		return ""
	}
	return strings.Join(r.HBA, "\n") + "\n"
}

// renderPgBackRestConf is n's pgbackrest.conf.
func renderPgBackRestConf(c Cluster, n Node, stanza string) string {
	global := maps.Clone(c.Archive.PgBackRestOptions)
	if n.PgBackRestLogDir != "" {
		global["log-path"] = n.PgBackRestLogDir
	}
	if n.PgBackRestSpoolDir != "" {
		global["spool-path"] = n.PgBackRestSpoolDir
	}
	local := map[string]string{
		"pg1-path": n.DataDir,
		"pg1-port": strconv.Itoa(n.Port),
	}
	if n.SocketDir != "" {
		local["pg1-socket-path"] = n.SocketDir
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# pgbackrest.conf of node %s in cluster %s, rendered by pgnvme.\n", n.Name, c.Name)
	for _, sec := range []struct {
		name string
		opts map[string]string
	}{{"global", global}, {stanza, local}} {
		fmt.Fprintf(&b, "\n[%s]\n", sec.name)
		for _, k := range slices.Sorted(maps.Keys(sec.opts)) {
			fmt.Fprintf(&b, "%s=%s\n", k, sec.opts[k])
		}
	}
	return b.String()
}

// renderWALGEnv is n's WAL-G environment file.
func renderWALGEnv(c Cluster, n Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# WAL-G environment of node %s in cluster %s, rendered by pgnvme.\n", n.Name, c.Name)
	env := c.Archive.WALGEnv
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(&b, "%s=%s\n", k, env[k])
	}
	return b.String()
}

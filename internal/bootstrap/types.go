package bootstrap

import (
	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

// Limits of a [Cluster].
const (
	// MinNodes and MaxNodes bound the number of nodes, primary included.
	MinNodes = 1
	MaxNodes = 9
	// MaxNameBytes is the longest node name: PostgreSQL cuts application_name
	// (which a standby's name becomes) to 63 bytes.
	MaxNameBytes = quorum.MaxNameBytes
)

// Role is what a node does in its cluster.
type Role string

// The roles a [Node] can have.
const (
	// RolePrimary takes writes and streams WAL to the standbys.
	RolePrimary Role = "primary"
	// RoleStandby replays the primary's WAL (hot standby, read-only).
	RoleStandby Role = "standby"
)

// Durability is what a commit does when too few synchronous standbys are
// connected, with CloudNativePG's names.
type Durability string

// The data durability modes of [Synchronous].
const (
	// DurabilityRequired always waits for Synchronous.Number standbys: with
	// fewer standbys up, commits wait until they are back. No acknowledged
	// commit exists on fewer than Number+1 nodes.
	DurabilityRequired Durability = "required"
	// DurabilityPreferred waits for as many of Synchronous.Number standbys as
	// are healthy, and for none when none is (see
	// EffectiveSynchronousStandbyNames): writes never stop, and a commit may
	// then be acknowledged with fewer copies.
	DurabilityPreferred Durability = "preferred"
)

// The values synchronous_commit takes, as [Synchronous.Commit] accepts them.
const (
	CommitOn          = "on"           // wait for the standbys to flush the commit's WAL (the default)
	CommitRemoteApply = "remote_apply" // wait until the standbys have applied it (visible to their readers)
	CommitRemoteWrite = "remote_write" // wait until the standbys have written it (not flushed)
	CommitLocal       = "local"        // wait for the local flush only: no synchronous replication
	CommitOff         = "off"          // wait for nothing: the last commits may be lost on a crash
)

// Synchronous is the cluster's synchronous replication: which standbys a
// commit waits for, and how hard.
type Synchronous struct {
	// Method is quorum.MethodAny ("any": a commit waits for any Number
	// standbys, the fastest) or quorum.MethodFirst ("first": it waits for the
	// Number connected standbys that come first in Cluster.Nodes).
	Method quorum.Method
	// Number is how many standbys confirm each commit. 0 means asynchronous
	// replication (synchronous_standby_names is empty). With
	// DurabilityRequired it must not exceed the number of standbys; with
	// DurabilityPreferred a larger number is lowered to the standbys there
	// are.
	Number int
	// DataDurability is DurabilityRequired or DurabilityPreferred.
	DataDurability Durability
	// Commit is synchronous_commit: CommitOn, CommitRemoteApply,
	// CommitRemoteWrite, CommitLocal or CommitOff. Only on, remote_apply and
	// remote_write make a commit wait for standbys.
	Commit string
}

// Archive is continuous WAL archiving (and restore) with exactly one
// archiver: pgBackRest (the local platform's) or WAL-G (the EC2 platform's).
type Archive struct {
	// PgBackRestOptions are pgBackRest options for pgbackrest.conf's [global]
	// section, typically a pgnvme_archive_bucket's pgbackrest_options
	// (repo1-type, repo1-s3-bucket, repo1-path, ...) plus what the platform
	// adds (credentials, lock-path, archive-async, ...). Names are
	// pgBackRest's, in lower case; the node's own options (pg1-*, log-path,
	// spool-path) come from the Node and may not appear here. Secrets given
	// here end up in the rendered file.
	PgBackRestOptions map[string]string
	// WALGEnv is WAL-G's environment, typically a pgnvme_archive_bucket's
	// walg_env (WALG_S3_PREFIX, AWS_REGION, WALG_S3_SSE, ...). It must name a
	// storage prefix (a variable ending in _PREFIX). Values are written
	// unquoted, so they are limited to letters, digits and _ . / : @ , + = -.
	WALGEnv map[string]string
	// Stanza is the pgBackRest stanza; "" means the cluster's name. WAL-G has
	// no stanza and ignores it.
	Stanza string
	// MaxBacklogMiB bounds the WAL a node keeps for an archive that does not
	// take it: once pg_wal holds more than that, archive_command drops each
	// segment it is given (reports success without archiving it, and logs
	// so), which keeps the node writing and leaves a hole in the archive
	// that archive health then reports. 0 keeps every segment until the
	// archive takes it, and the node stops when its disk is full. See
	// MinBacklogMiB.
	MaxBacklogMiB int
	// BackupOnCreate asks the platform to take a base backup once the
	// cluster is created, so that standbys can be seeded from the archive
	// and point-in-time recovery starts at once. Render does not use it;
	// RenderEC2 renders it as Patroni's post_bootstrap script, which also
	// creates the pgBackRest stanza either way.
	BackupOnCreate bool
	// Backup is the scheduled base backups' policy; nil is backup.Default()
	// (see BackupPolicy). Only the dynamic configuration carries it (EC2:
	// Patroni's postgresql.pgnvme_backup, read by backup.sh on every tick), so a
	// change never touches a node's user-data identity.
	Backup *backup.Policy
}

// Cluster is what every node of a cluster shares. Every field is taken
// literally: callers fill in defaults (Method "any", Number 1, DataDurability
// "required", Commit "on") before calling.
type Cluster struct {
	// Name names the cluster: 1 to 63 letters, digits, '_', '.' or '-',
	// starting with a letter or digit. It is the default pgBackRest stanza.
	Name string
	// PostgresMajor is the PostgreSQL major version the nodes run,
	// capacity.MinPostgresMajor to capacity.MaxPostgresMajor.
	PostgresMajor int
	// Nodes are the nodes' names, MinNodes to MaxNodes of them, in priority
	// order (the order FIRST uses). A name is also the node's
	// application_name as a standby, which is what synchronous_standby_names
	// lists: 1 to 63 bytes of printable ASCII without leading or trailing
	// spaces, not "*", and no two equal ignoring ASCII letter case (as
	// PostgreSQL compares them).
	Nodes []string
	// Synchronous is the synchronous replication of the cluster.
	Synchronous Synchronous
	// Parameters are the user's server parameters, typically tuned ones
	// (pgnvme_tuning, pgnvme_capacity_plan). Names are matched without regard
	// to letter case and rendered in lower case. They may override the
	// replication defaults (wal_level, max_wal_senders, max_replication_slots,
	// wal_keep_size, wal_log_hints, archive_timeout) within limits, but not
	// what pgnvme manages (see ReservedParameters).
	Parameters map[string]string
	// Archive is continuous archiving; nil means none.
	Archive *Archive
}

// Node is one node as its platform places it: its role and the paths,
// ports and networks that belong to it.
type Node struct {
	// Name is one of Cluster.Nodes.
	Name string
	// Role is RolePrimary or RoleStandby; under Patroni it may be "", since
	// Patroni decides which node is the primary.
	Role Role
	// Port is the TCP port the node listens on (1 to 65535); pgBackRest's
	// pg1-port. The platform sets the port itself.
	Port int
	// DataDir is the node's data directory, an absolute path; pgBackRest's
	// pg1-path.
	DataDir string
	// SocketDir is the node's Unix socket directory, an absolute path, or ""
	// for pgBackRest's default; pgBackRest's pg1-socket-path.
	SocketDir string

	// PgBackRestConfigPath is where the platform writes Rendered.PgBackRestConf
	// (an absolute path), named in archive_command and restore_command.
	// Required with a pgBackRest archive.
	PgBackRestConfigPath string
	// PgBackRestLogDir is pgBackRest's log-path (an absolute path), or "" for
	// its default (/var/log/pgbackrest).
	PgBackRestLogDir string
	// PgBackRestSpoolDir is pgBackRest's spool-path for asynchronous
	// archiving (an absolute path), or "" for its default.
	PgBackRestSpoolDir string
	// WALGEnvPath is where the platform writes Rendered.WALGEnvFile (an
	// absolute path), read by archive_command and restore_command. Required
	// with a WAL-G archive.
	WALGEnvPath string
	// ArchiverPath is the pgbackrest or wal-g executable, an absolute path,
	// or "" to find "pgbackrest" or "wal-g" on the server's PATH.
	ArchiverPath string

	// PrimaryHost and PrimaryPort are where a standby reaches its primary.
	// Standbys only; a primary ignores them.
	PrimaryHost string
	PrimaryPort int
	// ReplicationUser is the role standbys connect as: in a standby's
	// primary_conninfo, and in every node's pg_hba replication lines (so that
	// a promoted standby accepts its former peers). A plain identifier: a
	// letter or '_', then letters, digits or '_', at most 63 bytes. Required
	// when the cluster has more than one node.
	ReplicationUser string
	// AllowedCIDRs are the networks clients and standbys connect from, such
	// as the VPC's CIDR or "127.0.0.1/32" on the local platform. Each is an
	// IPv4 or IPv6 CIDR. A loopback network is trusted without a password
	// (local platform only, see the package documentation); every other one
	// needs scram-sha-256. Required when the cluster has more than one node,
	// because standbys must reach the primary.
	AllowedCIDRs []string

	// Patroni is true when the node runs under Patroni, which then owns
	// synchronous_standby_names (its quorum mode), primary_conninfo and
	// standby.signal: Render leaves all three out, whatever the role, and
	// a standby needs no PrimaryHost or PrimaryPort. The platform hands the
	// rendered parameters to Patroni through its YAML (see RenderEC2).
	Patroni bool
	// TLS makes every network pg_hba line hostssl, replication authenticated by client certificate
	// (cert), and refuses every connection without TLS (hostnossl ... reject). EC2 nodes only (the local
	// platform's TLS is internal/localnode's).
	TLS bool
}

// Rendered is one node's configuration.
type Rendered struct {
	// Parameters are the server parameters, by lower-case name, with raw
	// values (FormatConf quotes them for postgresql.conf): the cluster's
	// parameters; the replication defaults (wal_level replica, hot_standby
	// on, wal_log_hints on for pg_rewind, max_wal_senders 10,
	// max_replication_slots 10, wal_keep_size 256MB) unless the parameters
	// override them; synchronous_standby_names ("" for asynchronous
	// replication) and synchronous_commit; with an archive archive_mode on,
	// archive_timeout 60s (unless overridden), archive_command and
	// restore_command. Never the node's identity (port, listen_addresses,
	// unix_socket_directories) or primary_conninfo. Under Patroni
	// (Node.Patroni) there is no synchronous_standby_names either.
	//
	// synchronous_standby_names is the configured quorum. With data
	// durability "preferred" the platform applies
	// EffectiveSynchronousStandbyNames on the primary as standbys come and go.
	Parameters map[string]string
	// HBA are pg_hba.conf's lines in order, comments included; HBAFile joins
	// them.
	HBA []string
	// PrimaryConnInfo is a standby's primary_conninfo (a libpq connection
	// string: host, port, user and application_name = the node's name,
	// quoted where libpq needs it; no password, which comes from a password
	// file or trust). "" on a primary and under Patroni.
	PrimaryConnInfo string
	// StandbySignal is true when the node must have standby.signal in its
	// data directory (a standby not run by Patroni).
	StandbySignal bool
	// PgBackRestConf is pgbackrest.conf with a pgBackRest archive, else "":
	// [global] with the archive's options and the node's log-path and
	// spool-path, and [STANZA] with pg1-path, pg1-port and pg1-socket-path.
	PgBackRestConf string
	// WALGEnvFile is WAL-G's environment file with a WAL-G archive, else "":
	// one KEY=VALUE line per variable, sorted, no quoting. It reads the same
	// as a POSIX shell script (archive_command sources it with set -a) and
	// as a systemd EnvironmentFile.
	WALGEnvFile string
}

// BackupPolicy is a.Backup, or backup.Default() when a or a.Backup is nil.
func (a *Archive) BackupPolicy() backup.Policy {
	if a == nil || a.Backup == nil {
		return backup.Default()
	}
	return *a.Backup
}

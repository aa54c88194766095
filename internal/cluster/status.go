package cluster

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

// Member states, as Member.State holds them (topology's node states).
const (
	StateRunning = string(topology.Running)
	StateStopped = string(topology.Stopped)
	StateMissing = string(topology.Missing)
	StateUnknown = string(topology.Unknown)
)

// Member roles.
const (
	RolePrimary = topology.RolePrimary
	RoleStandby = topology.RoleStandby
)

// Member is one node as a platform observed or plans it.
type Member struct {
	Name string
	Zone string
	// Role is RolePrimary, RoleStandby, or "" when it could not be read.
	Role string
	// State is StateRunning, StateStopped (data, no process), StateMissing (no data) or StateUnknown.
	State string
	// Host and Port are where the node listens.
	Host string
	Port int
	// DataDir is the node's data directory on the local platform ("" elsewhere).
	DataDir string
	// Cgroup is the cgroup the node's server processes run in, relative to each controller's root, and
	// BlockDevice the device its data lives on (local platform with limits; "" otherwise or when unknown).
	Cgroup      string
	BlockDevice string
}

// Status is a cluster as its platform observed it.
type Status struct {
	Members []Member
	// PostgresMajor is the major version the nodes run (0 when not known).
	PostgresMajor int
	// SynchronousKnown is false when the primary's synchronous_standby_names could not be read; then
	// SynchronousStandbyNames and Degraded say nothing and the caller must not report them as current.
	SynchronousKnown        bool
	SynchronousStandbyNames string
	// Degraded is true when fewer named standbys stream than the synchronous number.
	Degraded bool
	// Archive is the archive as read on refresh and judged (archive.Assess); nil without an archive or
	// when it could not be read (a warning says why).
	Archive *archive.Health
	// Platform is what only the platform reports (*localspec.Status, *awsspec.Status); nil for none.
	Platform PlatformStatus
	// Restored is what the restore that created the cluster did (a cluster with a restore block); nil when
	// the platform does not know (no restore, or not finished yet).
	Restored *RestoreResult
	// TLS is the cluster's certificates as read; nil without TLS or when they could not be read (a warning
	// says why).
	TLS *TLSStatus
	// Leftovers is true when objects the platform made for the cluster still exist although no member
	// does (the aws platform's network interfaces, security group, parameters): the cluster stays in state
	// so that an apply can rebuild it or a destroy remove them.
	Leftovers bool
	// Warnings are things the platform could not read or check, each a sentence.
	Warnings []string
}

// PlatformStatus is what only one platform reports of a cluster, beside the neutral Status
// (*localspec.Status, *awsspec.Status).
type PlatformStatus interface {
	// Platform is the platform that reports it.
	Platform() Platform
}

// Gone reports whether every member is missing: the cluster no longer exists.
func (s Status) Gone() bool {
	if s.Leftovers {
		return false
	}
	for _, m := range s.Members {
		if m.State != StateMissing {
			return false
		}
	}
	return true
}

// Primary is the running primary, if exactly one runs.
func (s Status) Primary() (Member, bool) {
	return runningPrimary(s.Members)
}

func runningPrimary(members []Member) (Member, bool) {
	var found []Member
	for _, m := range members {
		if m.Role == RolePrimary && m.State == StateRunning {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		return Member{}, false
	}
	return found[0], true
}

// Prior is what Terraform's state records of a cluster: the configuration of its last apply and the
// members its last refresh observed. Zero for a cluster not created yet.
type Prior struct {
	// Spec is the configuration as last applied (nil when the state has none: a create, or a create
	// resumed after an interruption).
	Spec *Spec
	// Members are the members recorded in state (their identities never change).
	Members []Member
}

// MemberNames are the names of p's members, in order.
func (p Prior) MemberNames() []string {
	out := make([]string, len(p.Members))
	for i, m := range p.Members {
		out[i] = m.Name
	}
	return out
}

// Plan is what a platform expects the cluster to look like after an apply.
type Plan struct {
	PostgresMajor int
	// Members as they will be: every desired node running.
	Members []Member
	// Promoting is true when the apply promotes a standby: which one wins is decided again at apply from
	// the live WAL positions, so the roles (and the primary's endpoint) are not known in advance. A platform
	// also sets it when the members' addresses are not known before the apply (a new cluster on EC2).
	Promoting bool
	// Actions are the repair and replacement steps the apply takes, in order ("" when none): one line each.
	Actions string
	// Replaces is true when the apply replaces instances (the aws platform): their IDs are not known
	// until then. Actions without it change the cluster in place (configuration, restarts).
	Replaces bool
	// Membership is true when the apply adds or removes nodes (the aws platform): their interfaces and
	// addresses change with them.
	Membership bool
	// Platform is the platform's own planned status (values it cannot know yet are empty and planned as
	// unknown); nil for none.
	Platform PlatformStatus
	// TLS is the cluster's certificates after the apply (those it makes or renews empty: unknown); nil
	// without TLS.
	TLS *TLSStatus
}

// Planned is what members will look like after steps run (topology.Steps of a cluster the engine promotes
// in): every member running, roles carried over from known (by name) except where the steps change them; a
// member with no known role is a standby, or the primary when the cluster is being created and it comes
// first. promoting is true when a promotion is among the steps.
func Planned(members []Member, known map[string]string, steps []topology.Step, creating bool) (planned []Member, promoting bool) {
	roles := map[string]string{}
	for name, role := range known {
		roles[name] = role
	}
	for _, s := range steps {
		switch s.Kind {
		case topology.StepPromote:
			promoting = true
		case topology.StepForm, topology.StepRestore: // the primary, new or made from the archive
			for _, n := range s.Nodes {
				roles[n] = RolePrimary
			}
		case topology.StepAdd, topology.StepReplace, topology.StepReseed:
			roles[s.Node] = RoleStandby
		}
	}
	for i, m := range members {
		role := roles[m.Name]
		if role == "" {
			role = RoleStandby
			if creating && i == 0 {
				role = RolePrimary
			}
		}
		m.Role, m.State = role, StateRunning
		planned = append(planned, m)
	}
	return planned, promoting
}

// ConnectionURI is the libpq URI of the primary among members, without a password; ok is false when no
// single primary is known.
func ConnectionURI(members []Member, user, database string) (uri string, primary Member, ok bool) {
	var found []Member
	for _, m := range members {
		if m.Role == RolePrimary {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		return "", Member{}, false
	}
	p := found[0]
	return fmt.Sprintf("postgresql://%s@%s/%s", user, net.JoinHostPort(p.Host, strconv.Itoa(p.Port)), database), p, true
}

// Connector is a PlatformStatus whose clients reach the cluster otherwise than at its one primary
// (ConnectionURI): on EC2 every node in one URI, libpq choosing the writable one (or a standby) itself, so
// that clients follow a failover without a new apply.
type Connector interface {
	ClientURIs(members []Member) (readWrite, readOnly string)
}

// Connection is how clients connect to a cluster.
type Connection struct {
	// ReadWrite and ReadOnly are the connection URIs ("" when there is none: ReadOnly where the platform
	// offers no read-only one, ReadWrite where no one primary runs and the platform does not connect on).
	ReadWrite, ReadOnly string
	// Primary is the one primary among the members, nil when there is not exactly one.
	Primary *Member
	// ReadOnlyOffered is true when the platform offers a read-only URI (a Connector), even where ReadOnly
	// is "" for now (no member has an address yet).
	ReadOnlyOffered bool
}

// ConnectionOf is how clients connect to the cluster of members on the platform that reported platform
// (nil when unknown): the platform's own URIs (Connector), else the one primary's address; with the
// cluster's TLS as read (tls, nil without TLS) each URI asks for sslmode=verify-full, with the authority's
// file where it has one (local), so a client that copies it verifies the server.
func ConnectionOf(members []Member, platform PlatformStatus, tls *TLSStatus) Connection {
	var c Connection
	if uri, p, ok := ConnectionURI(members, "postgres", "postgres"); ok {
		c.ReadWrite, c.Primary = uri, &p
	}
	if k, ok := platform.(Connector); ok {
		c.ReadWrite, c.ReadOnly = k.ClientURIs(members)
		c.ReadOnlyOffered = true
	}
	c.ReadWrite, c.ReadOnly = withTLS(c.ReadWrite, tls), withTLS(c.ReadOnly, tls)
	return c
}

// withTLS is uri asking for TLS verified against tls's authority; uri as it is without TLS (or uri).
func withTLS(uri string, tls *TLSStatus) string {
	if tls == nil || uri == "" {
		return uri
	}
	q := url.Values{}
	q.Set("sslmode", "verify-full")
	if tls.CAFile != "" {
		q.Set("sslrootcert", tls.CAFile)
	}
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	return uri + sep + q.Encode()
}

// RestoreResult is what a cluster's restore from an archive did: where from, which base backup, and how
// far its recovery went.
type RestoreResult struct {
	// From is the archive restored from (archive.Location's words).
	From string `json:"from"`
	// Backup is the base backup's name, BackupFinishedAt when it finished, BackupBytes the database's size
	// in it (what the restore wrote before replaying WAL).
	Backup           string    `json:"backup"`
	BackupFinishedAt time.Time `json:"backup_finished_at"`
	BackupBytes      int64     `json:"backup_bytes"`
	// Target is the target as the plan said it (archive.Target's words).
	Target string `json:"target"`
	// ReachedLSN is the last WAL record replayed (pg_last_wal_replay_lsn), ReachedTime the commit time of the
	// last transaction replayed (pg_last_xact_replay_timestamp; zero when none was), and Timeline the new
	// timeline the restored primary writes.
	ReachedLSN  string    `json:"reached_lsn"`
	ReachedTime time.Time `json:"reached_time"`
	Timeline    int       `json:"timeline"`
	// WALReplayedBytes is the WAL replayed after the backup's start (ReachedLSN minus its start position).
	WALReplayedBytes int64 `json:"wal_replayed_bytes"`
	// Seconds is how long the restore took, from the first byte fetched to the end of recovery;
	// FinishedAt when it ended.
	Seconds    float64   `json:"seconds"`
	FinishedAt time.Time `json:"finished_at"`
}

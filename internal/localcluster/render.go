package localcluster

import (
	"fmt"
	"maps"
	"path/filepath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// loopbackCIDR is the only network local members accept connections from.
const loopbackCIDR = "127.0.0.1/32"

// cluster is s as bootstrap's platform-neutral cluster for one member: the
// pgBackRest options get the platform's additions for that member (its own
// lock-path, start-fast so a backup does not wait for a checkpoint) unless
// the user set them.
func (m *Manager) cluster(s Spec, major int, mb Member) bootstrap.Cluster {
	return clusterOf(s, major, mb)
}

func clusterOf(s Spec, major int, mb Member) bootstrap.Cluster {
	c := bootstrap.Cluster{
		Name:          s.Name,
		PostgresMajor: major,
		Nodes:         s.names(),
		Synchronous:   s.Synchronous,
		Parameters:    s.Parameters,
	}
	if s.Archive != nil {
		a := *s.Archive
		if len(a.PgBackRestOptions) > 0 {
			a.PgBackRestOptions = maps.Clone(a.PgBackRestOptions)
			setDefault(a.PgBackRestOptions, "lock-path", filepath.Join(pgBackRestDir(mb), "lock"))
			setDefault(a.PgBackRestOptions, "start-fast", "y")
		}
		c.Archive = &a
	}
	return c
}

func setDefault(opts map[string]string, k, v string) {
	if _, ok := opts[k]; !ok {
		opts[k] = v
	}
}

// bootNode is mb as bootstrap's node with role, following primary when it
// is a standby.
func (m *Manager) bootNode(mb Member, role localnode.Role, primary Member) bootstrap.Node {
	return bootNodeOf(mb, role, primary, m.engine.Superuser(), m.pgbackrest)
}

func bootNodeOf(mb Member, role localnode.Role, primary Member, superuser, pgbackrest string) bootstrap.Node {
	n := Node(mb, role)
	b := bootstrap.Node{
		Name:            mb.Name,
		Role:            bootstrap.Role(role),
		Port:            mb.Port,
		DataDir:         filepath.Clean(mb.DataDir),
		SocketDir:       n.SocketDir(),
		ReplicationUser: superuser,
		AllowedCIDRs:    []string{loopbackCIDR},
	}
	if role == localnode.RoleStandby {
		b.PrimaryHost, b.PrimaryPort = Host, primary.Port
	}
	dir := pgBackRestDir(mb)
	b.PgBackRestConfigPath = filepath.Join(dir, "pgbackrest.conf")
	b.PgBackRestLogDir = filepath.Join(dir, "log")
	b.PgBackRestSpoolDir = filepath.Join(dir, "spool")
	b.ArchiverPath = pgbackrest
	return b
}

// render renders member mb with role (a standby following primary). When
// ssn is not nil it replaces synchronous_standby_names (the effective value
// for the current health, or "" while a cluster is being built).
func (m *Manager) render(s Spec, major int, mb Member, role localnode.Role, primary Member, ssn *string) (bootstrap.Rendered, error) {
	r, err := bootstrap.Render(m.cluster(s, major, mb), m.bootNode(mb, role, primary))
	if err != nil {
		return bootstrap.Rendered{}, fmt.Errorf("rendering the configuration of %s: %w", mb.Name, err)
	}
	if ssn != nil {
		r.Parameters["synchronous_standby_names"] = *ssn
	}
	return r, nil
}

package localcluster

import (
	"context"
	"fmt"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
)

// The adapter's SQL all runs through pgclient: each helper opens a session
// to one member as the superuser, runs what it needs and closes it.

// connect opens a pgclient session to member mb as the superuser.
func (m *Manager) connect(ctx context.Context, mb Member) (*pgclient.Conn, error) {
	return pgclient.Connect(ctx, m.connConfig(mb))
}

// connConfig is the superuser's session to member mb: over TLS verified against the cluster's authority,
// with the client certificate, when mb serves TLS; plain TCP otherwise.
func (m *Manager) connConfig(mb Member) pgclient.Config {
	c := pgclient.Config{
		Host: Host, Port: mb.Port, Database: "postgres", User: m.engine.Superuser(),
		SSLMode: "disable", ConnectTimeout: 5 * time.Second, ApplicationName: "pgnvme-localcluster",
	}
	if t := mb.TLS; t != nil {
		c.SSLMode, c.SSLRootCert, c.SSLCert, c.SSLKey = "verify-full", t.CAFile, t.ClientCertFile, t.ClientKeyFile
	}
	return c
}

// position reads a running member's role, WAL positions and timeline
// (pgclient.WALPosition).
func (m *Manager) position(ctx context.Context, mb Member) (pgclient.WALPosition, error) {
	conn, err := m.connect(ctx, mb)
	if err != nil {
		return pgclient.WALPosition{}, fmt.Errorf("reading the WAL position of %s: %w", mb.Name, err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	p, err := conn.WALPosition(ctx)
	if err != nil {
		return pgclient.WALPosition{}, fmt.Errorf("reading the WAL position of %s: %w", mb.Name, err)
	}
	return p, nil
}

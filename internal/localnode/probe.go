package localnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
)

// Psql runs sql in database db (default "postgres") on n through psql over
// TCP as the superuser, with psql's -X -A -t -q -v ON_ERROR_STOP=1, and
// returns its unaligned, tuples-only output without the final newline. For
// tests and simple probes; the provider's SQL goes through pgclient.
func (e *Engine) Psql(ctx context.Context, n Node, db, sql string) (string, error) {
	if db == "" {
		db = "postgres"
	}
	cmd := e.clientCmd(ctx, n, "psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1",
		"-h", n.Host, "-p", strconv.Itoa(n.Port), "-U", e.superuser, "-d", db, "-c", sql)
	out, _, err := run(cmd)
	if err != nil {
		return "", fmt.Errorf("psql on %s (%s:%d, database %s): %w", n.Name, n.Host, n.Port, db, err)
	}
	return strings.TrimSuffix(out, "\n"), nil
}

// LogTail is the last lines of n's server log, or a note saying why there
// are none. It reads at most the last 256 KiB.
func (e *Engine) LogTail(n Node, lines int) string { return TailFile(n.LogFile(), lines) }

// PortFree reports whether host:port can be bound now: nil when it can, else
// an error saying the port is taken.
func PortFree(host string, port int) error {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("port %d on %s is in use by another process: choose another port (or stop that process): %w", port, host, err)
		}
		return fmt.Errorf("port %d on %s cannot be bound: %w", port, host, err)
	}
	return l.Close()
}

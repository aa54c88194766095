package localnode

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Role is what a node does in its cluster.
type Role string

const (
	// RolePrimary takes writes and streams WAL to the standbys.
	RolePrimary Role = "primary"
	// RoleStandby replays the primary's WAL (hot standby, read-only).
	RoleStandby Role = "standby"
)

// Node is a value: a name, a role, where it listens, where its data lives.
// The engine keeps no state about nodes; everything it needs is derived from
// these fields and the files in DataDir.
type Node struct {
	// Name identifies the node in its cluster; it is also the standby's
	// application_name (what synchronous_standby_names refers to) and the
	// base name of its log file. Letters, digits, '_' and '-', at most 63
	// bytes, starting with a letter, digit or '_'.
	Name string
	// Role is the node's role when it was created. The engine does not update
	// it: after Promote the caller holds a new value.
	Role Role
	// Host is the loopback address the node listens on, e.g. "127.0.0.1".
	Host string
	// Port is the node's TCP port on Host.
	Port int
	// DataDir is the node's data directory: an absolute path.
	DataDir string
	// TLS, when set, makes the node serve TLS only and its clients (the engine's, a standby's replication
	// connection) verify it; nil: plain TCP.
	TLS *TLS
}

// TLS is a node's TLS: its server certificate, and the cluster's certificate authority and superuser
// client certificate. With it the node's pgnvme.conf turns ssl on with these files (TLS 1.2 at least,
// unless parameters raise ssl_min_protocol_version), its pg_hba.conf rejects every TCP connection without
// TLS and authenticates replication by client certificate (its common name is the superuser), and every
// client the engine starts, pg_basebackup's and a standby's primary_conninfo included, connects with
// sslmode=verify-full against CAFile presenting the client certificate. Every path is absolute; the key
// files are the run user's, mode 0600 (PostgreSQL and libpq refuse others).
type TLS struct {
	CAFile         string
	CertFile       string
	KeyFile        string
	ClientCertFile string
	ClientKeyFile  string
}

// files are t's paths with what each is, for Validate.
func (t *TLS) files() [][2]string {
	return [][2]string{{"CA file", t.CAFile}, {"certificate file", t.CertFile}, {"key file", t.KeyFile},
		{"client certificate file", t.ClientCertFile}, {"client key file", t.ClientKeyFile}}
}

// libpq is t as libpq's connection parameters: verify-full against the CA, with the client certificate.
func (t *TLS) libpq() [][2]string {
	if t == nil {
		return nil
	}
	return [][2]string{{"sslmode", "verify-full"}, {"sslrootcert", t.CAFile}, {"sslcert", t.ClientCertFile}, {"sslkey", t.ClientKeyFile}}
}

// Env is t as libpq's environment (PGSSLMODE=verify-full, PGSSLROOTCERT, PGSSLCERT, PGSSLKEY), for a
// client program run against a node with t; none for nil.
func (t *TLS) Env() []string {
	var out []string
	for _, kv := range t.libpq() {
		out = append(out, "PG"+strings.ToUpper(kv[0])+"="+kv[1])
	}
	return out
}

// namePattern is what Node.Name may be: safe in a libpq connection string,
// in a file name, and within NAMEDATALEN for application_name.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]{0,62}$`)

// Validate reports every problem with n's fields at once.
func (n Node) Validate() error {
	var errs []error
	if !namePattern.MatchString(n.Name) {
		errs = append(errs, fmt.Errorf("node name %q: use 1 to 63 letters, digits, '_' or '-', not starting with '-'", n.Name))
	}
	if n.Role != RolePrimary && n.Role != RoleStandby {
		errs = append(errs, fmt.Errorf("node %s: role %q: use %q or %q", n.Name, n.Role, RolePrimary, RoleStandby))
	}
	if ip := net.ParseIP(n.Host); ip == nil || !ip.IsLoopback() {
		errs = append(errs, fmt.Errorf("node %s: host %q: the local platform listens on a loopback IP address only (e.g. 127.0.0.1), "+
			"because its nodes trust every connection from it", n.Name, n.Host))
	}
	if n.Port < 1 || n.Port > 65535 {
		errs = append(errs, fmt.Errorf("node %s: port %d: use 1 to 65535", n.Name, n.Port))
	}
	if !filepath.IsAbs(n.DataDir) || filepath.Clean(n.DataDir) == "/" {
		errs = append(errs, fmt.Errorf("node %s: data directory %q: use an absolute path below /", n.Name, n.DataDir))
	}
	if n.TLS != nil {
		for _, f := range n.TLS.files() {
			if !filepath.IsAbs(f[1]) || !socketDirPattern.MatchString(f[1]) {
				errs = append(errs, fmt.Errorf("node %s: TLS %s %q: use an absolute path of letters, digits, '/', '.', '_' and '-' (it is written into connection strings unquoted)", n.Name, f[0], f[1]))
			}
		}
	}
	return errors.Join(errs...)
}

// dataDir is n.DataDir cleaned.
func (n Node) dataDir() string { return filepath.Clean(n.DataDir) }

// LogFile is the node's server log: <name>.log next to its data directory.
func (n Node) LogFile() string {
	return filepath.Join(filepath.Dir(n.dataDir()), n.Name+".log")
}

// maxSocketPath is the longest Unix socket path PostgreSQL accepts: sun_path
// holds 108 bytes with the terminating NUL.
const maxSocketPath = 107

// socketDirPattern is what a directory must look like to be written into
// unix_socket_directories unquoted and unambiguously (it is a comma-separated
// list).
var socketDirPattern = regexp.MustCompile(`^[A-Za-z0-9/._-]+$`)

// SocketDir is the node's Unix socket directory: its data directory when the
// socket path (DIR/.s.PGSQL.PORT) fits PostgreSQL's 107-byte limit and the
// path has no unusual characters, else /tmp/pgnvme-<12 hex digits of the
// SHA-256 of the data directory path>, made and removed by the engine with
// the node. Clients in this package connect over TCP; the socket serves
// local administration (psql -h SOCKETDIR).
func (n Node) SocketDir() string {
	dir := n.dataDir()
	if len(dir)+len("/.s.PGSQL.")+len(strconv.Itoa(n.Port)) <= maxSocketPath && socketDirPattern.MatchString(dir) {
		return dir
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join("/tmp", "pgnvme-"+hex.EncodeToString(sum[:6]))
}

// hbaAddress is the pg_hba address that matches clients of a node listening
// on host: loopback connections to 127.x come from 127.0.0.1.
func hbaAddress(host string) string {
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return "::1/128"
	}
	return "127.0.0.1/32"
}

// conninfo is a libpq connection string to n as user, with application_name
// when it is not empty. Every value is validated to need no quoting.
func conninfo(n Node, user, applicationName string) string {
	s := fmt.Sprintf("host=%s port=%d user=%s", n.Host, n.Port, user)
	if applicationName != "" {
		s += " application_name=" + applicationName
	}
	for _, kv := range n.TLS.libpq() {
		s += " " + kv[0] + "=" + kv[1]
	}
	return s
}

// Package pgclient is the provider's adapter to PostgreSQL: it opens pgx
// connections and runs every SQL statement the provider needs (server facts,
// ALTER SYSTEM and reload, replication and archiver status, wait-event
// samples). Other packages hold no SQL; they declare small interfaces that
// *Conn satisfies.
//
// Identifiers are quoted with pgx.Identifier.Sanitize and values are passed
// as parameters or, where PostgreSQL takes none (ALTER SYSTEM), as quoted
// string literals: never formatted into SQL as they are.
package pgclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// SSLModes are the accepted values of Config.SSLMode, with libpq's meanings
// (as pgx implements them): disable (no TLS), allow (plain text first, TLS if
// the server insists), prefer (TLS first, plain text if the server has no
// TLS), require (TLS, certificate not checked, unless a root certificate is
// configured through PGSSLROOTCERT), verify-ca (TLS with a certificate signed
// by a trusted CA) and verify-full (verify-ca plus the host name).
var SSLModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// DefaultConnectTimeout is Config.ConnectTimeout's default.
const DefaultConnectTimeout = 10 * time.Second

// DefaultApplicationName is Config.ApplicationName's default: the
// application_name the provider's sessions show in pg_stat_activity.
const DefaultApplicationName = "pgnvme"

// Config says how to reach one PostgreSQL server. Empty fields take libpq's
// defaults, including its environment variables (PGHOST, PGPORT, PGDATABASE,
// PGUSER, PGSSLMODE, ...). Its String method hides the password.
type Config struct {
	// Host is a host name, an IP address or a Unix-socket directory (starting
	// with "/"). Empty: PGHOST, else the default socket directory.
	Host string
	// Port is the TCP port (1-65535). 0: PGPORT, else 5432.
	Port int
	// Database is the database name. Empty: PGDATABASE, else the user name.
	Database string
	// User is the role to log in as. Empty: PGUSER, else the OS user.
	User string
	// Password is the role's password; empty falls back to PGPASSWORD, then
	// the password file (PGPASSFILE or ~/.pgpass). It is never logged and
	// never appears in errors.
	Password string
	// SSLMode is one of SSLModes. Empty: PGSSLMODE, else "prefer".
	SSLMode string
	// SSLRootCert is a file of the certificate authorities the server's certificate is checked against
	// (libpq's sslrootcert: with verify-ca and verify-full, and with require, which then checks as
	// verify-ca). SSLCert and SSLKey are the client's certificate and private key files (libpq's sslcert and
	// sslkey), for servers that authenticate clients by certificate: both or neither. Empty: libpq's
	// environment (PGSSLROOTCERT, PGSSLCERT, PGSSLKEY), else none.
	SSLRootCert, SSLCert, SSLKey string
	// RootCAs are the certificate authorities the server's certificate is checked against when they are
	// held in memory, not in a file (the provider's own connections to a cluster whose authority it read
	// from SSM): in place of SSLRootCert, with verify-ca or verify-full.
	RootCAs *x509.CertPool
	// ClientCert is a client certificate and its key held in memory, not in files (the provider's own login
	// to a cluster with TLS, by a certificate it issues for the session): in place of SSLCert and SSLKey.
	ClientCert *tls.Certificate
	// ConnectTimeout bounds each connection attempt. 0: DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// ApplicationName is the session's application_name. Empty:
	// DefaultApplicationName.
	ApplicationName string
}

// String describes the configuration without its password.
func (c Config) String() string {
	pw := ""
	if c.Password != "" {
		pw = " password=<hidden>"
	}
	tls := ""
	for _, f := range []struct{ key, value string }{{"sslrootcert", c.SSLRootCert}, {"sslcert", c.SSLCert}, {"sslkey", c.SSLKey}} {
		if f.value != "" {
			tls += fmt.Sprintf(" %s=%q", f.key, f.value)
		}
	}
	if c.RootCAs != nil {
		tls += " sslrootcert=<in memory>"
	}
	if c.ClientCert != nil {
		tls += " sslcert=<in memory>"
	}
	return fmt.Sprintf("host=%q port=%d database=%q user=%q%s sslmode=%q%s connect_timeout=%s application_name=%q",
		c.Host, c.Port, c.Database, c.User, pw, c.SSLMode, tls, c.ConnectTimeout, c.ApplicationName)
}

// GoString is String, so that %#v does not print the password either.
func (c Config) GoString() string { return "pgclient.Config{" + c.String() + "}" }

// Validate reports the first field that cannot work, or nil. It checks the
// SSL mode against SSLModes, the port range, a single host, a non-negative
// timeout and the absence of NUL bytes (which no connection string or
// startup packet can carry).
func (c Config) Validate() error {
	if c.SSLMode != "" && !slices.Contains(SSLModes, c.SSLMode) {
		return fmt.Errorf("sslmode %q is not supported: use one of %s", c.SSLMode, strings.Join(SSLModes, ", "))
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("port %d is out of range: use a TCP port from 1 to 65535 (0 for the default, 5432)", c.Port)
	}
	if strings.Contains(c.Host, ",") {
		return fmt.Errorf("host %q lists several hosts: give one host name, IP address or Unix-socket directory", c.Host)
	}
	if c.ConnectTimeout < 0 {
		return fmt.Errorf("connect timeout %s is negative", c.ConnectTimeout)
	}
	if (c.SSLCert == "") != (c.SSLKey == "") {
		return fmt.Errorf("a client certificate needs its key and the key its certificate: give both sslcert and sslkey, or neither")
	}
	if c.RootCAs != nil && c.SSLRootCert != "" {
		return fmt.Errorf("give the certificate authorities once: as sslrootcert (a file) or in memory, not both")
	}
	if c.RootCAs != nil && c.SSLMode != "verify-ca" && c.SSLMode != "verify-full" {
		return fmt.Errorf("certificate authorities in memory are used only to verify the server: use sslmode verify-full (or verify-ca), not %q", c.SSLMode)
	}
	if c.ClientCert != nil && c.SSLCert != "" {
		return fmt.Errorf("give the client certificate once: as sslcert and sslkey (files) or in memory, not both")
	}
	if c.ClientCert != nil && (c.SSLMode == "disable" || c.SSLMode == "allow" || c.SSLMode == "prefer") {
		return fmt.Errorf("a client certificate in memory is sent only over TLS: use sslmode verify-full (or require), not %q", c.SSLMode)
	}
	if c.SSLMode == "disable" && (c.SSLRootCert != "" || c.SSLCert != "") {
		return fmt.Errorf("sslmode disable makes no TLS connection, so sslrootcert, sslcert and sslkey would be ignored: use verify-full (or require), or remove them")
	}
	for _, f := range []struct{ name, value string }{
		{"host", c.Host}, {"database", c.Database}, {"user", c.User},
		{"password", c.Password}, {"application name", c.ApplicationName},
		{"sslrootcert", c.SSLRootCert}, {"sslcert", c.SSLCert}, {"sslkey", c.SSLKey},
	} {
		if strings.IndexByte(f.value, 0) >= 0 {
			return fmt.Errorf("%s contains a NUL byte, which PostgreSQL connections cannot carry", f.name)
		}
	}
	return nil
}

// dsn renders c as a libpq keyword/value connection string with every value
// quoted, and without the password (Connect sets that on the parsed
// configuration, so it is never part of a string that could be printed).
func (c Config) dsn() string {
	var parts []string
	add := func(key, value string) {
		if value != "" {
			parts = append(parts, key+"="+quoteDSNValue(value))
		}
	}
	add("host", c.Host)
	if c.Port != 0 {
		add("port", strconv.Itoa(c.Port))
	}
	add("dbname", c.Database)
	add("user", c.User)
	add("sslmode", c.SSLMode)
	add("sslrootcert", c.SSLRootCert)
	add("sslcert", c.SSLCert)
	add("sslkey", c.SSLKey)
	appName := c.ApplicationName
	if appName == "" {
		appName = DefaultApplicationName
	}
	add("application_name", appName)
	return strings.Join(parts, " ")
}

// quoteDSNValue quotes one keyword/value connection-string value: single
// quotes around it, with backslashes and single quotes escaped by a
// backslash, as libpq reads them.
func quoteDSNValue(v string) string {
	v = strings.ReplaceAll(v, `\`, `\\`)
	v = strings.ReplaceAll(v, `'`, `\'`)
	return "'" + v + "'"
}

// Conn is one open session with a PostgreSQL server. It is not safe for
// concurrent use: open one Conn per goroutine.
type Conn struct {
	conn   *pgx.Conn
	target string
	// pollInterval is how often WaitSetting reads the setting again.
	pollInterval time.Duration
	// clock times WaitSetting (wait.Real; tests set a wait.StepClock).
	clock wait.Clock
}

// SessionLogMessage is the debug log's message for every PostgreSQL session the provider opens (with
// TF_LOG_PROVIDER=DEBUG; `make bench` counts them).
const SessionLogMessage = "postgres session"

// Connect opens a session described by c. Errors name the server as
// user@host:port/database and carry the server's own message (for example
// `password authentication failed for user "app" (SQLSTATE 28P01)`), never
// the password.
func Connect(ctx context.Context, c Config) (*Conn, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("invalid PostgreSQL connection settings: %w", err)
	}
	cfg, err := pgx.ParseConfig(c.dsn())
	if err != nil {
		return nil, fmt.Errorf("invalid PostgreSQL connection settings (%s): %w", c.String(), err)
	}
	if c.Password != "" {
		cfg.Password = c.Password
	}
	if c.RootCAs != nil {
		// pgx verifies verify-ca and verify-full against RootCAs (the system's when nil): for each
		// address it may try.
		for _, t := range append([]*tls.Config{cfg.TLSConfig}, fallbackTLS(cfg)...) {
			if t != nil {
				t.RootCAs = c.RootCAs
			}
		}
	}
	if c.ClientCert != nil {
		for _, t := range append([]*tls.Config{cfg.TLSConfig}, fallbackTLS(cfg)...) {
			if t != nil {
				t.Certificates = []tls.Certificate{*c.ClientCert}
			}
		}
	}
	cfg.ConnectTimeout = c.ConnectTimeout
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	target := targetOf(cfg.Host, cfg.Port, cfg.Database)
	// How the session proves who it is, for the log: a client certificate (in memory or a file) or not.
	clientCert := c.ClientCert != nil || cfg.TLSConfig != nil && len(cfg.TLSConfig.Certificates) > 0
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		tflog.Debug(ctx, SessionLogMessage, map[string]any{"target": cfg.User + "@" + target, "client_certificate": clientCert, "error": err.Error()})
		return nil, &ConnectError{Target: cfg.User + "@" + target, noPassword: cfg.Password == "" && !clientCert, err: err}
	}
	tflog.Debug(ctx, SessionLogMessage, map[string]any{"target": cfg.User + "@" + target, "client_certificate": clientCert})
	return &Conn{conn: conn, target: target, pollInterval: 100 * time.Millisecond, clock: wait.Real}, nil
}

// fallbackTLS are the TLS configurations of cfg's fallbacks (the other addresses of its host).
func fallbackTLS(cfg *pgx.ConnConfig) []*tls.Config {
	var out []*tls.Config
	for _, f := range cfg.Fallbacks {
		out = append(out, f.TLSConfig)
	}
	return out
}

// targetOf writes host:port/database, with IPv6 addresses in brackets.
func targetOf(host string, port uint16, database string) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port))) + "/" + database
}

// Target is the server this session is connected to, as host:port/database.
func (c *Conn) Target() string { return c.target }

// Close ends the session.
func (c *Conn) Close(ctx context.Context) error {
	if err := c.conn.Close(ctx); err != nil {
		return fmt.Errorf("closing the connection to %s: %w", c.target, err)
	}
	return nil
}

// ConnectError is the error Connect returns when the server cannot be
// reached or refuses the session. It unwraps to pgx's error, so
// *pgconn.PgError (and this package's Is* helpers) still apply.
type ConnectError struct {
	// Target is user@host:port/database.
	Target     string
	noPassword bool
	err        error
}

// Error says which server refused and why, in the server's words when it
// answered.
func (e *ConnectError) Error() string {
	msg := e.err.Error()
	var pgErr *pgconn.PgError
	var ce *pgconn.ConnectError
	switch {
	case errors.As(e.err, &pgErr):
		msg = describePgError(pgErr)
		if (pgErr.Code == codeInvalidPassword || pgErr.Code == codeInvalidAuthorization) && e.noPassword {
			msg += ": no password was given (set one, or PGPASSWORD)"
		}
	case errors.As(e.err, &ce) && errors.Unwrap(ce) != nil:
		msg = errors.Unwrap(ce).Error() // pgx's prefix repeats user and database
	}
	return "connecting to PostgreSQL at " + e.Target + ": " + msg
}

// Unwrap returns pgx's error.
func (e *ConnectError) Unwrap() error { return e.err }

// ServedCertificate is the certificate the PostgreSQL server at host:port presents (an SSLRequest, then a
// TLS handshake verified against roots for host), without logging in.
func ServedCertificate(ctx context.Context, host string, port int, roots *x509.CertPool) (*x509.Certificate, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w", addr, err)
	}
	defer raw.Close()
	return ServedCertificateOn(ctx, raw, &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: host})
}

// ServedCertificateOn is ServedCertificate on a connection the caller dialled (closing it is the caller's),
// with cfg for the handshake.
func ServedCertificateOn(ctx context.Context, raw net.Conn, cfg *tls.Config) (*x509.Certificate, error) {
	addr := raw.RemoteAddr().String()
	if dl, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(dl)
	}
	// SSLRequest: length 8, code 80877103; a server with TLS answers 'S', and the handshake follows.
	if _, err := raw.Write([]byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}); err != nil {
		return nil, fmt.Errorf("asking PostgreSQL at %s for TLS: %w", addr, err)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(raw, b); err != nil {
		return nil, fmt.Errorf("asking PostgreSQL at %s for TLS: %w", addr, err)
	}
	if b[0] != 'S' {
		return nil, fmt.Errorf("PostgreSQL at %s serves no TLS (it answered %q to an SSLRequest)", addr, b)
	}
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("TLS handshake with PostgreSQL at %s: %w", addr, err)
	}
	return conn.ConnectionState().PeerCertificates[0], nil
}

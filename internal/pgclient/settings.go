package pgclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// ServerVersion returns the server's version as SHOW server_version prints
// it, for example "15.13 (Debian 15.13-1.pgdg120+1)".
func (c *Conn) ServerVersion(ctx context.Context) (string, error) {
	var v string
	err := c.conn.QueryRow(ctx, "SHOW server_version").Scan(&v)
	return v, c.wrap("reading server_version", err)
}

// ServerVersionNum returns server_version_num, for example 150013 for
// 15.13.
func (c *Conn) ServerVersionNum(ctx context.Context) (int, error) {
	var v int
	err := c.conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&v)
	return v, c.wrap("reading server_version_num", err)
}

// IsInRecovery reports whether the server is a standby (or a primary still
// replaying WAL): pg_is_in_recovery().
func (c *Conn) IsInRecovery(ctx context.Context) (bool, error) {
	var v bool
	err := c.conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&v)
	return v, c.wrap("checking pg_is_in_recovery()", err)
}

// RequirePrimary returns nil on a primary, and an error wrapping
// ErrNotPrimary that names the server on a standby.
func (c *Conn) RequirePrimary(ctx context.Context) error {
	standby, err := c.IsInRecovery(ctx)
	if err != nil {
		return err
	}
	if standby {
		return fmt.Errorf("%s: %w: connect to the primary instead", c.target, ErrNotPrimary)
	}
	return nil
}

// Setting returns the session's current value of a configuration parameter,
// as current_setting(name) (and SHOW) print it. An unknown name is an error
// for which IsUnknownParameter is true.
func (c *Conn) Setting(ctx context.Context, name string) (string, error) {
	var v string
	err := c.conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, c.wrap(fmt.Sprintf("reading setting %s", name), err)
}

// AlterSystemSet runs ALTER SYSTEM SET name = 'value': it writes the setting
// to postgresql.auto.conf, which takes effect on ReloadConf (or a restart,
// for parameters that need one). The name is quoted as an identifier and the
// value as a string literal; PostgreSQL checks both (IsUnknownParameter,
// IsInvalidParameterValue) and needs superuser or ALTER SYSTEM privilege on
// the parameter (IsInsufficientPrivilege).
//
// The value is always one string literal: for list parameters marked
// GUC_LIST_QUOTE (search_path, shared_preload_libraries, ...) PostgreSQL
// takes it as a single element. ALTER SYSTEM also works on a standby; use
// RequirePrimary first where that matters.
func (c *Conn) AlterSystemSet(ctx context.Context, name, value string) error {
	if strings.IndexByte(value, 0) >= 0 {
		return fmt.Errorf("setting %s on %s: the value contains a NUL byte, which PostgreSQL settings cannot hold", name, c.target)
	}
	sql := "ALTER SYSTEM SET " + quoteIdent(name) + " = " + quoteLiteral(value)
	_, err := c.conn.Exec(ctx, sql)
	return c.wrap(fmt.Sprintf("ALTER SYSTEM SET %s", name), err)
}

// AlterSystemReset runs ALTER SYSTEM RESET name: it removes the setting from
// postgresql.auto.conf, so that postgresql.conf's value (or the default)
// applies after ReloadConf.
func (c *Conn) AlterSystemReset(ctx context.Context, name string) error {
	_, err := c.conn.Exec(ctx, "ALTER SYSTEM RESET "+quoteIdent(name))
	return c.wrap(fmt.Sprintf("ALTER SYSTEM RESET %s", name), err)
}

// ReloadConf asks the server to reread its configuration files
// (pg_reload_conf()). The reload is asynchronous: use WaitSetting to see it
// applied.
func (c *Conn) ReloadConf(ctx context.Context) error {
	var ok bool
	if err := c.conn.QueryRow(ctx, "SELECT pg_reload_conf()").Scan(&ok); err != nil {
		return c.wrap("reloading the configuration", err)
	}
	if !ok {
		return fmt.Errorf("reloading the configuration on %s: pg_reload_conf() returned false (the postmaster could not be signalled)", c.target)
	}
	return nil
}

// WaitSetting reads the setting name (as Setting does) until it equals want,
// for at most timeout: a reload reaches a session only between statements
// after the postmaster has signalled it. The timeout error names the value
// last read. Parameters that need a restart never change this way.
func (c *Conn) WaitSetting(ctx context.Context, name, want string, timeout time.Duration) error {
	var got string
	var readErr error
	what := fmt.Sprintf("setting %s on %s to become %q", name, c.target, want)
	err := wait.Until(ctx, what, timeout, c.pollInterval, c.clock, func(ctx context.Context) (bool, error) {
		if got, readErr = c.Setting(ctx, name); readErr != nil {
			return false, readErr
		}
		return got == want, nil
	})
	var te *wait.TimeoutError
	switch {
	case err == nil, readErr != nil:
		return err
	case errors.As(err, &te):
		return fmt.Errorf("waiting for setting %s on %s to become %q: it is still %q after %s", name, c.target, want, got, timeout)
	case ctx.Err() != nil:
		return fmt.Errorf("waiting for setting %s on %s to become %q (it is %q): %w", name, c.target, want, got, ctx.Err())
	default:
		return err
	}
}

// quoteIdent quotes a configuration parameter name as an SQL identifier.
// PostgreSQL matches parameter names ignoring case, quoted or not.
func quoteIdent(name string) string { return pgx.Identifier{name}.Sanitize() }

// quoteLiteral writes value as an SQL string literal. With a backslash it
// uses the E” form, with backslashes doubled, so that the value reads the
// same whatever standard_conforming_strings is.
func quoteLiteral(value string) string {
	q := "'" + strings.ReplaceAll(value, "'", "''") + "'"
	if strings.Contains(value, `\`) {
		q = "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}

// PendingRestart maps each setting whose configuration file value waits for a restart
// (pg_settings.pending_restart, after a reload) to the value the server runs with now.
func (c *Conn) PendingRestart(ctx context.Context) (map[string]string, error) {
	rows, err := c.conn.Query(ctx, "SELECT name, setting FROM pg_settings WHERE pending_restart")
	if err != nil {
		return nil, c.wrap("reading pg_settings.pending_restart", err)
	}
	out := map[string]string{}
	var name, setting string
	_, err = pgx.ForEachRow(rows, []any{&name, &setting}, func() error {
		out[name] = setting
		return nil
	})
	if err != nil {
		return nil, c.wrap("reading pg_settings.pending_restart", err)
	}
	return out, nil
}

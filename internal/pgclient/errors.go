package pgclient

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATE codes this package classifies
// (https://www.postgresql.org/docs/current/errcodes-appendix.html).
const (
	codeReadOnlySQLTransaction = "25006"
	codeUndefinedObject        = "42704"
	codeInvalidParameterValue  = "22023"
	codeSyntaxError            = "42601"
	codeInsufficientPrivilege  = "42501"
	codeInvalidPassword        = "28P01"
	codeInvalidAuthorization   = "28000"
	codeCannotConnectNow       = "57P03"
	codeQueryCanceled          = "57014"
)

// ErrNotPrimary is what RequirePrimary returns (wrapped) for a server in
// recovery: a standby, or a primary still replaying WAL after a restore.
var ErrNotPrimary = errors.New("the server is a standby (in recovery), not a primary")

// SQLState returns the SQLSTATE of the PostgreSQL error in err's chain, or ""
// when err did not come from the server.
func SQLState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// IsReadOnlyStandby reports whether the server refused a write because it is
// a standby or in a read-only transaction (SQLSTATE 25006,
// read_only_sql_transaction). ALTER SYSTEM is not such a write: it succeeds
// on a standby, so check IsInRecovery or RequirePrimary before changing a
// primary's settings.
func IsReadOnlyStandby(err error) bool { return SQLState(err) == codeReadOnlySQLTransaction }

// IsUnknownParameter reports whether a configuration parameter name was not
// recognised (SQLSTATE 42704, undefined_object), as ALTER SYSTEM and
// current_setting report it.
func IsUnknownParameter(err error) bool { return SQLState(err) == codeUndefinedObject }

// IsInvalidParameterValue reports whether the server refused a setting's
// value: SQLSTATE 22023 (invalid_parameter_value), or 42601 (syntax_error),
// which the check of a parsed value such as synchronous_standby_names
// reports.
func IsInvalidParameterValue(err error) bool {
	s := SQLState(err)
	return s == codeInvalidParameterValue || s == codeSyntaxError
}

// IsInsufficientPrivilege reports whether the role lacks a privilege the
// statement needs (SQLSTATE 42501), for example ALTER SYSTEM without
// superuser or a GRANT ALTER SYSTEM ON PARAMETER.
func IsInsufficientPrivilege(err error) bool { return SQLState(err) == codeInsufficientPrivilege }

// IsAuthenticationFailed reports whether the server refused the login
// (SQLSTATE 28P01, invalid_password, or 28000,
// invalid_authorization_specification, which covers pg_hba.conf rejections).
func IsAuthenticationFailed(err error) bool {
	s := SQLState(err)
	return s == codeInvalidPassword || s == codeInvalidAuthorization
}

// IsCannotConnectNow reports whether the server is starting up, shutting
// down or in recovery without hot standby (SQLSTATE 57P03): worth retrying.
func IsCannotConnectNow(err error) bool { return SQLState(err) == codeCannotConnectNow }

// IsQueryCanceled reports whether a statement was cancelled, by
// statement_timeout or pg_cancel_backend (SQLSTATE 57014).
func IsQueryCanceled(err error) bool { return SQLState(err) == codeQueryCanceled }

// IsConnectError reports whether err is Connect failing to open a session.
func IsConnectError(err error) bool {
	var ce *ConnectError
	return errors.As(err, &ce)
}

// opError is an error from one operation on a connected server.
type opError struct {
	op, target string
	err        error
}

// Error names the operation and the server, then the server's message with
// its detail and hint.
func (e *opError) Error() string {
	return e.op + " on " + e.target + ": " + describeError(e.err)
}

func (e *opError) Unwrap() error { return e.err }

// wrap returns err with the operation and the server named, or nil.
func (c *Conn) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return &opError{op: op, target: c.target, err: err}
}

// describeError writes err, in full for a server error.
func describeError(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return describePgError(pgErr)
	}
	return err.Error()
}

// describePgError writes the server's message with its SQLSTATE, detail and
// hint, which pgx's Error leaves out.
func describePgError(e *pgconn.PgError) string {
	var b strings.Builder
	b.WriteString(e.Error())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Hint != "" {
		b.WriteString(" (hint: ")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

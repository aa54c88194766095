// Package localnode is the adapter that runs PostgreSQL nodes on this machine
// with the installed server binaries: initdb, pg_basebackup, pg_ctl, psql,
// pg_isready and pgbench, through os/exec and plain files (no SQL driver).
//
// It serves the local platform of pgnvme_cluster (PostgreSQL processes on a
// laptop or CI machine, as kind is for Kubernetes) and the tests. A Node is a
// value: a name, a role, a loopback address and a data directory. An Engine
// holds only what it resolved once (binary directory, the user the server
// runs as, the superuser name) and is safe for concurrent use on different
// nodes.
//
// Local platform only: nodes listen on a loopback address and authenticate
// every loopback and Unix-socket connection with trust (no password). That is
// acceptable for processes on one machine behind its loopback interface, and
// nowhere else; the EC2 platform renders its own pg_hba with real
// authentication.
//
// PostgreSQL refuses to run as root: when the caller is root, every server
// program (initdb, pg_basebackup, pg_ctl and the server itself) runs as
// Options.RunAsUser ("postgres" by default) through
// SysProcAttr.Credential, never through su, so the PIDs held are the
// programs' own. Files the engine writes into a data directory are owned by
// that user. Client programs (psql, pg_isready, pgbench) run as the caller.
//
// Files of a node with data directory /d/NAME-DIR:
//
//	/d/NAME-DIR/               the data directory (mode 0700)
//	/d/NAME-DIR/pgnvme.conf    pgnvme's settings, included last by postgresql.conf
//	/d/NAME.log                the server log (pg_ctl -l; logging_collector is off)
//	socket directory           the data directory itself, or /tmp/pgnvme-HASH when
//	                           the data directory's path is too long for a Unix socket
package localnode

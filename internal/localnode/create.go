package localnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Preflight checks, without changing anything, that n can be created: its
// fields are valid, its port is free, its data directory is absent or empty,
// and the run user can reach (and, when it must create them, write) the
// directories above it. The cluster resource runs it for every node before
// creating any, so a bad plan leaves nothing half-created.
func (e *Engine) Preflight(n Node) error {
	if err := n.Validate(); err != nil {
		return err
	}
	var errs []error
	if err := PortFree(n.Host, n.Port); err != nil {
		errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
	}
	return errors.Join(append(errs, e.PreflightData(n))...)
}

// PreflightData is Preflight without the port check: for a node that will
// take over a port another node (being replaced) holds now.
func (e *Engine) PreflightData(n Node) error {
	if err := n.Validate(); err != nil {
		return err
	}
	var errs []error
	if err := checkEmptyOrAbsent(n.dataDir()); err != nil {
		errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
	}
	if err := e.checkReachable(n.dataDir()); err != nil {
		errs = append(errs, fmt.Errorf("node %s: %w", n.Name, err))
	}
	return errors.Join(errs...)
}

// InitPrimary creates a new primary's data directory with initdb (superuser
// Options.Superuser, UTF8, locale C, data checksums, trust authentication)
// and writes pgnvme's settings into it: a pgnvme.conf with the node's
// address and socket directory, the replication settings (wal_level replica,
// 10 WAL senders and slots, hot_standby on, wal_keep_size 256MB), logging to
// the node's log file, and params (the cluster's tuned parameters, which may
// override the replication settings but not the node's address). pg_hba.conf
// trusts the Unix socket and the loopback address only: local platform only.
//
// The data directory's missing parents are created (owned by the run user);
// the data directory itself must not exist or be empty. It does not start the
// node.
func (e *Engine) InitPrimary(ctx context.Context, n Node, params map[string]string) error {
	if err := n.Validate(); err != nil {
		return err
	}
	if n.Role != RolePrimary {
		return fmt.Errorf("initialising node %s: its role is %q: InitPrimary makes a primary, CreateStandby a standby", n.Name, n.Role)
	}
	p, err := checkParams(params)
	if err != nil {
		return fmt.Errorf("parameters of node %s: %w", n.Name, err)
	}
	if err := e.prepareDataDir(n); err != nil {
		return fmt.Errorf("initialising primary %s: %w", n.Name, err)
	}
	cmd := e.serverCmd(ctx, filepath.Dir(n.dataDir()), "initdb",
		"-D", n.dataDir(), "-U", e.superuser, "-E", "UTF8", "--locale=C", "--data-checksums",
		"--auth-local=trust", "--auth-host=trust")
	if _, _, err := run(cmd); err != nil {
		return fmt.Errorf("initialising primary %s in %s: %w", n.Name, n.dataDir(), err)
	}
	if err := e.writeConf(n, p); err != nil {
		return fmt.Errorf("initialising primary %s: writing %s: %w", n.Name, confName, err)
	}
	return nil
}

// CreateStandby creates standby n from a running primary with pg_basebackup
// (WAL streamed during the copy, fast checkpoint, -R: standby.signal and a
// primary_conninfo carrying application_name = n.Name), then rewrites
// pgnvme.conf for n's own address and socket directory, keeping the
// primary's parameters. It does not start the standby.
func (e *Engine) CreateStandby(ctx context.Context, primary, n Node) error {
	if err := errors.Join(primary.Validate(), n.Validate()); err != nil {
		return err
	}
	if n.Role != RoleStandby {
		return fmt.Errorf("creating standby %s: its role is %q: CreateStandby makes a standby, InitPrimary a primary", n.Name, n.Role)
	}
	if err := e.prepareDataDir(n); err != nil {
		return fmt.Errorf("creating standby %s: %w", n.Name, err)
	}
	cmd := e.serverCmd(ctx, filepath.Dir(n.dataDir()), "pg_basebackup",
		"-D", n.dataDir(), "-d", conninfo(primary, e.superuser, n.Name),
		"-X", "stream", "-c", "fast", "-R", "-w")
	if _, _, err := run(cmd); err != nil {
		return fmt.Errorf("creating standby %s from primary %s (%s:%d): %w", n.Name, primary.Name, primary.Host, primary.Port, err)
	}
	params, err := e.Parameters(n)
	if err != nil {
		return fmt.Errorf("creating standby %s: the copy from primary %s has no pgnvme settings: %w", n.Name, primary.Name, err)
	}
	if err := e.writeConf(n, params); err != nil {
		return fmt.Errorf("creating standby %s: writing %s: %w", n.Name, confName, err)
	}
	return nil
}

// prepareDataDir makes n's data directory ready for initdb or pg_basebackup:
// parents created and reachable by the run user, the directory itself empty,
// mode 0700 and owned by the run user; and its socket directory.
func (e *Engine) prepareDataDir(n Node) error {
	dir := n.dataDir()
	if err := checkEmptyOrAbsent(dir); err != nil {
		return err
	}
	if err := e.checkReachable(dir); err != nil {
		return err
	}
	if err := e.mkdirAllOwned(filepath.Dir(dir), 0o750); err != nil {
		return fmt.Errorf("creating the parent of data directory %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating data directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	if err := e.chown(dir); err != nil {
		return err
	}
	return e.ensureSocketDir(n)
}

// checkEmptyOrAbsent fails when dir exists and is not an empty directory.
func checkEmptyOrAbsent(dir string) error {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data directory %s exists and is not a directory", dir)
	}
	if _, err := f.Readdirnames(1); !errors.Is(err, io.EOF) {
		return fmt.Errorf("data directory %s exists and is not empty: choose a new or empty directory (an existing one is never overwritten)", dir)
	}
	return nil
}

// mkdirAllOwned is os.MkdirAll that gives every directory it creates to the run user.
func (e *Engine) mkdirAllOwned(dir string, perm os.FileMode) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := e.chown(missing[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkReachable checks that the run user can use path's nearest existing
// parent: search it, and write it when the engine cannot create things for
// the user (it is not root).
func (e *Engine) checkReachable(path string) error {
	d := filepath.Dir(path)
	for {
		if _, err := os.Stat(d); err == nil {
			break
		}
		if d == filepath.Dir(d) {
			break
		}
		d = filepath.Dir(d)
	}
	if !e.switchUser {
		if err := syscall.Access(d, 0o3); err != nil { // W_OK|X_OK
			return fmt.Errorf("directory %s must be writable by user %s to create %s in it: %w", d, e.user, path, err)
		}
		return nil
	}
	testBin := "/usr/bin/test"
	if p, err := exec.LookPath("test"); err == nil {
		testBin = p
	}
	if !isExecutable(testBin) {
		return nil // no test(1) to ask: initdb or pg_basebackup will say it instead
	}
	cmd := exec.Command(testBin, "-x", d)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: e.uid, Gid: e.gid, Groups: e.groups}}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("user %s cannot reach %s (PostgreSQL runs as that user): every directory on the way needs search (x) permission "+
			"for it, e.g. chmod o+x on each, or choose a directory such as /var/lib/postgresql or /tmp", e.user, d)
	}
	return nil
}

// ensureSocketDir makes n's socket directory when it is not the data directory.
func (e *Engine) ensureSocketDir(n Node) error {
	dir := n.SocketDir()
	if dir == n.dataDir() {
		return nil
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating socket directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("socket directory %s is not a directory", dir)
	}
	if err := e.chown(dir); err != nil {
		return fmt.Errorf("socket directory %s: %w", dir, err)
	}
	return nil
}

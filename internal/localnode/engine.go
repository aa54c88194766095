package localnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// Options configure an Engine. The zero value is the usual choice.
type Options struct {
	// BinDir holds the server binaries (initdb, pg_ctl, postgres,
	// pg_basebackup, psql, pg_isready). Default: the newest
	// /usr/lib/postgresql/*/bin containing initdb, else the directory of
	// initdb on PATH (symbolic links resolved).
	BinDir string
	// RunAsUser is the user the server programs run as. Default: "postgres"
	// when the caller is root (PostgreSQL refuses to run as root), else the
	// current user. Only root can name another user than itself.
	RunAsUser string
	// Superuser is the cluster's bootstrap superuser (initdb -U), also used
	// for replication and by Psql. Default "postgres".
	Superuser string
	// Clock times the engine's waits (a server accepting connections, killed
	// processes gone). Default wait.Real; tests pass a wait.StepClock.
	Clock wait.Clock
}

// Engine runs PostgreSQL nodes on this machine. It is safe for concurrent use
// on different nodes; two operations on the same node at once are the
// caller's to prevent.
type Engine struct {
	binDir    string
	superuser string

	user       string
	uid, gid   uint32
	groups     []uint32
	home       string
	switchUser bool // the caller is root: server programs get a Credential

	clock wait.Clock
}

// serverBinaries are the programs an Engine needs in its BinDir.
var serverBinaries = []string{"initdb", "pg_ctl", "postgres", "pg_basebackup", "psql", "pg_isready"}

// pgLibRoot is where Debian and Ubuntu install PostgreSQL's versioned binaries.
const pgLibRoot = "/usr/lib/postgresql"

// identPattern is a plain SQL identifier, safe unquoted in a connection string.
var identPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// New resolves the binaries and the user the server runs as.
func New(opts Options) (*Engine, error) {
	binDir, err := resolveBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	e := &Engine{binDir: binDir, superuser: opts.Superuser, clock: opts.Clock}
	if e.clock == nil {
		e.clock = wait.Real
	}
	if e.superuser == "" {
		e.superuser = "postgres"
	}
	if !identPattern.MatchString(e.superuser) {
		return nil, fmt.Errorf("superuser %q: use a plain identifier (letters, digits and '_', not starting with a digit)", e.superuser)
	}
	if err := e.resolveUser(opts.RunAsUser); err != nil {
		return nil, err
	}
	return e, nil
}

// BinDir is the directory of the server binaries the engine runs.
func (e *Engine) BinDir() string { return e.binDir }

// RunAsUser is the user the server programs run as.
func (e *Engine) RunAsUser() string { return e.user }

// RunAsIDs are the user and group IDs of the run user.
func (e *Engine) RunAsIDs() (uid, gid int) { return int(e.uid), int(e.gid) }

// Superuser is the bootstrap superuser's name.
func (e *Engine) Superuser() string { return e.superuser }

// Version runs `postgres --version` and returns the major version (15) and
// the whole line ("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)").
func (e *Engine) Version(ctx context.Context) (major int, full string, err error) {
	cmd := exec.CommandContext(ctx, e.bin("postgres"), "--version")
	cmd.Env = cleanEnv()
	out, _, err := run(cmd)
	if err != nil {
		return 0, "", fmt.Errorf("reading the PostgreSQL version: %w", err)
	}
	full = strings.TrimSpace(out)
	major, err = parseMajor(full)
	if err != nil {
		return 0, full, err
	}
	return major, full, nil
}

// versionPattern finds the version number in `postgres --version` output.
var versionPattern = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

func parseMajor(s string) (int, error) {
	m := versionPattern.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("no version number in %q", s)
	}
	return strconv.Atoi(m[1])
}

func (e *Engine) bin(name string) string { return filepath.Join(e.binDir, name) }

// resolveBinDir finds the server binaries and checks that all are present.
func resolveBinDir(explicit string) (string, error) {
	dir := explicit
	if dir == "" {
		dirs := versionedBinDirs("initdb")
		if len(dirs) > 0 {
			dir = dirs[0]
		} else if p, err := exec.LookPath("initdb"); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				p = real
			}
			dir = filepath.Dir(p)
		} else {
			return "", fmt.Errorf("no PostgreSQL server binaries found: no %s/*/bin contains initdb and initdb is not on PATH; "+
				"install PostgreSQL (Debian/Ubuntu: apt-get install postgresql-15) or give the binary directory", pgLibRoot)
		}
	}
	var missing []string
	for _, name := range serverBinaries {
		if !isExecutable(filepath.Join(dir, name)) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("PostgreSQL binaries missing from %s: %s; install %s (it brings the client programs too)",
			dir, strings.Join(missing, ", "), packageHint(dir))
	}
	return dir, nil
}

// packageHint names the Debian package that provides dir's binaries.
func packageHint(dir string) string {
	if rel, err := filepath.Rel(pgLibRoot, dir); err == nil {
		if v, ok := strings.CutSuffix(rel, "/bin"); ok && !strings.Contains(v, "/") && v != ".." {
			return fmt.Sprintf("the postgresql-%s package (apt-get install postgresql-%s)", v, v)
		}
	}
	return "PostgreSQL's server package (Debian/Ubuntu: apt-get install postgresql-15)"
}

// BinDirForMajor is the directory of PostgreSQL major's server binaries:
// /usr/lib/postgresql/<major>/bin when it holds initdb, else the directory of
// initdb on PATH when that initdb is of major. The error names the package to
// install and the majors that are installed.
func BinDirForMajor(ctx context.Context, major int) (string, error) {
	dir := filepath.Join(pgLibRoot, strconv.Itoa(major), "bin")
	if isExecutable(filepath.Join(dir, "initdb")) {
		return dir, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if m, err := binaryMajor(ctx, filepath.Join(filepath.Dir(p), "postgres")); err == nil && m == major {
			return filepath.Dir(p), nil
		}
	}
	installed := "none"
	if ms := InstalledMajors(); len(ms) > 0 {
		installed = strings.Trim(strings.ReplaceAll(fmt.Sprint(ms), " ", ", "), "[]")
	}
	return "", &MajorNotInstalledError{Major: major, Installed: installed}
}

// MajorNotInstalledError is BinDirForMajor's error when major's binaries are not on this machine.
type MajorNotInstalledError struct {
	Major int
	// Installed lists the installed majors ("15, 18"), "none" when there are none.
	Installed string
}

func (e *MajorNotInstalledError) Error() string {
	return fmt.Sprintf("PostgreSQL %d is not installed on this machine: %s/%d/bin holds no initdb, and no initdb of %d is on PATH "+
		"(installed majors: %s). Install the postgresql-%d package (Debian and Ubuntu: from the PostgreSQL project's apt repository, "+
		"apt-get install postgresql-%d)", e.Major, pgLibRoot, e.Major, e.Major, e.Installed, e.Major, e.Major)
}

// InstalledMajors are the PostgreSQL majors under /usr/lib/postgresql with
// server binaries (initdb), newest first.
func InstalledMajors() []int {
	var out []int
	for _, dir := range versionedBinDirs("initdb") {
		if v, err := strconv.Atoi(filepath.Base(filepath.Dir(dir))); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// binaryMajor runs postgres --version of the binary at path.
func binaryMajor(ctx context.Context, path string) (int, error) {
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = cleanEnv()
	out, _, err := run(cmd)
	if err != nil {
		return 0, err
	}
	return parseMajor(strings.TrimSpace(out))
}

// versionedBinDirs lists /usr/lib/postgresql/*/bin directories holding an
// executable name, newest version first.
func versionedBinDirs(name string) []string {
	matches, _ := filepath.Glob(filepath.Join(pgLibRoot, "*", "bin", name))
	type cand struct {
		dir string
		ver []int
	}
	var cands []cand
	for _, m := range matches {
		if !isExecutable(m) {
			continue
		}
		dir := filepath.Dir(m)
		cands = append(cands, cand{dir, versionKey(filepath.Base(filepath.Dir(dir)))})
	}
	slices.SortFunc(cands, func(a, b cand) int { return slices.Compare(b.ver, a.ver) })
	dirs := make([]string, len(cands))
	for i, c := range cands {
		dirs[i] = c.dir
	}
	return dirs
}

// versionKey turns "15" or "9.6" into comparable numbers; anything else sorts first-lowest.
func versionKey(v string) []int {
	var key []int
	for _, part := range strings.Split(v, ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return []int{-1}
		}
		key = append(key, n)
	}
	return key
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// resolveUser settles who the server programs run as.
func (e *Engine) resolveUser(name string) error {
	euid := os.Geteuid()
	if name == "" {
		if euid == 0 {
			name = "postgres"
		} else {
			cur, err := user.Current()
			if err != nil {
				return fmt.Errorf("looking up the current user: %w", err)
			}
			name = cur.Username
		}
	}
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("PostgreSQL must run as user %q, which does not exist (%w): install PostgreSQL's server package "+
			"(it creates user postgres) or choose another user", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("user %s: %w", name, err)
	}
	if uid == 0 {
		return fmt.Errorf("user %s is root, and PostgreSQL refuses to run as root: choose an unprivileged user such as postgres", name)
	}
	if euid != 0 && int(uid) != euid {
		return fmt.Errorf("PostgreSQL cannot run as user %s: this process runs as uid %d, and only root can start programs as another user; "+
			"leave the user empty to use the current one", name, euid)
	}
	e.user, e.uid, e.gid, e.home = name, uint32(uid), uint32(gid), u.HomeDir
	e.switchUser = euid == 0
	if e.switchUser {
		ids, err := u.GroupIds()
		if err != nil {
			return fmt.Errorf("groups of user %s: %w", name, err)
		}
		for _, id := range ids {
			g, err := strconv.ParseUint(id, 10, 32)
			if err != nil {
				return fmt.Errorf("groups of user %s: %w", name, err)
			}
			e.groups = append(e.groups, uint32(g))
		}
	}
	return nil
}

// serverCmd is a server program (initdb, pg_ctl, pg_basebackup, ...) run as
// the run user in its own session, in dir.
func (e *Engine) serverCmd(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, e.bin(name), args...)
	cmd.Dir = dir
	cmd.Env = e.ServerEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: e.ServerCredential()}
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// clientCmd is a client program (psql, pg_isready) run as the caller against n (with its TLS).
func (e *Engine) clientCmd(ctx context.Context, n Node, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, e.bin(name), args...)
	cmd.Env = append(append(cleanEnv(), "PGCONNECT_TIMEOUT=10", "PGCLIENTENCODING=UTF8"), n.TLS.Env()...)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// cleanEnv is the caller's environment without libpq's PG* variables (a
// stray PGSSLMODE, PGOPTIONS or PGDATABASE must not change what the engine
// does) and with messages in English, so errors read the same everywhere.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PG") || k == "LC_ALL" || k == "LANGUAGE" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C")
}

// run runs cmd and returns its output. A failure carries the program's name,
// how it ended, and what it wrote to stderr (or stdout when stderr is empty).
func run(cmd *exec.Cmd) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	stdout, stderr = out.String(), errb.String()
	if err != nil {
		msg := strings.TrimSpace(stderr)
		if msg == "" {
			msg = strings.TrimSpace(stdout)
		}
		if msg != "" {
			msg = ": " + msg
		}
		return stdout, stderr, fmt.Errorf("%s: %w%s", filepath.Base(cmd.Path), err, msg)
	}
	return stdout, stderr, nil
}

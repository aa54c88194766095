package localnode

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

const (
	// confName is pgnvme's settings file in the data directory.
	confName = "pgnvme.conf"
	// includeLine is appended to postgresql.conf so pgnvme.conf is read last.
	includeLine = "include_if_exists = '" + confName + "'"
	// paramsMarker starts the parameters section of pgnvme.conf.
	paramsMarker = "# parameters"
)

// reservedParams are set from the Node or by the engine itself: parameters
// may not override them (the reason says what sets them).
var reservedParams = map[string]string{
	"listen_addresses":        "the node's host",
	"port":                    "the node's port",
	"unix_socket_directories": "the node's socket directory",
	"data_directory":          "the node's data directory",
	"config_file":             "the node's data directory",
	"hba_file":                "the engine (pg_hba.conf in the data directory)",
	"ident_file":              "the engine (pg_ident.conf in the data directory)",
	"external_pid_file":       "the engine (postmaster.pid in the data directory)",
	"logging_collector":       "the engine: the server logs to the node's log file, which LogTail reads",
	"primary_conninfo":        "CreateStandby and Repoint",
	"ssl":                     "the cluster's tls block",
	"ssl_cert_file":           "the cluster's tls block",
	"ssl_key_file":            "the cluster's tls block",
	"ssl_ca_file":             "the cluster's tls block",
	"include":                 "nothing: include directives are not parameters",
	"include_if_exists":       "nothing: include directives are not parameters",
	"include_dir":             "nothing: include directives are not parameters",
}

// paramNamePattern is a configuration parameter's name, custom (ext.name) ones included.
var paramNamePattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`)

// checkParams validates parameters and returns them with lower-case names.
func checkParams(params map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(params))
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		name := strings.ToLower(k)
		switch {
		case !paramNamePattern.MatchString(name):
			errs = append(errs, fmt.Errorf("parameter %q: not a PostgreSQL parameter name", k))
		case reservedParams[name] != "":
			errs = append(errs, fmt.Errorf("parameter %q: set by %s, not by parameters", k, reservedParams[name]))
		case strings.ContainsAny(v, "\n\r\x00"):
			errs = append(errs, fmt.Errorf("parameter %q: the value contains a line break or NUL", k))
		default:
			if _, dup := out[name]; dup {
				errs = append(errs, fmt.Errorf("parameter %q: given twice with different letter case", k))
			}
			out[name] = v
		}
	}
	return out, errors.Join(errs...)
}

// quoteConf quotes v as a postgresql.conf string: backslashes and single
// quotes escaped, so the server reads v exactly.
func quoteConf(v string) string {
	v = strings.ReplaceAll(v, `\`, `\\`)
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}

// unquoteConf reverses quoteConf (and accepts \' for a quote, as the server does).
func unquoteConf(s string) (string, error) {
	if len(s) < 2 || s[0] != '\'' || s[len(s)-1] != '\'' {
		return "", fmt.Errorf("value %s is not a quoted string", s)
	}
	in := s[1 : len(s)-1]
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c == '\\' && i+1 < len(in):
			i++
			b.WriteByte(in[i])
		case c == '\'' && i+1 < len(in) && in[i+1] == '\'':
			i++
			b.WriteByte('\'')
		case c == '\'' || c == '\\':
			return "", fmt.Errorf("value %s has an unescaped %c", s, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// baseSettings are the settings pgnvme.conf sets before the parameters
// (which may override the replication ones).
func baseSettings() [][2]string {
	return [][2]string{
		{"wal_level", "replica"},
		{"max_wal_senders", "10"},
		{"max_replication_slots", "10"},
		{"hot_standby", "on"},
		{"wal_keep_size", "256MB"},
		{"logging_collector", "off"},
	}
}

// renderConf is pgnvme.conf for n with params (already checked).
func renderConf(n Node, params map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: written by pgnvme for node %s (created as %s). pgnvme rewrites this file:\n", confName, n.Name, n.Role)
	b.WriteString("# change the cluster's parameters, not this file. postgresql.conf includes it last.\n\n")
	b.WriteString("# node\n")
	fmt.Fprintf(&b, "listen_addresses = %s\n", quoteConf(n.Host))
	fmt.Fprintf(&b, "port = %d\n", n.Port)
	fmt.Fprintf(&b, "unix_socket_directories = %s\n", quoteConf(n.SocketDir()))
	if t := n.TLS; t != nil {
		b.WriteString("\n# TLS (pg_hba.conf rejects TCP connections without it)\n")
		for _, kv := range [][2]string{{"ssl", "on"}, {"ssl_cert_file", t.CertFile}, {"ssl_key_file", t.KeyFile}, {"ssl_ca_file", t.CAFile}} {
			fmt.Fprintf(&b, "%s = %s\n", kv[0], quoteConf(kv[1]))
		}
	}
	b.WriteString("\n# replication and logging defaults (parameters below may override the replication ones)\n")
	settings := baseSettings()
	if n.TLS != nil {
		settings = append(settings, [2]string{"ssl_min_protocol_version", "TLSv1.2"})
	}
	for _, kv := range settings {
		fmt.Fprintf(&b, "%s = %s\n", kv[0], quoteConf(kv[1]))
	}
	b.WriteString("\n" + paramsMarker + "\n")
	for _, k := range slices.Sorted(maps.Keys(params)) {
		fmt.Fprintf(&b, "%s = %s\n", k, quoteConf(params[k]))
	}
	return b.String()
}

// parseParams reads the parameters section back from a pgnvme.conf.
func parseParams(text string) (map[string]string, error) {
	params := map[string]string{}
	in := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == paramsMarker {
			in = true
			continue
		}
		if !in || s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: no '=' in %q", line, s)
		}
		val, err := unquoteConf(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		params[strings.TrimSpace(k)] = val
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !in {
		return nil, fmt.Errorf("no %q section: not written by pgnvme", paramsMarker)
	}
	return params, nil
}

// renderHBA is the node's pg_hba.conf: trust for the local socket and the
// loopback address only. With TLS, a TCP connection without TLS is rejected
// and replication is authenticated by client certificate.
func renderHBA(n Node) string {
	addr := hbaAddress(n.Host)
	if n.TLS != nil {
		return "# pg_hba.conf: written by pgnvme for the local platform only, with TLS. The first matching line applies:\n" +
			"# a TCP connection without TLS is rejected; replication proves its user by a client certificate the\n" +
			"# cluster's CA issued; other TLS connections from the loopback address are trusted (no password).\n" +
			"# TYPE     DATABASE     USER  ADDRESS  METHOD\n" +
			"local      all          all            trust\n" +
			"local      replication  all            trust\n" +
			fmt.Sprintf("hostnossl  all          all   %s  reject\n", addr) +
			fmt.Sprintf("hostnossl  replication  all   %s  reject\n", addr) +
			fmt.Sprintf("hostssl    replication  all   %s  cert\n", addr) +
			fmt.Sprintf("hostssl    all          all   %s  trust\n", addr)
	}
	return "# pg_hba.conf: written by pgnvme for the local platform only. Every connection over the\n" +
		"# Unix socket or from the loopback address is trusted (no password): nodes listen on loopback.\n" +
		"# TYPE  DATABASE     USER  ADDRESS  METHOD\n" +
		"local   all          all            trust\n" +
		"local   replication  all            trust\n" +
		fmt.Sprintf("host    all          all   %s  trust\n", addr) +
		fmt.Sprintf("host    replication  all   %s  trust\n", addr)
}

// TLSOn reports whether n's pgnvme.conf turns TLS on (pgnvme wrote it for a Node with TLS); false when
// n has no data directory yet.
func (e *Engine) TLSOn(n Node) (bool, error) {
	b, err := os.ReadFile(filepath.Join(n.dataDir(), confName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s of node %s: %w", confName, n.Name, err)
	}
	head, _, _ := strings.Cut(string(b), "\n"+paramsMarker+"\n")
	return slices.Contains(strings.Split(head, "\n"), "ssl = 'on'"), nil
}

// Parameters reads the parameters written into n's pgnvme.conf (by
// InitPrimary, copied by CreateStandby, or by SetParameters).
func (e *Engine) Parameters(n Node) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(n.dataDir(), confName))
	if err != nil {
		return nil, fmt.Errorf("reading parameters of node %s: %w", n.Name, err)
	}
	params, err := parseParams(string(b))
	if err != nil {
		return nil, fmt.Errorf("reading parameters of node %s from %s: %w", n.Name, confName, err)
	}
	return params, nil
}

// SetParameters rewrites n's pgnvme.conf with n's address, TLS and params,
// and its pg_hba.conf for n's TLS. The caller reloads or restarts the node,
// as each parameter requires (pg_settings.context; TLS needs a reload).
func (e *Engine) SetParameters(n Node, params map[string]string) error {
	if err := n.Validate(); err != nil {
		return err
	}
	p, err := checkParams(params)
	if err != nil {
		return fmt.Errorf("parameters of node %s: %w", n.Name, err)
	}
	if err := e.writeConf(n, p); err != nil {
		return fmt.Errorf("setting parameters of node %s: %w", n.Name, err)
	}
	return nil
}

// writeConf writes n's pgnvme.conf and pg_hba.conf (both follow n.TLS) and makes sure postgresql.conf
// includes pgnvme.conf.
func (e *Engine) writeConf(n Node, params map[string]string) error {
	if err := e.writeFile(filepath.Join(n.dataDir(), confName), []byte(renderConf(n, params)), 0o600); err != nil {
		return err
	}
	if err := e.writeFile(filepath.Join(n.dataDir(), "pg_hba.conf"), []byte(renderHBA(n)), 0o600); err != nil {
		return err
	}
	main := filepath.Join(n.dataDir(), "postgresql.conf")
	b, err := os.ReadFile(main)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == includeLine {
			return nil
		}
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	b = append(b, "\n# pgnvme's settings (see "+confName+"): keep this the last line.\n"+includeLine+"\n"...)
	return e.writeFile(main, b, 0o600)
}

// setPrimaryConninfo replaces every primary_conninfo line of a
// postgresql.auto.conf with one for value.
func setPrimaryConninfo(auto, value string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(auto, "\n") {
		k, _, ok := strings.Cut(line, "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "primary_conninfo") {
			continue
		}
		b.WriteString(line)
	}
	s := b.String()
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + "primary_conninfo = " + quoteConf(value) + "\n"
}

// writeFile replaces path atomically with data, owned by the run user.
func (e *Engine) writeFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".pgnvme-" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := e.chown(tmp); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// chown gives path to the run user when the engine switches users.
func (e *Engine) chown(path string) error {
	if !e.switchUser {
		return nil
	}
	return os.Lchown(path, int(e.uid), int(e.gid))
}

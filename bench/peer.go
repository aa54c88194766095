package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// The peer in the storage section: timescaledb-tune's own recommendation for the machine pgnvme_tuning is
// given there, got by running the tool, not by copying its rules. The bench takes the binary from PATH
// (go install github.com/timescale/timescaledb-tune/cmd/timescaledb-tune@v0.19.0); the module proxy the
// project's test machines reach refuses that module, so there the peer is PGTune's recommendation for the
// same machine (pgtune.go: PGTune has no program to run, only its rules).
const peerBinary = "timescaledb-tune"

// PeerTuning is what the peer recommended and what of it the peer's arm ran with.
type PeerTuning struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Command is the invocation, flags included, that printed Recommended.
	Command     string            `json:"command"`
	Recommended map[string]string `json:"recommended"`
	// Parameters are what pgnvme_cluster got: Recommended less Dropped.
	Parameters map[string]string `json:"parameters"`
	// Dropped are the recommended parameters left out, each with why.
	Dropped map[string]string `json:"dropped"`
}

// peerMachine is the machine the peer is asked about: the one pgnvme_tuning is given.
type peerMachine struct {
	VCPUs, MemoryMiB, DiskGiB, PostgresMajor int
}

// timescaledbTune runs timescaledb-tune for m without touching any configuration (-dry-run on an empty file)
// and returns its recommendation, with what pgnvme_cluster would refuse or this PostgreSQL could not load
// dropped.
func timescaledbTune(ctx context.Context, m peerMachine) (*PeerTuning, error) {
	bin, err := exec.LookPath(peerBinary)
	if err != nil {
		return nil, fmt.Errorf("%s is not on PATH (install it with go install github.com/timescale/timescaledb-tune/cmd/timescaledb-tune@v0.19.0; the module proxy the project's test machines reach refuses that module): %w", peerBinary, err)
	}
	ver, err := runPeer(ctx, bin, "-version")
	if err != nil {
		return nil, err
	}
	// "timescaledb-tune 0.19.0 (linux amd64)"
	version := strings.TrimSpace(ver)
	if f := strings.Fields(version); len(f) >= 2 {
		version = f[1]
	}
	conf, err := os.CreateTemp("", "pgnvme-bench-peer-*.conf")
	if err != nil {
		return nil, err
	}
	conf.Close()
	defer os.Remove(conf.Name())
	args := []string{
		"-memory", fmt.Sprintf("%dMB", m.MemoryMiB), // PostgreSQL's units: MB is MiB
		"-cpus", fmt.Sprint(m.VCPUs),
		"-pg-version", fmt.Sprint(m.PostgresMajor),
		"-wal-disk-size", fmt.Sprintf("%dGB", m.DiskGiB),
		"-conf-path", conf.Name(),
		"-dry-run", "-quiet", "-yes", "-color=false",
	}
	out, err := runPeer(ctx, bin, args...)
	if err != nil {
		return nil, err
	}
	rec, err := parsePeerConf(out)
	if err != nil {
		return nil, fmt.Errorf("reading what %s printed: %w", peerBinary, err)
	}
	kept, dropped := dropPeerParameters(rec, m.PostgresMajor)
	return &PeerTuning{
		Name:        peerBinary,
		Version:     version,
		Command:     peerBinary + " " + strings.Join(args, " "),
		Recommended: rec,
		Parameters:  kept,
		Dropped:     dropped,
	}, nil
}

// runPeer runs the peer and returns its standard output. TSTUNE_PROFILE is emptied so that the default
// profile applies whatever the caller's environment says.
func runPeer(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "TSTUNE_PROFILE=")
	cmd.Stdin = strings.NewReader("")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", peerBinary, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// parsePeerConf reads postgresql.conf lines ("name = value", a trailing "# comment", single-quoted values)
// into a map. Blank and comment-only lines are skipped; any other line without "=" is an error.
func parsePeerConf(text string) (map[string]string, error) {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %q is not name = value", line)
		}
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		if strings.HasPrefix(value, "'") {
			end := strings.Index(value[1:], "'")
			if end < 0 {
				return nil, fmt.Errorf("line %q: unterminated quote", line)
			}
			value = value[1 : end+1]
		} else if i := strings.Index(value, "#"); i >= 0 {
			value = strings.TrimSpace(value[:i])
		}
		if name == "" {
			return nil, fmt.Errorf("line %q has no name", line)
		}
		out[name] = value
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no parameters")
	}
	return out, nil
}

// dropPeerParameters splits the peer's recommendation into what pgnvme_cluster takes and what it leaves out,
// with why: TimescaleDB's own settings (this PostgreSQL has no TimescaleDB, and shared_preload_libraries =
// 'timescaledb' would keep it from starting), the parameters pgnvme_cluster reserves, and those PostgreSQL
// major does not know.
func dropPeerParameters(rec map[string]string, major int) (kept, dropped map[string]string) {
	kept, dropped = map[string]string{}, map[string]string{}
	reserved := bootstrap.ReservedParameters()
	versions := bootstrap.ParameterVersionProblems(rec, major)
	for _, name := range slices.Sorted(maps.Keys(rec)) {
		switch {
		case strings.HasPrefix(name, "timescaledb."):
			dropped[name] = "TimescaleDB's own setting; this PostgreSQL has no TimescaleDB"
		case name == "shared_preload_libraries":
			dropped[name] = fmt.Sprintf("it loads %s, which this PostgreSQL does not have (the server would not start)", rec[name])
		case reserved[name] != "":
			dropped[name] = "pgnvme_cluster refuses it: set by " + reserved[name]
		case versions[name] != nil:
			dropped[name] = versions[name].Error()
		default:
			kept[name] = rec[name]
		}
	}
	return kept, dropped
}

// dropUnofferedValues moves the peer's parameters whose value the server at port does not offer (an enum
// value missing from pg_settings' enumvals, such as PGTune's io_method = io_uring on a PostgreSQL built
// without liburing, which would keep the server from starting) from Parameters to Dropped.
func dropUnofferedValues(ctx context.Context, port int, p *PeerTuning) error {
	conn, err := benchConnect(ctx, port)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, "SELECT name, enumvals FROM pg_settings WHERE vartype = 'enum' AND name = ANY($1)", slices.Sorted(maps.Keys(p.Parameters)))
	if err != nil {
		return fmt.Errorf("reading the server's enum values: %w", err)
	}
	enums := map[string][]string{}
	var name string
	var vals []string
	_, err = pgx.ForEachRow(rows, []any{&name, &vals}, func() error {
		enums[name] = slices.Clone(vals)
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the server's enum values: %w", err)
	}
	for k, why := range unofferedValues(p.Parameters, enums) {
		delete(p.Parameters, k)
		p.Dropped[k] = why
	}
	return nil
}

// unofferedValues names the parameters of params that enums (name -> the values the server offers, for its
// enum parameters) does not offer, each with why.
func unofferedValues(params map[string]string, enums map[string][]string) map[string]string {
	out := map[string]string{}
	for k, v := range params {
		offered, ok := enums[k]
		if !ok || slices.ContainsFunc(offered, func(o string) bool { return strings.EqualFold(o, v) }) {
			continue
		}
		out[k] = fmt.Sprintf("this PostgreSQL build does not offer %s = %s (it offers %s)", k, v, strings.Join(offered, ", "))
	}
	return out
}

// hclMap writes params as an HCL object of strings, in name order.
func hclMap(params map[string]string) string {
	var b strings.Builder
	b.WriteString("{\n")
	for _, k := range slices.Sorted(maps.Keys(params)) {
		fmt.Fprintf(&b, "    %q = %q\n", k, params[k])
	}
	b.WriteString("  }")
	return b.String()
}

// formatParams writes params as "name=value" in name order, comma-separated.
func formatParams(params map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		out = append(out, k+"="+params[k])
	}
	return strings.Join(out, ", ")
}

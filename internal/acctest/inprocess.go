package acctest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	tfjson "github.com/hashicorp/terraform-json"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
)

// PlanEach plans every configuration in configs with the real Terraform CLI and the provider served
// in-process, and returns, for each, the text of the errors its plan reports (Terraform's own rendering:
// "Error: summary", where, the detail), or "" when its plan succeeds.
//
// The configurations are planned together, each a module of one root module (case_NNN/main.tf), so that
// a list of bad inputs costs one `terraform init` and a plan or two instead of an init and a plan per
// configuration (each ~1 s of CPU). An error is the configuration's whose file it names. Terraform stops
// a plan at its first failing stage (loading, validation, then planning), so a configuration whose error
// comes at a later stage than another's reports nothing in that plan: those are planned again, without the
// ones already answered, until every configuration has an answer or a plan reports no error at all
// (what is left plans cleanly). An error that names no configuration fails the test.
func PlanEach(t *testing.T, configs []string) []string {
	t.Helper()
	dir := t.TempDir()
	for i, c := range configs {
		sub := filepath.Join(dir, caseDir(i))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "main.tf"), []byte(withRequiredProviders(c)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := servedProvider(t)
	out := make([]string, len(configs))
	pending := make([]int, len(configs))
	for i := range pending {
		pending[i] = i
	}
	plans := 0
	for len(pending) > 0 {
		plans++
		var root strings.Builder
		for _, i := range pending {
			fmt.Fprintf(&root, "module %q {\n  source = \"./%s\"\n}\n", caseDir(i), caseDir(i))
		}
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(root.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if plans == 1 {
			initIn(t, dir, env)
		}
		text, err := terraformIn(dir, env, "plan", "-input=false", "-no-color", "-lock=false")
		if err == nil {
			break // what is pending plans cleanly
		}
		answered := map[int][]string{}
		for _, d := range splitDiagnostics(text) {
			m := caseFile.FindStringSubmatch(d)
			if m == nil {
				t.Fatalf("plan %d: a diagnostic that names none of the configurations:\n%s\n\nthe whole output:\n%s", plans, d, text)
			}
			i, _ := strconv.Atoi(m[1])
			answered[i] = append(answered[i], d)
		}
		if len(answered) == 0 {
			t.Fatalf("plan %d: terraform plan failed (%v) and reported no error:\n%s", plans, err, text)
		}
		var next []int
		for _, i := range pending {
			if ds, ok := answered[i]; ok {
				out[i] = strings.Join(ds, "\n")
			} else {
				next = append(next, i)
			}
		}
		pending = next
	}
	t.Logf("planned %d configurations together in %d plans", len(configs), plans)
	return out
}

var terraformBlock = regexp.MustCompile(`(?m)^\s*terraform\s*\{`)

// withRequiredProviders is config with the required_providers block terraform-plugin-testing adds to a
// configuration without a terraform block (the provider's functions need it).
func withRequiredProviders(config string) string {
	if terraformBlock.MatchString(config) {
		return config
	}
	return "terraform {\n  required_providers {\n    pgnvme = { source = \"registry.terraform.io/hashicorp/pgnvme\" }\n  }\n}\n" + config
}

// initIn runs `terraform init` in dir; a failure fails the test.
func initIn(t *testing.T, dir string, env []string) {
	t.Helper()
	if text, err := terraformIn(dir, env, "init", "-input=false", "-no-color"); err != nil {
		t.Fatalf("terraform init in %s: %v\n%s", dir, err, text)
	}
}

var caseFile = regexp.MustCompile(`\bon case_(\d{3})/`)

func caseDir(i int) string { return fmt.Sprintf("case_%03d", i) }

// splitDiagnostics cuts Terraform's -no-color output into its error diagnostics: each starts with a line
// "Error: " and runs to the next "Error: " or "Warning: " line.
func splitDiagnostics(text string) []string {
	var out []string
	var cur []string
	inErr := false
	flush := func() {
		if inErr && len(cur) > 0 {
			out = append(out, strings.TrimSpace(strings.Join(cur, "\n")))
		}
		cur = nil
	}
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "Error: "):
			flush()
			inErr = true
		case strings.HasPrefix(line, "Warning: "):
			flush()
			inErr = false
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

// terraformCmd is the Terraform CLI (TF_ACC_TERRAFORM_PATH, else terraform on the PATH) in dir with env added.
func terraformCmd(dir string, env []string, args ...string) *exec.Cmd {
	bin := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if bin == "" {
		bin = "terraform"
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// terraformIn runs terraformCmd and returns its combined output.
func terraformIn(dir string, env []string, args ...string) (string, error) {
	b, err := terraformCmd(dir, env, args...).CombinedOutput()
	return string(b), err
}

// terraformStdout runs terraformCmd and returns its standard output (its errors after a failure).
func terraformStdout(dir string, env []string, args ...string) (string, error) {
	b, err := terraformCmd(dir, env, args...).Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		err = fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	return string(b), err
}

// servedProvider serves the provider in-process until the test ends, and returns the environment that
// makes the Terraform CLI use it (TF_REATTACH_PROVIDERS) for pgnvme/pgnvme and hashicorp/pgnvme (a
// configuration without required_providers).
func servedProvider(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	configCh := make(chan *plugin.ReattachConfig)
	closeCh := make(chan struct{})
	factory := ProtoV6ProviderFactories()[ProviderName]
	server, err := factory()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		_ = tf6server.Serve("registry.terraform.io/pgnvme/pgnvme", func() tfprotov6.ProviderServer { return server },
			tf6server.WithDebug(ctx, configCh, closeCh), tf6server.WithLoggingSink(t), tf6server.WithGoPluginLogger(hclog.NewNullLogger()))
	}()
	var cfg *plugin.ReattachConfig
	select {
	case cfg = <-configCh:
	case <-closeCh:
		cancel()
		t.Fatal("the provider's server stopped before it served")
	}
	t.Cleanup(func() {
		cancel()
		<-closeCh
	})
	type addr struct{ Network, String string }
	type reattach struct {
		Protocol        string
		ProtocolVersion int
		Pid             int
		Test            bool
		Addr            addr
	}
	r := reattach{Protocol: string(cfg.Protocol), ProtocolVersion: cfg.ProtocolVersion, Pid: cfg.Pid, Test: cfg.Test,
		Addr: addr{cfg.Addr.Network(), cfg.Addr.String()}}
	b, err := json.Marshal(map[string]reattach{
		"registry.terraform.io/pgnvme/pgnvme":    r,
		"registry.terraform.io/hashicorp/pgnvme": r,
	})
	if err != nil {
		t.Fatal(err)
	}
	return []string{"TF_REATTACH_PROVIDERS=" + string(b), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1"}
}

// Workdir is a Terraform working directory whose CLI uses the provider served in-process, for a test that
// needs one apply of a configuration and its state and not terraform-plugin-testing's three plans per step:
// a data source is read at every plan, and one that restores a backup or runs pgbench would run three
// times a step.
type Workdir struct {
	t      *testing.T
	dir    string
	env    []string
	inited bool
}

// NewWorkdir makes an empty working directory; the provider is served until the test ends.
func NewWorkdir(t *testing.T) *Workdir {
	t.Helper()
	return &Workdir{t: t, dir: t.TempDir(), env: servedProvider(t)}
}

// State is what `terraform show -json` reports of a state: each resource's and data source's values by
// address ("data.pgnvme_pgbench.x"), and the outputs' values by name.
type State struct {
	Resources map[string]map[string]any
	Outputs   map[string]any
}

// Apply writes config (with the required_providers block terraform-plugin-testing would add when it has
// no terraform block), applies it and returns the state; on a failed apply, its output and the error.
func (w *Workdir) Apply(config string) (*State, string, error) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(withRequiredProviders(config)), 0o644); err != nil {
		w.t.Fatal(err)
	}
	if !w.inited {
		initIn(w.t, w.dir, w.env)
		w.inited = true
	}
	if text, err := terraformIn(w.dir, w.env, "apply", "-input=false", "-no-color", "-auto-approve"); err != nil {
		return nil, text, err
	}
	text, err := terraformStdout(w.dir, w.env, "show", "-json", "-no-color")
	if err != nil {
		w.t.Fatalf("terraform show: %v\n%s", err, text)
	}
	var st tfjson.State
	if err := json.Unmarshal([]byte(text), &st); err != nil {
		w.t.Fatalf("terraform show -json: %v\n%s", err, text)
	}
	out := &State{Resources: map[string]map[string]any{}, Outputs: map[string]any{}}
	if st.Values == nil {
		return out, "", nil
	}
	if st.Values.RootModule != nil {
		for _, r := range st.Values.RootModule.Resources {
			out.Resources[r.Address] = r.AttributeValues
		}
	}
	for name, o := range st.Values.Outputs {
		out.Outputs[name] = o.Value
	}
	return out, "", nil
}

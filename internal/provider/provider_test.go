package provider_test

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/latencydisk"
)

func TestMain(m *testing.M) {
	// Clusters with latencies start this binary (it serves the provider in-process) as their latency layer.
	latencydisk.MainIfServer()
	if err := acctest.Setup(); err != nil {
		fmt.Fprintln(os.Stderr, "acceptance test setup:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := acctest.RemoveProviderBinary(); err != nil {
		fmt.Fprintln(os.Stderr, "removing the provider built for the tests:", err)
	}
	os.Exit(code)
}

// noCredentials makes sure nothing in the environment could let the provider reach AWS: planning from the
// embedded catalog must work on a laptop with no AWS setup at all.
func noCredentials(t *testing.T) {
	t.Helper()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/pgnvme-test/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/pgnvme-test/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// motoEnv points the AWS SDK's credential chain at moto's fixed test credentials.
func motoEnv(t *testing.T) {
	t.Helper()
	noCredentials(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
}

func motoProvider(m *acctest.Moto) string {
	return fmt.Sprintf(`
provider "pgnvme" {
  region            = "us-east-1"
  s3_use_path_style = true
  endpoints {
    ec2 = %[1]q
    s3  = %[1]q
    iam = %[1]q
    sts = %[1]q
  }
}
`, m.URL)
}

// badInput is one configuration that must fail at plan time with a message matching want.
type badInput struct {
	name   string
	config string
	want   string
}

// runBadInputs plans every configuration, each expecting its error; nothing is applied. The plans run
// together (acctest.PlanEach: one init and a plan per stage of Terraform's checks, not an init and a plan
// per case), and each case is a subtest that checks the errors of its own configuration.
func runBadInputs(t *testing.T, cases []badInput) {
	t.Helper()
	noCredentials(t)
	checkBadInputs(t, cases)
}

// checkBadInputs is runBadInputs in the environment the test has set (motoEnv's, for one).
func checkBadInputs(t *testing.T, cases []badInput) {
	t.Helper()
	configs := make([]string, len(cases))
	for i, tc := range cases {
		configs[i] = tc.config
	}
	errs := acctest.PlanEach(t, configs)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			switch {
			case errs[i] == "":
				t.Errorf("the plan succeeded; want an error matching %s", tc.want)
			case !regexp.MustCompile(tc.want).MatchString(errs[i]):
				t.Errorf("the plan's errors do not match %s:\n%s", tc.want, errs[i])
			}
		})
	}
}

// attrs is one resource's or data source's values in a state (acctest.Workdir.Apply).
type attrs map[string]any

func (a attrs) str(k string) string     { s, _ := a[k].(string); return s }
func (a attrs) number(k string) float64 { f, _ := a[k].(float64); return f }

func (a attrs) wantString(t *testing.T, k, want string) {
	t.Helper()
	if got, ok := a[k].(string); !ok || got != want {
		t.Errorf("%s = %#v; want %q", k, a[k], want)
	}
}

func (a attrs) wantBool(t *testing.T, k string, want bool) {
	t.Helper()
	if got, ok := a[k].(bool); !ok || got != want {
		t.Errorf("%s = %#v; want %v", k, a[k], want)
	}
}

func (a attrs) wantMatch(t *testing.T, k, re string) {
	t.Helper()
	if got, ok := a[k].(string); !ok || !regexp.MustCompile(re).MatchString(got) {
		t.Errorf("%s = %#v; want a match of %s", k, a[k], re)
	}
}

// applyState applies config in w and returns the state; a failed apply fails the test.
func applyState(t *testing.T, w *acctest.Workdir, config string) *acctest.State {
	t.Helper()
	st, out, err := w.Apply(config)
	if err != nil {
		t.Fatalf("terraform apply: %v\n%s", err, out)
	}
	return st
}

// applyValues applies config in w and returns the values of addr; a failed apply fails the test.
func applyValues(t *testing.T, w *acctest.Workdir, config, addr string) attrs {
	t.Helper()
	v, ok := applyState(t, w, config).Resources[addr]
	if !ok {
		t.Fatalf("the state has no %s", addr)
	}
	return v
}

// wantOutputsTrue checks that each named output of st is true: the assertions are written in HCL next to
// the configuration they check, and evaluated by the real Terraform CLI.
func wantOutputsTrue(t *testing.T, st *acctest.State, names ...string) {
	t.Helper()
	for _, n := range names {
		if v, ok := st.Outputs[n].(bool); !ok || !v {
			t.Errorf("output %s = %#v; want true", n, st.Outputs[n])
		}
	}
}

// applyError applies config in w and expects it to fail with an output matching re.
func applyError(t *testing.T, w *acctest.Workdir, config, re string) {
	t.Helper()
	_, out, err := w.Apply(config)
	switch {
	case err == nil:
		t.Errorf("the apply succeeded; want an error matching %s", re)
	case !regexp.MustCompile(re).MatchString(out):
		t.Errorf("the apply's error does not match %s:\n%s", re, out)
	}
}

// outputTrue checks that a Terraform output evaluated to true: the assertion is written in HCL next to the
// configuration it checks, and evaluated by the real Terraform CLI.
func outputTrue(name string) statecheck.StateCheck {
	return statecheck.ExpectKnownOutputValue(name, knownvalue.Bool(true))
}

func requireFunctions() []tfversion.TerraformVersionCheck {
	return []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)}
}

func roundTo(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

var (
	dateRegexp = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	anyText    = regexp.MustCompile(`\S`)
)

func regexpOf(s string) *regexp.Regexp { return regexp.MustCompile(s) }

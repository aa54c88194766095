package ec2cluster_test

import (
	"bufio"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// The plan lists the decision engine's simulation of the apply; the apply logs each step it executes
// ("apply step" with the same words). These helpers read both, so a test can prove they are the same.

var (
	planStepLine = regexp.MustCompile(`^(\d+)\. (.+?): `)
	// hclog quotes a value only when it has spaces: apply_step="replace node-2", apply_step=stop.
	logStep = regexp.MustCompile(`apply step: .*?\bapply_step=(?:"([^"]*)"|(\S+))`)
)

// plannedSteps runs terraform plan -json and returns the steps of its "Cluster Changes Planned" warning
// (none when it has none) and the warning's text.
func (e *simEnv) plannedSteps() ([]string, string) {
	e.t.Helper()
	out, _ := e.mustTerraform("plan", "-json", "-no-color", "-input=false")
	var steps []string
	var text string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var msg struct {
			Type       string `json:"type"`
			Diagnostic struct {
				Summary, Detail string
			} `json:"diagnostic"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.Type != "diagnostic" || msg.Diagnostic.Summary != "Cluster Changes Planned" {
			continue
		}
		text = msg.Diagnostic.Detail
		for _, line := range strings.Split(text, "\n") {
			if m := planStepLine.FindStringSubmatch(line); m != nil {
				steps = append(steps, m[2])
			}
		}
	}
	return steps, text
}

// appliedSteps are the steps the provider logged executing since the log had from bytes.
func (e *simEnv) appliedSteps(from int) []string {
	e.t.Helper()
	var steps []string
	for _, line := range strings.Split(e.providerLog()[from:], "\n") {
		if m := logStep.FindStringSubmatch(line); m != nil {
			steps = append(steps, m[1]+m[2])
		}
	}
	return steps
}

// planIsApply plans, checks the plan lists want (when want is not nil), applies (expecting failure when
// fails is set), and checks that the steps the apply executed are the plan's, in order. It returns the
// plan's text, the apply's output and its seconds.
func (e *simEnv) planIsApply(what string, want []string, fails bool) (plan, out string, secs float64) {
	e.t.Helper()
	planned, plan := e.plannedSteps()
	if want != nil && !slices.Equal(planned, want) {
		e.t.Errorf("%s: the plan lists %q; want %q\n%s", what, planned, want, plan)
	}
	from := len(e.providerLog())
	if fails {
		var err error
		out, err = e.terraform("apply", "-auto-approve", "-no-color", "-input=false")
		if err == nil {
			e.t.Errorf("%s: the apply succeeded; want it to stop:\n%s", what, out)
		}
	} else {
		out, secs = e.mustTerraform("apply", "-auto-approve", "-no-color", "-input=false")
	}
	applied := e.appliedSteps(from)
	if !slices.Equal(applied, planned) {
		e.t.Errorf("%s: the apply executed %q, the plan listed %q\n%s", what, applied, planned, plan)
	} else {
		e.t.Logf("%s: plan and apply agree: %q", what, applied)
	}
	return plan, out, secs
}

package ec2cluster_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// checkParameters changes a parameter a reload applies (work_mem) and one that needs a restart
// (shared_buffers) with a writer running: the plan changes Patroni's configuration and replaces nothing;
// the apply keeps every instance, every node runs the new values, the restarts ran standbys first and the
// primary last, and no acknowledged commit is lost. Then max_connections lowered: the primary first.
func (e *simEnv) checkParameters(before clusterState, password string) {
	e.t.Helper()
	w := e.startWriter(before.ConnectionURI, password)
	e.params = `{ shared_buffers = "96MB", max_connections = "50", work_mem = "8MB" }`
	e.config("sim", "m6id.xlarge", true)
	plan, _ := e.mustTerraform("plan", "-no-color", "-input=false")
	plan = strings.Join(strings.Fields(plan), " ") // Terraform wraps a warning's lines
	if !strings.Contains(plan, "change Patroni's dynamic configuration") || !strings.Contains(plan, "shared_buffers: 64MB -> 96MB") ||
		!strings.Contains(plan, "work_mem: (unset) -> 8MB") || strings.Contains(plan, ". replace ") {
		e.t.Errorf("the plan of a parameter change should change Patroni's configuration and replace nothing:\n%s", plan)
	}
	logStart := len(e.providerLog())
	_, secs := e.mustTerraform("apply", "-auto-approve", "-no-color", "-input=false")
	after := e.state()
	e.t.Logf("parameters changed (work_mem by a reload, shared_buffers by a restart): %.0f s; writer acknowledged %d commits, 0 lost (checked)", secs, w.finish())
	if !maps.Equal(after.AWS.InstanceIDs, before.AWS.InstanceIDs) {
		e.t.Errorf("a parameter change replaced instances: %v -> %v", before.AWS.InstanceIDs, after.AWS.InstanceIDs)
	}
	if after.AWS.ConfigApplied == nil || !*after.AWS.ConfigApplied || len(after.AWS.PendingRestart) != 0 {
		e.t.Errorf("after the apply: configuration_applied %v, pending_restart %v; want true and none", after.AWS.ConfigApplied, after.AWS.PendingRestart)
	}
	for _, n := range after.Nodes {
		uri := "postgresql://postgres@" + net.JoinHostPort(n.Host, "5432") + "/postgres"
		if got := e.psql(uri, password, "SELECT current_setting('shared_buffers') || ' ' || current_setting('work_mem')"); got != "96MB 8MB" {
			e.t.Errorf("node %s (%s) runs shared_buffers and work_mem %q; want 96MB 8MB", n.Name, n.Role, got)
		}
	}
	// The restarts, from the provider's log: every node once, the primary last.
	order := e.restarts(logStart)
	primary := ""
	for _, n := range after.Nodes {
		if n.Role == "primary" {
			primary = n.Name
		}
	}
	if len(order) != 3 || order[2] != primary {
		e.t.Errorf("restarts %v; want the three nodes once each, the primary %s last", order, primary)
	}
	e.t.Logf("restart order %v (primary %s)", order, primary)
	e.emptyPlan("after a parameter change")

	// Drift: work_mem changed behind Terraform's back (as patronictl edit-config would). The refresh sees
	// it, the plan puts it back, the apply does.
	e.patroni(after.AWS.PrivateIPs[primary], http.MethodPatch, "/config", `{"postgresql": {"parameters": {"work_mem": "16MB"}}}`, e.secret(after.AWS.SSMPath+"/restapi-password"))
	plan, _ = e.mustTerraform("plan", "-no-color", "-input=false")
	plan = strings.Join(strings.Fields(plan), " ")
	if !strings.Contains(plan, "work_mem: 16MB -> 8MB") || !strings.Contains(plan, "configuration_applied") {
		e.t.Errorf("the plan after work_mem drifted should put it back:\n%s", plan)
	}
	e.mustTerraform("apply", "-auto-approve", "-no-color", "-input=false")
	for _, n := range after.Nodes {
		uri := "postgresql://postgres@" + net.JoinHostPort(n.Host, "5432") + "/postgres"
		if got := e.psql(uri, password, "SHOW work_mem"); got != "8MB" {
			e.t.Errorf("after the drift was put back node %s runs work_mem %q; want 8MB", n.Name, got)
		}
	}
	e.emptyPlan("after putting back a drifted parameter")

	// Lowered where a hot standby must not have it below its primary's (max_connections): the primary
	// restarts first, each standby after it, once each (Patroni's pending_restart_reason says it lowers).
	order = e.applyParams(`{ shared_buffers = "96MB", max_connections = "40", work_mem = "8MB" }`)
	if len(order) != 3 || order[0] != primary {
		e.t.Errorf("max_connections lowered: restarts %v; want the three nodes once each, the primary %s first", order, primary)
	}
	for _, n := range after.Nodes {
		uri := "postgresql://postgres@" + net.JoinHostPort(n.Host, "5432") + "/postgres"
		if got := e.psql(uri, password, "SHOW max_connections"); got != "40" {
			e.t.Errorf("after lowering max_connections node %s runs %q; want 40", n.Name, got)
		}
	}
	e.t.Logf("max_connections lowered: restart order %v (primary %s)", order, primary)
	e.emptyPlan("after lowering max_connections")

	// And raised back, the standbys first. (The stages after this one add nodes seeded from base backups
	// taken at 50: left at 40, such a node would start with its backup's 50, as a standby must, and need a
	// restart the plan could not list.)
	order = e.applyParams(`{ shared_buffers = "96MB", max_connections = "50", work_mem = "8MB" }`)
	if len(order) != 3 || order[2] != primary {
		e.t.Errorf("max_connections raised back: restarts %v; want the three nodes once each, the primary %s last", order, primary)
	}
	e.emptyPlan("after raising max_connections back")
}

// restarts are the nodes the apply restarted since the provider's log had logStart bytes, in order.
func (e *simEnv) restarts(logStart int) []string {
	var order []string
	for _, step := range e.appliedSteps(logStart) {
		if node, ok := strings.CutPrefix(step, "restart "); ok {
			order = append(order, node)
		}
	}
	return order
}

// applyParams applies the cluster with parameters params (HCL) and returns the nodes it restarted, in order.
func (e *simEnv) applyParams(params string) []string {
	e.t.Helper()
	e.params = params
	e.config("sim", "m6id.xlarge", true)
	logStart := len(e.providerLog())
	e.mustTerraform("apply", "-auto-approve", "-no-color", "-input=false")
	return e.restarts(logStart)
}

// patroni sends an authenticated request to Patroni's REST API on host and fails the test unless it
// answers 200.
func (e *simEnv) patroni(host, method, path, body, password string) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, "http://"+host+":8008"+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.SetBasicAuth("patroni", password)
	resp, err := (&http.Client{Transport: &http.Transport{DialContext: e.sim.DialContext}, Timeout: time.Minute}).Do(req)
	if err != nil {
		e.t.Fatalf("%s %s on %s: %v", method, path, host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("%s %s on %s: HTTP %d %s", method, path, host, resp.StatusCode, b)
	}
}

// providerLog is Terraform's log so far (TF_LOG_PROVIDER=INFO).
func (e *simEnv) providerLog() string {
	b, err := os.ReadFile(filepath.Join(e.dir, "terraform.log"))
	if err != nil {
		e.t.Fatalf("reading terraform's log: %v", err)
	}
	return string(b)
}

// checkScale adds node-4 (in us-east-1d, the fourth zone) and removes it again after making it the primary,
// with a writer running: the plans say so and replace nothing; node-4 joins the quorum on an interface of
// its own; its removal hands the primary over first, then leaves neither its instance nor its interface;
// the other nodes keep their instances; no acknowledged commit is lost.
func (e *simEnv) checkScale(before clusterState, passwords []string) {
	e.t.Helper()
	ctx := context.Background()
	w := e.startWriter(before.ConnectionURI, passwords[0])
	e.fourth = true
	e.config("sim", "m6id.xlarge", true)
	plan, _, secs := e.planIsApply("a node added", []string{"change Patroni's dynamic configuration", "add node-4"}, false)
	if strings.Contains(plan, ". replace ") {
		e.t.Errorf("the plan of a fourth node should add it and replace nothing:\n%s", plan)
	}
	grown := e.state()
	e.t.Logf("node-4 added: %.0f s; synchronous_standby_names %q", secs, grown.SynchronousStandbyNames)
	for node, id := range before.AWS.InstanceIDs {
		if grown.AWS.InstanceIDs[node] != id {
			e.t.Errorf("adding node-4 replaced %s's instance", node)
		}
	}
	if len(grown.Nodes) != 4 || grown.AWS.InstanceIDs["node-4"] == "" || grown.AWS.NetworkInterfaces["node-4"] == "" ||
		!strings.Contains(grown.SynchronousStandbyNames, `"node-4"`) {
		e.t.Errorf("after adding node-4: %d nodes, instances %v, interfaces %v, synchronous_standby_names %q; want node-4 in the quorum",
			len(grown.Nodes), grown.AWS.InstanceIDs, grown.AWS.NetworkInterfaces, grown.SynchronousStandbyNames)
	}
	e.emptyPlan("after adding node-4")

	// node-4 becomes the primary, then is removed: the apply hands over first.
	var leader string
	for _, n := range grown.Nodes {
		if n.Role == "primary" {
			leader = n.Name
		}
	}
	e.patroni(grown.AWS.PrivateIPs[leader], http.MethodPost, "/switchover", fmt.Sprintf(`{"leader": %q, "candidate": "node-4"}`, leader), passwords[2])
	e.waitLeader(grown, leader)
	e.waitSettled(grown)
	e.fourth = false
	e.config("sim", "m6id.xlarge", true)
	plan, _, secs = e.planIsApply("a node removed while it leads", []string{"change Patroni's dynamic configuration", "switchover node-4 to node-1", "remove node-4"}, false)
	if !strings.Contains(plan, "switchover node-4 to node-1") || !strings.Contains(plan, "remove node-4") || strings.Contains(plan, ". replace ") {
		e.t.Errorf("the plan without node-4 should hand over to node-1, remove node-4 and replace nothing:\n%s", plan)
	}
	shrunk := e.state()
	e.t.Logf("node-4, the primary, removed: %.0f s; writer acknowledged %d commits, 0 lost (checked)", secs, w.finish())
	if !maps.Equal(shrunk.AWS.InstanceIDs, before.AWS.InstanceIDs) || len(shrunk.Nodes) != 3 {
		e.t.Errorf("after removing node-4: instances %v, want the first three's %v", shrunk.AWS.InstanceIDs, before.AWS.InstanceIDs)
	}
	out, err := e.ec2.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{grown.AWS.NetworkInterfaces["node-4"]}})
	if err == nil && len(out.NetworkInterfaces) > 0 {
		e.t.Errorf("node-4's interface %s is still there", grown.AWS.NetworkInterfaces["node-4"])
	}
	insts, err := e.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{grown.AWS.InstanceIDs["node-4"]}})
	if err != nil || len(insts.Reservations) == 0 || insts.Reservations[0].Instances[0].State.Name != ec2types.InstanceStateNameTerminated {
		e.t.Errorf("node-4's instance %s is not terminated: %v", grown.AWS.InstanceIDs["node-4"], err)
	}
	e.emptyPlan("after removing node-4")
}

package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// The glue's CRUD called directly (no Terraform CLI), on the fake platform: create, a refresh that finds
// a lost node, the repair plan and its apply, destroy. It runs in milliseconds; TestCluster_fakePlatform
// does the same through the CLI.
func TestClusterGlue_fakeDirect(t *testing.T) {
	start := time.Now()
	ctx := context.Background()
	f := NewFakePlatform()
	r := &clusterResource{platforms: map[cluster.Platform]ClusterPlatform{cluster.PlatformLocal: f}}
	var sr resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &sr)
	sch := sr.Schema
	null := tftypes.NewValue(sch.Type().TerraformType(ctx), nil)

	// What Terraform proposes for a new cluster: the configuration, computed attributes unknown.
	local, d := types.ObjectValue(clusterLocalAttrTypes, map[string]attr.Value{
		"data_dir": types.StringValue("/nonexistent/tf-fake"), "port_base": types.Int64Value(40000), "run_as_user": types.StringNull(),
		"limits": types.ObjectNull(clusterLimitsAttrTypes), "data_dirs": types.MapUnknown(types.StringType), "durability_watcher_running": types.BoolUnknown(), "backup_scheduler_running": types.BoolUnknown(),
		"cgroups": types.MapUnknown(types.StringType), "block_devices": types.MapUnknown(types.StringType),
	})
	if d.HasError() {
		t.Fatal(d)
	}
	proposed := clusterModel{ID: types.StringUnknown(), Name: types.StringValue("tf-fake"), PostgresMajor: types.Int64Unknown(),
		NodeCount: types.Int64Null(), Node: types.ListNull(types.ObjectType{AttrTypes: clusterNodeInputAttrTypes}),
		Synchronous: types.ObjectNull(clusterSynchronousAttrTypes), Parameters: types.MapNull(types.StringType),
		Archive: types.ObjectNull(clusterArchiveAttrTypes), Backup: types.ObjectNull(objectAttrTypes(clusterTypes["backup"])), Local: local, AWS: types.ObjectNull(clusterAWSAttrTypes),
		Nodes:   types.ListUnknown(types.ObjectType{AttrTypes: clusterNodeAttrTypes}),
		Primary: types.ObjectUnknown(clusterPrimaryAttrTypes), ConnectionURI: types.StringUnknown(), ReadOnlyConnectionURI: types.StringUnknown(),
		SynchronousStandbyNames: types.StringUnknown(), SynchronousDegraded: types.BoolUnknown(), ArchiveStatus: types.ObjectUnknown(clusterArchiveStatusAttrTypes),
		Restore: types.ObjectNull(clusterRestoreAttrTypes), Restored: types.ObjectUnknown(clusterRestoredAttrTypes), AcceptDataLossAtLSN: types.StringNull(),
		TLS: types.ObjectNull(clusterTLSAttrTypes)}
	plan := tfsdk.Plan{Schema: sch, Raw: null}
	if d := plan.Set(ctx, &proposed); d.HasError() {
		t.Fatal(d)
	}
	config := tfsdk.Config{Schema: sch, Raw: plan.Raw}
	noState := tfsdk.State{Schema: sch, Raw: null}

	// Plan and create.
	mp := resource.ModifyPlanResponse{Plan: plan}
	r.ModifyPlan(ctx, resource.ModifyPlanRequest{Config: config, Plan: plan, State: noState}, &mp)
	mustOK(t, "plan", mp.Diagnostics)
	cr := resource.CreateResponse{State: noState}
	r.Create(ctx, resource.CreateRequest{Config: config, Plan: mp.Plan}, &cr)
	mustOK(t, "create", cr.Diagnostics)
	got := model(t, cr.State.Get)
	if got.ID.ValueString() != "tf-fake" || got.ConnectionURI.ValueString() != "postgresql://postgres@127.0.0.1:40000/postgres" || roles(t, got) != "node-1=primary/running node-2=standby/running node-3=standby/running" {
		t.Fatalf("after create: id %s, uri %s, nodes %s", got.ID, got.ConnectionURI, roles(t, got))
	}

	// node-3's machine is lost: the refresh shows it.
	f.Lose("tf-fake", "node-3")
	rr := resource.ReadResponse{State: cr.State}
	r.Read(ctx, resource.ReadRequest{State: cr.State}, &rr)
	mustOK(t, "refresh", rr.Diagnostics)
	if got := roles(t, model(t, rr.State.Get)); got != "node-1=primary/running node-2=standby/running node-3=/missing" {
		t.Fatalf("after the refresh: %s", got)
	}

	// The plan repairs node-3 alone and says so.
	proposed2 := tfsdk.Plan{Schema: sch, Raw: rr.State.Raw}
	mp = resource.ModifyPlanResponse{Plan: proposed2}
	r.ModifyPlan(ctx, resource.ModifyPlanRequest{Config: config, Plan: proposed2, State: rr.State}, &mp)
	mustOK(t, "repair plan", mp.Diagnostics)
	if len(mp.Diagnostics.Warnings()) != 1 || !strings.Contains(mp.Diagnostics.Warnings()[0].Detail(), "reseed node-3") {
		t.Fatalf("the plan should warn with the repair: %v", mp.Diagnostics)
	}
	if got := roles(t, model(t, mp.Plan.Get)); got != "node-1=primary/running node-2=standby/running node-3=standby/running" {
		t.Fatalf("planned: %s", got)
	}
	ur := resource.UpdateResponse{State: rr.State}
	r.Update(ctx, resource.UpdateRequest{Config: config, Plan: mp.Plan, State: rr.State}, &ur)
	mustOK(t, "repair", ur.Diagnostics)
	if got := roles(t, model(t, ur.State.Get)); got != "node-1=primary/running node-2=standby/running node-3=standby/running" {
		t.Fatalf("after the repair: %s", got)
	}
	if calls := strings.Join(f.Calls(), ","); !strings.Contains(calls, "repair node-3") || strings.Contains(calls, "repair node-1") || strings.Contains(calls, "repair node-2") {
		t.Fatalf("only node-3 should be repaired: %s", calls)
	}
	// The platform is handed what the state records: nothing for the create's plan, the configuration last
	// applied and the members for the repair's plan and apply.
	priors := f.Priors()
	if len(priors) < 3 || priors[0].Spec != nil || len(priors[0].Members) != 0 {
		t.Fatalf("the create's plan got %+v; want no prior", priors)
	}
	for _, pr := range priors[len(priors)-2:] {
		if pr.Spec == nil || pr.Spec.Name != "tf-fake" || len(pr.Members) != 3 {
			t.Errorf("the repair got prior spec %+v and %d members; want the state's configuration and its 3 members", pr.Spec, len(pr.Members))
		}
	}

	// A change of postgres_major replaces the cluster (RequiresReplace); the plan says loudly what that does.
	major := model(t, ur.State.Get)
	major.PostgresMajor = types.Int64Value(major.PostgresMajor.ValueInt64() + 1)
	proposed3 := tfsdk.Plan{Schema: sch, Raw: ur.State.Raw}
	if d := proposed3.Set(ctx, &major); d.HasError() {
		t.Fatal(d)
	}
	mp = resource.ModifyPlanResponse{Plan: proposed3}
	r.ModifyPlan(ctx, resource.ModifyPlanRequest{Config: config, Plan: proposed3, State: ur.State}, &mp)
	var warned bool
	for _, w := range mp.Diagnostics.Warnings() {
		if wp, ok := w.(diag.DiagnosticWithPath); ok && wp.Path().String() == "postgres_major" && strings.Contains(w.Summary(), "Destroys This Cluster") &&
			strings.Contains(w.Detail(), "postgres_major 15 -> 16") && strings.Contains(w.Detail(), "only a cluster of PostgreSQL 15 can restore it") {
			warned = true
		}
	}
	if !warned {
		t.Fatalf("a plan changing postgres_major 15 -> 16 should warn at postgres_major that it destroys the cluster: %v", mp.Diagnostics)
	}

	// Destroy.
	dr := resource.DeleteResponse{State: ur.State}
	r.Delete(ctx, resource.DeleteRequest{State: ur.State}, &dr)
	mustOK(t, "destroy", dr.Diagnostics)
	if f.Has("tf-fake") {
		t.Fatal("the cluster outlived destroy")
	}
	t.Logf("create, refresh with a lost node, repair plan and apply, destroy: %s", time.Since(start).Round(time.Microsecond))
}

func mustOK(t *testing.T, step string, d diag.Diagnostics) {
	t.Helper()
	if d.HasError() {
		t.Fatalf("%s: %v", step, d.Errors())
	}
}

func model(t *testing.T, get func(context.Context, any) diag.Diagnostics) clusterModel {
	t.Helper()
	var m clusterModel
	if d := get(context.Background(), &m); d.HasError() {
		t.Fatal(d)
	}
	return m
}

func roles(t *testing.T, m clusterModel) string {
	t.Helper()
	var nodes []clusterNodeOutput
	if d := m.Nodes.ElementsAs(context.Background(), &nodes, false); d.HasError() {
		t.Fatal(d)
	}
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name+"="+n.Role+"/"+n.State)
	}
	return strings.Join(out, " ")
}

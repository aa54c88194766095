package provider

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
)

// Every input of the aws block reaches a field of awsspec.Input and comes back from it: a block attribute
// with no field of the same name, or a field read wrong, fails here (no key list to keep).
func TestAWSBlockRoundTrip(t *testing.T) {
	ctx := context.Background()
	var diags diag.Diagnostics
	want := awsspec.Block{
		Region: "eu-west-1", InstanceType: "m6id.large", AMIID: "ami-0123456789abcdef0", AMIParameter: "/my/ami",
		SubnetIDs: map[string]string{"eu-west-1a": "subnet-1"}, SecurityGroupIDs: []string{"sg-1"}, AllowedCIDRs: []string{"10.0.0.0/16"},
		IAMInstanceProfile: "db", NodePolicyJSON: `{"Statement":[]}`, KeyName: "ops", PlacementGroup: "racks", RootVolumeGiB: 24,
		MetadataHopLimit: 3, Patroni: awsspec.Patroni{TTL: 40, LoopWait: 5, MaximumLagOnFailover: 1 << 20}, APIAddress: awsspec.APIAddressPublic,
		Tags: map[string]string{"team": "db"}, DeletionProtection: true, LoadBalancer: true,
	}
	obj := awsObject(ctx, &want, &diags)
	// Each input was written (outputs stay null until a refresh).
	for name, v := range obj.Attributes() {
		if !clusterAWSOutputs[name] && v.IsNull() {
			t.Errorf("aws.%s is null: no field of awsspec.Block carries it", name)
		}
	}
	in, ok := awsInput(ctx, obj, &diags)
	if diags.HasError() || !ok {
		t.Fatalf("awsInput: %v, ok %v", diags, ok)
	}
	if in.DeletionProtection == nil || !*in.DeletionProtection {
		t.Fatalf("deletion protection as given: %v; want true", in.DeletionProtection)
	}
	got := in.Block // the input's deletion protection is the pointer above (unset defaults to true)
	got.DeletionProtection = *in.DeletionProtection
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	// Unset inputs: zero values, deletion protection unset (nil), the patroni object null.
	attrs := nullAttrs(clusterAWSAttrTypes)
	attrs["instance_type"], attrs["subnet_ids"] = types.StringValue("m6id.large"), stringMap(ctx, map[string]string{"eu-west-1a": "subnet-1"}, &diags)
	in, ok = awsInput(ctx, types.ObjectValueMust(clusterAWSAttrTypes, attrs), &diags)
	if diags.HasError() || !ok || in.DeletionProtection != nil || in.Patroni != (awsspec.Patroni{}) || in.MetadataHopLimit != 0 || in.KeyName != "" {
		t.Errorf("unset inputs: %+v, %v, ok %v", in, diags, ok)
	}
	// An unknown input, nested too, is not an input yet; an unknown ami_id is "" (the platform resolves it).
	for name, v := range map[string]attr.Value{
		"key_name": types.StringUnknown(),
		"patroni": types.ObjectValueMust(clusterAWSPatroniAttrTypes, map[string]attr.Value{
			"ttl": types.Int64Unknown(), "loop_wait": types.Int64Null(), "retry_timeout": types.Int64Null(), "maximum_lag_on_failover": types.Int64Null()}),
		"ami_id": types.StringUnknown(),
	} {
		a := cloneAttrs(attrs)
		a[name] = v
		in, ok := awsInput(ctx, types.ObjectValueMust(clusterAWSAttrTypes, a), &diags)
		if wantOK := name == "ami_id"; ok != wantOK || (ok && in.AMIID != "") {
			t.Errorf("unknown %s: ok %v; want %v", name, ok, wantOK)
		}
	}
}

func cloneAttrs(m map[string]attr.Value) map[string]attr.Value {
	out := make(map[string]attr.Value, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// archive_status's model and the schema's types agree (ObjectValueFrom checks every field both ways), and
// each reading lands in its attribute.
func TestArchiveStatusValue(t *testing.T) {
	ctx := context.Background()
	var diags diag.Diagnostics
	at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	h := &archive.Health{LastArchived: "000000020000000000000007", LastArchivedAt: at, Segments: 6, Known: true, Unarchived: 1, ArchivingOK: true,
		Failures:     archive.Failures{Count: 2, LastWAL: "000000020000000000000005", LastAt: at},
		Backups:      []archive.Backup{{Label: "20261207-100000F", Type: "full", Stop: at.Unix(), Size: 1 << 30}},
		Verification: &archive.Verification{Timeline: 2, VerifiedAt: at, OK: true, Detail: "verified"}}
	v := archiveStatusValue(ctx, h, &diags)
	if diags.HasError() {
		t.Fatal(diags)
	}
	a := v.Attributes()
	for name, want := range map[string]attr.Value{
		"last_archived_wal": types.StringValue("000000020000000000000007"), "archived_segments": types.Int64Value(6), "unarchived_segments": types.Int64Value(1),
		"archiving_ok": types.BoolValue(true), "failed_count": types.Int64Value(2), "last_backup_label": types.StringValue("20261207-100000F"),
		"last_backup_at": types.StringValue("2026-12-07T10:00:00Z"), "last_backup_size_bytes": types.Int64Value(1 << 30), "verified_timeline": types.Int64Value(2),
		"verification_ok": types.BoolValue(true), "first_missing_wal": types.StringNull(), "recoverable_from": types.StringNull(),
	} {
		if !a[name].Equal(want) {
			t.Errorf("archive_status.%s = %s; want %s", name, a[name], want)
		}
	}
	if len(a) != len(clusterArchiveStatusAttrTypes) || len(a) != 20 {
		t.Errorf("archive_status has %d attributes; the schema %d (20)", len(a), len(clusterArchiveStatusAttrTypes))
	}
	if !archiveStatusValue(ctx, nil, &diags).IsNull() {
		t.Error("no archive: archive_status not null")
	}
}

package ec2cluster

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
)

// The kept configuration round-trips, a document from before the version (the bare input) still reads,
// and a document of a newer version is refused with what to do.
func TestSpecDocument(t *testing.T) {
	s := fakeSpec(true)
	doc, err := encodeSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeSpec(doc)
	if err != nil || got.Name != s.Name || awsspec.Of(got) == nil || awsspec.Of(got).InstanceType != awsspec.Of(s).InstanceType || len(got.Nodes) != 3 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	pack := func(v any) string {
		b, _ := json.Marshal(v)
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(b)
		_ = w.Close()
		return base64.StdEncoding.EncodeToString(buf.Bytes())
	}
	// What the provider wrote before the version: cluster.Input's JSON with the aws block beside its fields.
	bare := json.RawMessage(`{"Name":"t","PostgresMajor":15,"Nodes":[{"Name":"node-1","Zone":"eu-west-1a"}],"Archive":{"WALGEnv":{"WALG_S3_PREFIX":"s3://b/p"}},` +
		`"AWS":{"InstanceType":"m6id.large","SubnetIDs":{"eu-west-1a":"subnet-1"},"LoadBalancer":true,"DeletionProtection":false}}`)
	legacy, err := decodeSpec(pack(bare))
	if a := awsspec.Of(legacy); err != nil || legacy.Name != "t" || a == nil || a.InstanceType != "m6id.large" || !a.LoadBalancer || a.DeletionProtection || a.RootVolumeGiB != awsspec.DefaultRootVolumeGiB {
		t.Errorf("a document without a version: %+v, %v", legacy, err)
	}
	// The versioned document of the same shape.
	if v1, err := decodeSpec(pack(map[string]any{"version": 1, "input": bare})); err != nil || awsspec.Of(v1) == nil || !awsspec.Of(v1).LoadBalancer {
		t.Errorf("a version 1 document: %+v, %v", v1, err)
	}
	if _, err := decodeSpec(pack(specDocument{Version: specVersion + 1, Input: &keptInput{Input: *s.Given}})); err == nil || !strings.Contains(err.Error(), "newer provider") {
		t.Errorf("a newer version: %v; want a refusal naming a newer provider", err)
	}
}

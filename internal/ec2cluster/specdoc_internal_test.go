package ec2cluster

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
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
	if err != nil || got.Name != s.Name || got.AWS == nil || got.AWS.InstanceType != s.AWS.InstanceType || len(got.Nodes) != 3 {
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
	if legacy, err := decodeSpec(pack(s.Given)); err != nil || legacy.Name != s.Name || legacy.AWS == nil {
		t.Errorf("a document without a version: %+v, %v", legacy, err)
	}
	if _, err := decodeSpec(pack(specDocument{Version: specVersion + 1, Input: s.Given})); err == nil || !strings.Contains(err.Error(), "newer provider") {
		t.Errorf("a newer version: %v; want a refusal naming a newer provider", err)
	}
}

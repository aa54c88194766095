package ec2cluster

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
)

// The cluster's configuration is kept next to its passwords, as the plain String parameter
// <ssm path>/spec (gzip JSON in base64, to stay within a standard parameter's 4 KB), so that an import
// finds every input again: the archive and the parameters too, which no tag or instance holds. It holds no
// secret (the configuration refuses secrets). Decisions read the configuration last applied from
// Terraform's state (cluster.Prior); this copy serves import, and a create resumed without state.
//
// The document is {"version": specVersion, "input": <cluster.Input>}; a document without a version is
// the bare cluster.Input that came before it.

// specVersion is the kept document's format version.
const specVersion = 1

// specDocument is the kept document.
type specDocument struct {
	Version int        `json:"version"`
	Input   *keptInput `json:"input"`
}

// keptInput is the configuration as given: the neutral input and, beside its fields, the aws block (the
// JSON the provider wrote before the blocks had packages of their own, which it still reads).
type keptInput struct {
	cluster.Input
	AWS *awsspec.Input `json:",omitempty"`
}

// spec is the configuration k keeps, defaults filled in.
func (k keptInput) spec() cluster.Spec {
	in := k.Input
	in.Blocks = nil
	if k.AWS != nil {
		in.Blocks = []cluster.BlockInput{k.AWS}
	}
	return cluster.FromInput(in)
}

func specParameter(name string) string { return awsspec.SSMPath(name) + "/spec" }

func encodeSpec(s cluster.Spec) (string, error) {
	if s.Given == nil {
		return "", fmt.Errorf("the cluster's configuration as given is not known; this is a bug in the provider")
	}
	kept := &keptInput{Input: *s.Given, AWS: awsspec.InputOf(*s.Given)}
	b, err := json.Marshal(specDocument{Version: specVersion, Input: kept})
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	_, _ = w.Write(b) // writes to a bytes.Buffer never fail
	if err := w.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// decodeSpec is the configuration kept by encodeSpec, defaults filled in (Given holds it as given).
func decodeSpec(v string) (cluster.Spec, error) {
	var s cluster.Spec
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return s, fmt.Errorf("decoding the cluster's configuration parameter: %w", err)
	}
	r, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return s, fmt.Errorf("decoding the cluster's configuration parameter: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return s, fmt.Errorf("decoding the cluster's configuration parameter: %w", err)
	}
	var doc specDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		return s, fmt.Errorf("decoding the cluster's configuration parameter: %w", err)
	}
	switch {
	case doc.Version == 0: // before the version: the bare input
		var in keptInput
		if err := json.Unmarshal(b, &in); err != nil {
			return s, fmt.Errorf("decoding the cluster's configuration parameter: %w", err)
		}
		return in.spec(), nil
	case doc.Version > specVersion || doc.Input == nil:
		return s, fmt.Errorf("the cluster's configuration parameter is version %d, which this provider cannot read (it reads up to %d): use a newer provider", doc.Version, specVersion)
	}
	return doc.Input.spec(), nil
}

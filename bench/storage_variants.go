package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// StorageVariant is one arm "the tuned set with Parameter changed": removed (Value empty, PostgreSQL's
// default applies) or set to Value; its figures are a TwinPair's.
type StorageVariant struct {
	Parameter string `json:"parameter"`
	// TunedValue is the parameter's value in the tuned set, empty when the set does not hold it.
	TunedValue string `json:"tuned_value"`
	Value      string `json:"value,omitempty"`
}

// name is the arm's name in the bench's lines.
func (v StorageVariant) name() string {
	if v.Value == "" {
		return "tuned without " + v.Parameter
	}
	return "tuned with " + v.Parameter + " = " + v.Value
}

// params is the arm's parameters, as an HCL expression over the tuned set.
func (v StorageVariant) params() string {
	if v.Value == "" {
		return fmt.Sprintf("{ for k, v in %s : k => v if k != %q }", tunedParams, v.Parameter)
	}
	return fmt.Sprintf("merge(%s, { %q = %q })", tunedParams, v.Parameter, v.Value)
}

// storageVariants parses -storage-without (parameter names) and -storage-with (name=value pairs) into arms,
// checked against the tuned set: a parameter removed must be in it, and one set to another value must not
// be set to the tuned value already.
func storageVariants(tuned map[string]string, without, with []string) ([]StorageVariant, error) {
	known := func() string { return strings.Join(slices.Sorted(maps.Keys(tuned)), ", ") }
	var out []StorageVariant
	for _, k := range without {
		v, ok := tuned[k]
		if !ok {
			return nil, fmt.Errorf("-storage-without %s: not in the tuned set for this machine (%s)", k, known())
		}
		out = append(out, StorageVariant{Parameter: k, TunedValue: v})
	}
	for _, kv := range with {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("-storage-with %q: want name=value, e.g. max_wal_size=8GB", kv)
		}
		if tuned[k] == v {
			return nil, fmt.Errorf("-storage-with %s: the tuned set already has %s = %s", kv, k, v)
		}
		out = append(out, StorageVariant{Parameter: k, TunedValue: tuned[k], Value: v})
	}
	return out, nil
}

package acctest

import (
	"slices"
	"testing"
)

// splitDiagnostics keeps each error with its location and detail, drops warnings and the text around them.
func TestSplitDiagnostics(t *testing.T) {
	out := `
Planning failed. Terraform encountered an error while generating this plan.

Warning: Deprecated attribute

  on case_001/main.tf line 3, in resource "pgnvme_cluster" "x":
   3:   old = 1

Use new.

Error: Invalid Node Count

  with module.case_002.pgnvme_cluster.x,
  on case_002/main.tf line 1, in resource "pgnvme_cluster" "x":
   1: resource "pgnvme_cluster" "x" {

The cluster has 10 nodes; give it 1 to 9.

Error: Missing Platform Block

  on case_005/main.tf line 4:
   4: resource "pgnvme_cluster" "y" {

Add local { data_dir = ... } or aws { instance_type = ... }.
`
	got := splitDiagnostics(out)
	want := []string{
		"Error: Invalid Node Count\n\n  with module.case_002.pgnvme_cluster.x,\n  on case_002/main.tf line 1, in resource \"pgnvme_cluster\" \"x\":\n   1: resource \"pgnvme_cluster\" \"x\" {\n\nThe cluster has 10 nodes; give it 1 to 9.",
		"Error: Missing Platform Block\n\n  on case_005/main.tf line 4:\n   4: resource \"pgnvme_cluster\" \"y\" {\n\nAdd local { data_dir = ... } or aws { instance_type = ... }.",
	}
	if !slices.Equal(got, want) {
		t.Errorf("splitDiagnostics:\n%q\nwant\n%q", got, want)
	}
	for i, d := range got {
		if m := caseFile.FindStringSubmatch(d); m == nil || m[1] != []string{"002", "005"}[i] {
			t.Errorf("diagnostic %d names case %v", i, m)
		}
	}
}

package localspec_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
)

func TestSupportedOn(t *testing.T) {
	for _, tc := range []struct {
		goos string
		ok   bool
		name string // how the error names the system
	}{
		{goos: "linux", ok: true},
		{goos: "darwin", name: "macOS (darwin)"},
		{goos: "windows", name: "Windows (windows)"},
		{goos: "freebsd", name: "FreeBSD (freebsd)"},
		{goos: "openbsd", name: "runs on openbsd,"},
	} {
		t.Run(tc.goos, func(t *testing.T) {
			fe := localspec.SupportedOn(tc.goos)
			if tc.ok {
				if fe != nil {
					t.Fatalf("the local platform runs on %s, got %v", tc.goos, fe)
				}
				return
			}
			if fe == nil {
				t.Fatalf("the local platform does not run on %s, got no error", tc.goos)
			}
			if !slices.Equal(fe.Path, []string{"local"}) || fe.Summary != "Local Platform Needs Linux" {
				t.Errorf("want the error at local titled Local Platform Needs Linux, got %q at %v", fe.Summary, fe.Path)
			}
			for _, want := range []string{tc.name, "Run Terraform on Linux", "aws block", "pgnvme_restore_drill"} {
				if !strings.Contains(fe.Detail, want) {
					t.Errorf("detail lacks %q: %s", want, fe.Detail)
				}
			}
		})
	}
}

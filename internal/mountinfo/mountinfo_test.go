package mountinfo_test

import (
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/mountinfo"
)

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/var/lib/pgnvme`:       "/var/lib/pgnvme",
		`/tmp/a\040b`:           "/tmp/a b",
		`/tmp/tab\011and\134bs`: "/tmp/tab\tand\\bs",
		`/tmp/not\08octal`:      `/tmp/not\08octal`,
		`/tmp/trailing\04`:      `/tmp/trailing\04`,
	} {
		if got := mountinfo.Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

// The root file system is mounted at /, with a type and a source.
func TestAtRoot(t *testing.T) {
	mounts, err := mountinfo.At("/")
	if err != nil || len(mounts) == 0 || mounts[len(mounts)-1].FSType == "" {
		t.Fatalf("mounts at /: %+v, %v", mounts, err)
	}
	none, err := mountinfo.At("/no/such/mount/point")
	if err != nil || len(none) != 0 {
		t.Fatalf("mounts at a path with none: %+v, %v", none, err)
	}
}

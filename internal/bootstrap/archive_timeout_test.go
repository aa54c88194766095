package bootstrap_test

import (
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

func TestArchiveTimeout(t *testing.T) {
	for v, want := range map[string]time.Duration{"": time.Minute, "120": 2 * time.Minute, "30s": 30 * time.Second, "5min": 5 * time.Minute,
		"1h": time.Hour, "1500ms": 1500 * time.Millisecond, "0": 0, "soon": time.Minute, "5 weeks": time.Minute} {
		params := map[string]string{}
		if v != "" {
			params["archive_timeout"] = v
		}
		if got := bootstrap.ArchiveTimeout(params); got != want {
			t.Errorf("archive_timeout %q: %s, want %s", v, got, want)
		}
	}
}

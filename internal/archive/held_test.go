package archive_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

func TestGuardNames(t *testing.T) {
	basic := []string{"versioning", "public_access_block", "object_ownership", "encryption", "bucket_policy", "lifecycle"}
	if got := (archive.Spec{Bucket: "pg"}).GuardNames(); !reflect.DeepEqual(got, basic) {
		t.Errorf("without a replica: %v", got)
	}
	s := archive.Spec{Bucket: "pg", Replica: &archive.Replica{Region: "eu-west-1", Bucket: "pg-replica"}}
	if got := s.GuardNames(); !reflect.DeepEqual(got, append(basic, "replication", "replica")) {
		t.Errorf("with a replica: %v", got)
	}
}

func TestCheckHeld(t *testing.T) {
	ok := map[string]string{"versioning": "ok", "encryption": "ok", "replication": "ok", "replica": "ok"}
	if err := archive.CheckHeld("pg", ok); err != nil {
		t.Fatalf("every guard ok: %v", err)
	}
	tests := []struct {
		name       string
		drift      map[string]string
		wantError  string
		wantAdvice []string // substrings, in order
		notAdvice  []string
	}{
		{
			name:       "delete markers dropped by the endpoint",
			drift:      map[string]string{"versioning": "ok", "replication": "delete markers are not replicated"},
			wantError:  "bucket pg read back after apply: replication: delete markers are not replicated",
			wantAdvice: []string{"did not keep delete-marker replication", "moto", "`replicate_delete_markers = false` in `replica`"},
			notAdvice:  []string{"another tool"},
		},
		{
			name:       "another guard",
			drift:      map[string]string{"versioning": "versioning is Suspended", "encryption": "ok"},
			wantError:  "bucket pg read back after apply: versioning: versioning is Suspended",
			wantAdvice: []string{"another tool that manages this bucket", "apply again"},
			notAdvice:  []string{"replicate_delete_markers"},
		},
		{
			name: "delete markers and more, every guard named in order",
			drift: map[string]string{
				"replication": "replicas are stored as STANDARD, want GLACIER; delete markers are not replicated",
				"lifecycle":   `lifecycle rule "x" is missing`,
			},
			wantError: `bucket pg read back after apply: lifecycle: lifecycle rule "x" is missing; ` +
				"replication: replicas are stored as STANDARD, want GLACIER; delete markers are not replicated",
			wantAdvice: []string{"replicate_delete_markers = false", "another tool"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := archive.CheckHeld("pg", tc.drift)
			var nh *archive.GuardsNotHeldError
			if !errors.As(err, &nh) {
				t.Fatalf("CheckHeld = %v, want a *GuardsNotHeldError", err)
			}
			if err.Error() != tc.wantError {
				t.Errorf("Error:\n got %s\nwant %s", err, tc.wantError)
			}
			for k := range nh.Drift {
				if tc.drift[k] == "ok" {
					t.Errorf("Drift holds %q, which is ok", k)
				}
			}
			if h := nh.Happened(); !strings.HasPrefix(h, "S3 accepted every setting of bucket pg, but read back right after the apply, ") ||
				!strings.Contains(h, strings.Join(nh.Guards(), ", ")) {
				t.Errorf("Happened = %q", h)
			}
			advice := nh.Advice()
			rest := advice
			for _, w := range tc.wantAdvice {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("Advice lacks %q (in order):\n%s", w, advice)
				}
				rest = rest[i+len(w):]
			}
			for _, w := range tc.notAdvice {
				if strings.Contains(advice, w) {
					t.Errorf("Advice mentions %q:\n%s", w, advice)
				}
			}
		})
	}
}

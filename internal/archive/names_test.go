package archive_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

// checkErr fails unless err is nil when wantErr is "", or its text contains wantErr.
func checkErr(t *testing.T, err error, wantErr string) {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case wantErr != "" && err == nil:
		t.Errorf("no error, want one containing %q", wantErr)
	case wantErr != "" && !strings.Contains(err.Error(), wantErr):
		t.Errorf("error %q does not contain %q", err, wantErr)
	}
}

func TestValidateBucketName(t *testing.T) {
	for _, tc := range []struct {
		name, bucket, wantErr string
	}{
		{"plain", "pg-archive", ""},
		{"digits", "123", ""},
		{"dots", "pg.archive.eu", ""},
		{"63 characters", strings.Repeat("a", 63), ""},
		{"empty", "", "empty"},
		{"too short", "ab", "3 to 63"},
		{"too long", strings.Repeat("a", 64), "at most 63"},
		{"uppercase suggests lower case", "PG-Archive", `use "pg-archive"`},
		{"uppercase and invalid otherwise", "PG_Archive", "use only lower-case letters"},
		{"underscore", "pg_archive", `contains '_'`},
		{"space", "pg archive", `contains ' '`},
		{"begins with hyphen", "-pg", "begin and end"},
		{"ends with hyphen", "pg-", "begin and end"},
		{"ends with dot", "pg.", "begin and end"},
		{"adjacent dots", "pg..archive", "two adjacent periods"},
		{"IP-like", "192.168.5.4", "IP address"},
		{"IP-like, not a real address", "999.1.1.1", "IP address"},
		{"four numbers and letters", "192.168.5.a4", ""},
		{"xn-- prefix", "xn--pg-archive", `"xn--"`},
		{"sthree- prefix", "sthree-pg", `"sthree-"`},
		{"amzn-s3-demo- prefix", "amzn-s3-demo-bucket", `"amzn-s3-demo-"`},
		{"-s3alias suffix", "pg-archive-s3alias", `"-s3alias"`},
		{"--ol-s3 suffix", "pg-archive--ol-s3", `"--ol-s3"`},
		{".mrap suffix", "pg-archive.mrap", `".mrap"`},
		{"--x-s3 suffix", "pg-archive--x-s3", `"--x-s3"`},
		{"--table-s3 suffix", "pg-archive--table-s3", `"--table-s3"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, archive.ValidateBucketName(tc.bucket), tc.wantErr)
		})
	}
}

func TestValidateBucketPrefix(t *testing.T) {
	for _, tc := range []struct {
		name, prefix, wantErr string
	}{
		{"plain", "pg-archive", ""},
		{"ends with hyphen", "pg-archive-", ""},
		{"ends with dot", "pg.", ""},
		{"37 characters", strings.Repeat("a", 37), ""},
		{"one character", "a", ""},
		{"empty", "", "empty"},
		{"too long", strings.Repeat("a", 38), "at most 37"},
		{"uppercase", "PG-", `use "pg-"`},
		{"underscore", "pg_", `contains '_'`},
		{"begins with hyphen", "-pg", "must begin"},
		{"adjacent dots", "pg..", "adjacent periods"},
		{"xn-- prefix", "xn--pg", `"xn--"`},
		{"sthree- prefix", "sthree-", `"sthree-"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := archive.ValidateBucketPrefix(tc.prefix)
			checkErr(t, err, tc.wantErr)
			if err == nil {
				name := archive.GeneratedBucketName(tc.prefix, strings.Repeat("7", archive.GeneratedSuffixLength))
				if err := archive.ValidateBucketName(name); err != nil {
					t.Errorf("prefix accepted but %q is not a valid name: %v", name, err)
				}
			}
		})
	}
}

func TestGeneratedBucketName(t *testing.T) {
	if got := archive.GeneratedBucketName("pg-", "20260101000000000000000001"); got != "pg-20260101000000000000000001" {
		t.Errorf("GeneratedBucketName = %q", got)
	}
	if archive.GeneratedSuffixLength != 26 {
		t.Errorf("GeneratedSuffixLength = %d, want 26", archive.GeneratedSuffixLength)
	}
}

func TestValidatePrefix(t *testing.T) {
	for _, tc := range []struct {
		name, prefix, wantErr string
	}{
		{"bucket root", "", ""},
		{"one segment", "main", ""},
		{"nested", "clusters/prod-1/pg_15", ""},
		{"dots inside a segment", "v1.2", ""},
		{"upper case", "Clusters/Main", ""},
		{"512 bytes", strings.Repeat("a", 512), ""},
		{"513 bytes", strings.Repeat("a", 513), "513 bytes"},
		{"leading slash", "/main", `write it as "main"`},
		{"trailing slash", "main/", `write it as "main"`},
		{"double slash", "a//b", "empty segment"},
		{"dot segment", "a/./b", `"." segment`},
		{"dot-dot segment", "a/../b", `".." segment`},
		{"space", "a b", "characters other than"},
		{"non-ASCII", "clüster", "characters other than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, archive.ValidatePrefix(tc.prefix), tc.wantErr)
		})
	}
}

func TestReplicationRoleName(t *testing.T) {
	roleName := regexp.MustCompile(`^[\w+=,.@-]{1,64}$`)
	long := strings.Repeat("a", 60) + "-x1"
	longToo := strings.Repeat("a", 60) + "-x2"
	for _, tc := range []struct {
		bucket, want string
	}{
		{"pg-archive", "pgnvme-replication-pg-archive"},
		{strings.Repeat("b", 45), "pgnvme-replication-" + strings.Repeat("b", 45)},
	} {
		if got := archive.ReplicationRoleName(tc.bucket); got != tc.want {
			t.Errorf("ReplicationRoleName(%q) = %q, want %q", tc.bucket, got, tc.want)
		}
	}
	a, b := archive.ReplicationRoleName(long), archive.ReplicationRoleName(longToo)
	for _, n := range []string{a, b} {
		if len(n) != 64 || !roleName.MatchString(n) || !strings.HasPrefix(n, "pgnvme-replication-aaaa") {
			t.Errorf("ReplicationRoleName of a long bucket = %q (%d characters), want a valid 64-character name", n, len(n))
		}
	}
	if a == b {
		t.Errorf("two long buckets share the role name %q", a)
	}
	if again := archive.ReplicationRoleName(long); again != a {
		t.Errorf("not deterministic: %q then %q", a, again)
	}
}

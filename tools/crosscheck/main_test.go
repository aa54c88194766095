package main

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		target string
		want   string // in the one error; "" for none
	}{
		{"linux/amd64", ""},
		{"darwin/arm64", "undefined: syscall.MS_NOATIME"},
		{"windows/amd64", "undefined: syscall.MS_NOATIME"},
		{"linux/386", "as int value in variable declaration (overflows)"},
		{"linux/arm", "as int value in variable declaration (overflows)"},
	} {
		t.Run(tc.target, func(t *testing.T) {
			goos, goarch, _ := strings.Cut(tc.target, "/")
			n, errs, err := check("testdata/fixture", ".", goos, goarch)
			if err != nil {
				t.Fatal(err)
			}
			if n < 2 {
				t.Errorf("checked %d packages; want the fixture and what it imports", n)
			}
			if tc.want == "" {
				if len(errs) > 0 {
					t.Errorf("want no error, got %q", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0], tc.want) || !strings.Contains(errs[0], "main.go:") {
				t.Errorf("want one error at main.go with %q, got %q", tc.want, errs)
			}
		})
	}
}

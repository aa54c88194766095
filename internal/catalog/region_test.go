package catalog_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
)

func useast1() catalog.Region {
	return catalog.Region{
		Name: "us-east-1",
		Zones: []catalog.Zone{
			{Name: "us-east-1b", ID: "use1-az1"},
			{Name: "us-east-1c", ID: "use1-az2"},
			{Name: "us-east-1d", ID: "use1-az4"},
			{Name: "us-east-1a", ID: "use1-az6"},
		},
		Offerings: map[string][]string{},
	}
}

func TestRegionZoneLookup(t *testing.T) {
	t.Parallel()
	r := useast1()
	if z, ok := r.ZoneByName("us-east-1a"); !ok || z.ID != "use1-az6" {
		t.Errorf("ZoneByName(us-east-1a) = %+v, %v", z, ok)
	}
	if z, ok := r.ZoneByID("use1-az1"); !ok || z.Name != "us-east-1b" {
		t.Errorf("ZoneByID(use1-az1) = %+v, %v", z, ok)
	}
	if _, ok := r.ZoneByName("use1-az1"); ok {
		t.Error("ZoneByName accepted a zone ID")
	}
	if _, ok := r.ZoneByID("us-east-1a"); ok {
		t.Error("ZoneByID accepted a zone name")
	}
}

func TestResolveZones(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		region   catalog.Region
		names    []string
		ids      []string
		want     []string
		errParts []string // every part must be in the error
	}{
		{name: "nothing", region: useast1(), want: []string{}},
		{name: "names in input order", region: useast1(), names: []string{"us-east-1d", "us-east-1a"}, want: []string{"use1-az4", "use1-az6"}},
		{name: "ids in input order", region: useast1(), ids: []string{"use1-az6", "use1-az1"}, want: []string{"use1-az6", "use1-az1"}},
		{name: "names then ids", region: useast1(), names: []string{"us-east-1c"}, ids: []string{"use1-az1"}, want: []string{"use1-az2", "use1-az1"}},
		{
			name: "unknown name lists the valid ones", region: useast1(), names: []string{"us-east-1a", "us-east-1z"},
			errParts: []string{`"us-east-1z"`, "us-east-1", "us-east-1a, us-east-1b, us-east-1c, us-east-1d", "use1-az1, use1-az2, use1-az4, use1-az6"},
		},
		{
			name: "unknown id", region: useast1(), ids: []string{"use1-az9"},
			errParts: []string{`zone ID "use1-az9"`, "use1-az1, use1-az2, use1-az4, use1-az6"},
		},
		{
			name: "an id given as a name", region: useast1(), names: []string{"use1-az6"},
			errParts: []string{`zone name "use1-az6"`},
		},
		{
			name: "duplicate name", region: useast1(), names: []string{"us-east-1a", "us-east-1a"},
			errParts: []string{`"us-east-1a" is listed twice`},
		},
		{
			name: "duplicate id", region: useast1(), ids: []string{"use1-az1", "use1-az1"},
			errParts: []string{`"use1-az1" is listed twice`},
		},
		{
			name: "a name and its own id", region: useast1(), names: []string{"us-east-1a"}, ids: []string{"use1-az6"},
			errParts: []string{`"us-east-1a" and "use1-az6" are the same zone`},
		},
		{
			name: "region without zones", region: catalog.Region{Name: "xx-test-1"}, names: []string{"xx-test-1a"},
			errParts: []string{`"xx-test-1a"`, "no zones are known in region xx-test-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.region.ResolveZones(tt.names, tt.ids)
			if len(tt.errParts) > 0 {
				if err == nil {
					t.Fatalf("ResolveZones = %v, want an error", got)
				}
				for _, p := range tt.errParts {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("error %q does not contain %q", err, p)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolveZones: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ResolveZones = %v, want %v", got, tt.want)
			}
		})
	}
}

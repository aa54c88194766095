package catalog_test

import (
	"bytes"
	"compress/gzip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
)

func sampleSnapshot() *catalog.Snapshot {
	types, region := selectFixture()
	other := catalog.Region{
		Name:      "eu-west-1",
		Zones:     []catalog.Zone{{Name: "eu-west-1b", ID: "euw1-az1"}, {Name: "eu-west-1a", ID: "euw1-az3"}},
		Offerings: map[string][]string{"m6id.4xlarge": {"euw1-az3", "euw1-az1"}},
	}
	return &catalog.Snapshot{
		Date:    "2026-11-30",
		Origin:  "test fixture",
		Types:   types,
		Regions: []catalog.Region{region, other},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	t.Parallel()
	in := sampleSnapshot()
	b, err := catalog.Encode(in)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	out, err := catalog.Decode(b)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if out.Date != in.Date || out.Origin != in.Origin {
		t.Errorf("date/origin = %q/%q, want %q/%q", out.Date, out.Origin, in.Date, in.Origin)
	}
	if !slices.IsSortedFunc(out.Types, func(a, b catalog.InstanceType) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("decoded types are not sorted by name")
	}
	if got := out.RegionNames(); !slices.Equal(got, []string{"eu-west-1", "us-east-1"}) {
		t.Errorf("RegionNames = %v", got)
	}
	if out.Regions[0].Name != "eu-west-1" {
		t.Errorf("regions not sorted: first is %s", out.Regions[0].Name)
	}
	for _, want := range in.Types {
		i := slices.IndexFunc(out.Types, func(t catalog.InstanceType) bool { return t.Name == want.Name })
		if i < 0 {
			t.Errorf("%s lost in the round trip", want.Name)
			continue
		}
		if !reflect.DeepEqual(out.Types[i], want) {
			t.Errorf("%s = %+v, want %+v", want.Name, out.Types[i], want)
		}
	}
	eu, ok := out.Region("eu-west-1")
	if !ok {
		t.Fatal("Region(eu-west-1) not found")
	}
	if got := eu.Offerings["m6id.4xlarge"]; !slices.Equal(got, []string{"euw1-az1", "euw1-az3"}) {
		t.Errorf("offerings not sorted: %v", got)
	}
	if _, ok := out.Region("ap-south-1"); ok {
		t.Error("Region(ap-south-1) found in a snapshot without it")
	}
	// Encode does not modify its input.
	if in.Regions[0].Name != "us-east-1" || in.Regions[1].Offerings["m6id.4xlarge"][0] != "euw1-az3" {
		t.Error("Encode modified its input")
	}
}

func TestEncodeDeterministic(t *testing.T) {
	t.Parallel()
	a, err := catalog.Encode(sampleSnapshot())
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	shuffled := sampleSnapshot()
	slices.Reverse(shuffled.Types)
	slices.Reverse(shuffled.Regions)
	slices.Reverse(shuffled.Regions[0].Zones)
	b, err := catalog.Encode(shuffled)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if !bytes.Equal(a, b) {
		t.Error("Encode output depends on input order")
	}
	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatalf("gzip: %v", err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" || zr.Comment != "" {
		t.Errorf("gzip header carries %v %q %q; want no time, name or comment", zr.ModTime, zr.Name, zr.Comment)
	}
}

func TestEncodeRejects(t *testing.T) {
	t.Parallel()
	dupType := sampleSnapshot()
	dupType.Types = append(dupType.Types, dupType.Types[0])
	dupRegion := sampleSnapshot()
	dupRegion.Regions = append(dupRegion.Regions, dupRegion.Regions[0])
	dupZone := sampleSnapshot()
	dupZone.Regions[0].Zones = append(dupZone.Regions[0].Zones, dupZone.Regions[0].Zones[0])
	for name, s := range map[string]*catalog.Snapshot{
		"nil": nil, "duplicate type": dupType, "duplicate region": dupRegion, "duplicate zone": dupZone,
	} {
		if _, err := catalog.Encode(s); err == nil {
			t.Errorf("%s: Encode accepted it", name)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	gz := func(s string) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, _ = zw.Write([]byte(s))
		_ = zw.Close()
		return buf.Bytes()
	}
	tests := map[string][]byte{
		"not gzip":      []byte(`{"date":""}`),
		"truncated":     gz(`{"date":"2026-11-30","types":[`),
		"unknown field": gz(`{"date":"2026-11-30","types":[],"regions":[],"extra":1}`),
		"trailing data": gz(`{"date":"x"} {"date":"y"}`),
		"duplicate":     gz(`{"types":[{"name":"a.large"},{"name":"a.large"}]}`),
		"nameless type": gz(`{"types":[{"vcpus":2}]}`),
	}
	for name, b := range tests {
		if _, err := catalog.Decode(b); err == nil {
			t.Errorf("%s: Decode accepted it", name)
		}
	}
}

func TestEmbedded(t *testing.T) {
	t.Parallel()
	s, err := catalog.Embedded()
	if err != nil {
		t.Fatalf("Embedded: %v", err)
	}
	again, err := catalog.Embedded()
	if err != nil || again != s {
		t.Errorf("Embedded parsed twice or failed the second time: %v", err)
	}
	if _, err := time.Parse(time.DateOnly, s.Date); err != nil {
		t.Errorf("date %q is not an RFC 3339 date: %v", s.Date, err)
	}
	if !strings.Contains(s.Origin, "DescribeInstanceTypes") {
		t.Errorf("origin %q does not say where the data was read", s.Origin)
	}
	i := slices.IndexFunc(s.Types, func(t catalog.InstanceType) bool { return t.Name == "m6id.4xlarge" })
	if i < 0 {
		t.Fatal("m6id.4xlarge is not in the embedded snapshot")
	}
	m6 := s.Types[i]
	if m6.TotalGB != 950 || m6.VCPUs != 16 || m6.MemoryMiB != 65536 || m6.NVMeSupport != "required" {
		t.Errorf("m6id.4xlarge = %+v", m6)
	}
	if got := round2(m6.TotalGiB()); got != 884.76 {
		t.Errorf("m6id.4xlarge TotalGiB = %v, want 884.76", got)
	}
	for _, tt := range s.Types {
		if tt.Family() == "d3" || tt.Family() == "h1" || tt.Family() == "d2" || tt.Family() == "m5" {
			t.Errorf("%s (no SSD instance storage) is in the snapshot", tt.Name)
		}
	}
	use1, ok := s.Region("us-east-1")
	if !ok {
		t.Fatalf("us-east-1 not in %v", s.RegionNames())
	}
	zones := use1.Offerings["m6id.4xlarge"]
	if len(zones) < 3 {
		t.Fatalf("m6id.4xlarge offered in %v in us-east-1, want at least 3 zones", zones)
	}
	for _, id := range zones {
		if !strings.HasPrefix(id, "use1-az") {
			t.Errorf("zone %q is not a us-east-1 zone ID", id)
		}
		if _, ok := use1.ZoneByID(id); !ok {
			t.Errorf("offered zone %s is not among us-east-1's zones", id)
		}
	}
	got := catalog.Select(s.Types, use1, catalog.Filter{Families: []string{"m6id"}, MinNVMeGiB: 800, MaxNVMeGiB: 900})
	if len(got) != 1 || got[0].Name != "m6id.4xlarge" {
		t.Errorf("selecting m6id with 800-900 GiB in us-east-1 gave %v", got)
	}
}

// TestRequireNVMe: in the embedded snapshot's eu-west-1, asking for 100 GiB of memory selects x1e types,
// whose instance storage is not NVMe (pgnvme_cluster refuses them); RequireNVMe leaves them out and keeps
// NVMe types.
func TestRequireNVMe(t *testing.T) {
	t.Parallel()
	s, err := catalog.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	r, ok := s.Region("eu-west-1")
	if !ok {
		t.Fatal("eu-west-1 is not in the embedded snapshot")
	}
	f := catalog.Filter{MinMemoryGiB: 100, ExcludeSpecialPurpose: true, ExcludePreviousGeneration: true}
	nonNVMe := func(out []catalog.Offered) []string {
		var names []string
		for _, o := range out {
			if !o.NVMe() {
				names = append(names, o.Name)
			}
		}
		return names
	}
	if got := nonNVMe(catalog.Select(s.Types, r, f)); len(got) == 0 {
		t.Fatal("without RequireNVMe no type without NVMe is selected: the test no longer shows anything")
	}
	f.RequireNVMe = true
	out := catalog.Select(s.Types, r, f)
	if got := nonNVMe(out); len(got) > 0 || len(out) == 0 {
		t.Errorf("with RequireNVMe: %d types, of which without NVMe %v; want some, none without", len(out), got)
	}
}

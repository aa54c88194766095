package topology_test

import (
	"errors"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

func TestParseLSN(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
	}{
		{"0/3000060", 0x3000060},
		{"16/B374D848", 0x16B374D848},
		{"0/0", 0},
		{"16/b374d848", 0x16B374D848},
		{"00000016/0B374D84", 0x160B374D84},
		{"FFFFFFFF/FFFFFFFF", 0xFFFFFFFFFFFFFFFF},
		{"1/0", 1 << 32},
	}
	for _, tt := range tests {
		got, err := topology.ParseLSN(tt.in)
		if err != nil {
			t.Errorf("ParseLSN(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseLSN(%q) = %#x, want %#x", tt.in, got, tt.want)
		}
	}
}

func TestParseLSNMalformed(t *testing.T) {
	for _, in := range []string{
		"", "/", "0/", "/0", "0", "3000060", "0/3000060/1", "G/0", "0/G", " 0/1", "0/1 ", "0 /1",
		"+0/1", "-1/0", "0x0/1", "0/1_0", "123456789/0", "0/123456789", "0//1",
	} {
		got, err := topology.ParseLSN(in)
		if !errors.Is(err, topology.ErrMalformedLSN) {
			t.Errorf("ParseLSN(%q) = %#x, %v; want an error wrapping ErrMalformedLSN", in, got, err)
		}
	}
}

func TestFormatLSN(t *testing.T) {
	for _, s := range []string{"0/3000060", "16/B374D848", "0/0", "FFFFFFFF/FFFFFFFF", "1/0"} {
		v, err := topology.ParseLSN(s)
		if err != nil {
			t.Fatalf("ParseLSN(%q): %v", s, err)
		}
		if got := topology.FormatLSN(v); got != s {
			t.Errorf("FormatLSN(%#x) = %q, want %q", v, got, s)
		}
	}
}

func TestCompareLSN(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"0/3000060", "0/3000148", -1},
		{"0/3000148", "0/3000060", 1},
		{"0/3000060", "0/03000060", 0},
		{"0/3000060", "0/3000060", 0},
		{"1/0", "0/FFFFFFFF", 1},  // the high half counts first
		{"0/FFFFFFFF", "1/0", -1}, // not a string comparison
		{"0/9", "0/10", -1},       // hexadecimal, not text order
		{"16/B374D848", "16/b374d848", 0},
	}
	for _, tt := range tests {
		got, err := topology.CompareLSN(tt.a, tt.b)
		if err != nil {
			t.Errorf("CompareLSN(%q, %q): %v", tt.a, tt.b, err)
			continue
		}
		if got != tt.want {
			t.Errorf("CompareLSN(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
	for _, pair := range [][2]string{{"0/1", "x"}, {"x", "0/1"}, {"", ""}} {
		if _, err := topology.CompareLSN(pair[0], pair[1]); !errors.Is(err, topology.ErrMalformedLSN) {
			t.Errorf("CompareLSN(%q, %q): err = %v, want ErrMalformedLSN", pair[0], pair[1], err)
		}
	}
}

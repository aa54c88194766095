package capacity_test

import (
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
)

func TestParseMemory(t *testing.T) {
	tests := []struct {
		value string
		unit  int64
		want  int64
		err   bool
	}{
		{"128MB", capacity.BlockBytes, 128 << 20, false},
		{"1GB", capacity.BlockBytes, 1 << 30, false},
		{"512 kB", capacity.KiloBytes, 512 << 10, false},
		{"0.5GB", capacity.BlockBytes, 512 << 20, false},
		{"16384", capacity.BlockBytes, 128 << 20, false}, // shared_buffers counts 8 kB pages
		{"4096", capacity.KiloBytes, 4 << 20, false},     // work_mem counts kB
		{" 2TB ", capacity.BlockBytes, 2 << 40, false},
		{"100B", capacity.BlockBytes, 100, false},
		{"128mb", capacity.BlockBytes, 0, true}, // PostgreSQL's units are case-sensitive
		{"MB", capacity.BlockBytes, 0, true},
		{"", capacity.BlockBytes, 0, true},
		{"-1", capacity.BlockBytes, 0, true},
		{"1.2.3MB", capacity.BlockBytes, 0, true},
	}
	for _, tt := range tests {
		got, err := capacity.ParseMemory(tt.value, tt.unit)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseMemory(%q, %d) = %d, %v; want %d, error %v", tt.value, tt.unit, got, err, tt.want, tt.err)
		}
	}
}

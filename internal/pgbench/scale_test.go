package pgbench_test

import (
	"math"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

func TestSizeGiB(t *testing.T) {
	tests := []struct {
		scale int
		want  float64
	}{
		{0, 0},
		{1, 15680291.0 / (1 << 30)},
		{69, 69 * 15680291.0 / (1 << 30)},
		{1000, 14.6033},
		{10000, 146.033},
		{33000, 481.9}, // the talk's 3.3 billion rows, measured there at 482 GiB
	}
	for _, tt := range tests {
		got := pgbench.SizeGiB(tt.scale)
		if math.Abs(got-tt.want) > 0.001*math.Max(1, tt.want) {
			t.Errorf("SizeGiB(%d) = %.4f, want %.4f", tt.scale, got, tt.want)
		}
	}
}

func TestSizeGiBIsMonotone(t *testing.T) {
	prev := pgbench.SizeGiB(1)
	for s := 2; s <= 100000; s++ {
		got := pgbench.SizeGiB(s)
		if got <= prev {
			t.Fatalf("SizeGiB(%d) = %v is not above SizeGiB(%d) = %v", s, got, s-1, prev)
		}
		prev = got
	}
}

func TestScaleForGiB(t *testing.T) {
	tests := []struct {
		gib  float64
		want int
	}{
		{math.NaN(), 1},
		{math.Inf(-1), 1},
		{-3, 1},
		{0, 1},
		{1e-9, 1},
		{pgbench.SizeGiB(1), 1},
		{pgbench.SizeGiB(1) + 1e-12, 2},
		{1, 69},
		{13, 891},
		{pgbench.SizeGiB(1000), 1000},
		{pgbench.SizeGiB(1000) - 1e-9, 1000},
		{pgbench.SizeGiB(1000) + 1e-9, 1001},
		{482, 33006},
		{math.Inf(1), math.MaxInt},
		{1e30, math.MaxInt},
	}
	for _, tt := range tests {
		if got := pgbench.ScaleForGiB(tt.gib); got != tt.want {
			t.Errorf("ScaleForGiB(%v) = %d, want %d", tt.gib, got, tt.want)
		}
	}
}

// TestScaleForGiBInvertsSizeGiB checks that ScaleForGiB is the smallest
// scale covering the size, for sizes on and between scale steps.
func TestScaleForGiBInvertsSizeGiB(t *testing.T) {
	step := pgbench.SizeGiB(1)
	for s := 1; s <= 200000; s += 1 + s/50 {
		if got := pgbench.ScaleForGiB(pgbench.SizeGiB(s)); got != s {
			t.Fatalf("ScaleForGiB(SizeGiB(%d)) = %d", s, got)
		}
		for _, frac := range []float64{0.001, 0.5, 0.999} {
			size := pgbench.SizeGiB(s) + frac*step
			got := pgbench.ScaleForGiB(size)
			if got != s+1 {
				t.Fatalf("ScaleForGiB(%v) = %d, want %d", size, got, s+1)
			}
			if pgbench.SizeGiB(got) < size || pgbench.SizeGiB(got-1) >= size {
				t.Fatalf("ScaleForGiB(%v) = %d is not the smallest scale covering it", size, got)
			}
		}
	}
}

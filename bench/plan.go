package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// PlanBench compares `terraform plan` of examples/quickstart with the plan of an empty configuration.
type PlanBench struct {
	EmptySeconds       Stat    `json:"empty_seconds"`
	QuickstartSeconds  Stat    `json:"quickstart_seconds"`
	OverheadSeconds    float64 `json:"overhead_seconds"`
	Ratio              float64 `json:"ratio"`
	ProviderPeakRSSMiB Stat    `json:"provider_peak_rss_mib"`
}

func benchPlanOverhead(env *terraformEnv, root string, runs int) (*PlanBench, error) {
	quickstart, err := os.ReadFile(filepath.Join(root, "examples", "quickstart", "main.tf"))
	if err != nil {
		return nil, err
	}
	emptyDir, err := env.workspace("empty", map[string]string{"main.tf": "terraform {}\n"})
	if err != nil {
		return nil, err
	}
	qsDir, err := env.workspace("quickstart", map[string]string{"main.tf": string(quickstart)})
	if err != nil {
		return nil, err
	}
	// One warm-up each, so the first measured run does not pay for cold page cache.
	if _, err := env.plan(emptyDir); err != nil {
		return nil, err
	}
	if _, err := env.plan(qsDir); err != nil {
		return nil, err
	}
	var empty, qs, rss []float64
	for i := 0; i < runs; i++ {
		progress("terraform plan overhead: run %d/%d", i+1, runs)
		// Alternate the two so drift on the machine hits both alike.
		e, err := env.plan(emptyDir)
		if err != nil {
			return nil, err
		}
		q, err := env.plan(qsDir)
		if err != nil {
			return nil, err
		}
		if q.PeakRSSKiB == 0 {
			return nil, fmt.Errorf("no provider process seen during the quickstart plan")
		}
		empty = append(empty, e.Seconds)
		qs = append(qs, q.Seconds)
		rss = append(rss, float64(q.PeakRSSKiB)/1024)
	}
	b := &PlanBench{EmptySeconds: newStat(empty), QuickstartSeconds: newStat(qs), ProviderPeakRSSMiB: newStat(rss)}
	b.OverheadSeconds = b.QuickstartSeconds.Median - b.EmptySeconds.Median
	b.Ratio = b.QuickstartSeconds.Median / b.EmptySeconds.Median
	return b, nil
}

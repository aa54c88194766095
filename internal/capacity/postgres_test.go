package capacity_test

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/pgfixture"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
)

// TestTune_postgresAcceptsValues writes Tune's output as a cluster's
// parameters into a fresh data directory (pgfixture's, made by localnode as
// pgnvme_cluster makes one) and asks the real server for each
// value with `postgres -C`: the server parses the whole configuration first
// and exits non-zero on any unknown parameter or invalid value. -C does not
// allocate shared memory, so shared_buffers larger than this machine and
// huge_pages are fine. The server also reads the parameter sets of older
// majors (a subset of its own), down to 13.
func TestTune_postgresAcceptsValues(t *testing.T) {
	pg := pgfixture.Init(t, pgfixture.Options{})
	major := pg.Major

	for _, h := range []capacity.Hardware{
		hw(16, 64, m6id4xlargeNVMeGiB, capacity.StorageNVMe, capacity.WorkloadOLTP, 100, major),
		hw(1, 1, 10, capacity.StorageNVMe, capacity.WorkloadOLTP, 100, major),
		hw(1, 0.5, 1, capacity.StorageSSD, capacity.WorkloadMixed, 10, major),
		hw(64, 512, 13969.8, capacity.StorageNVMe, capacity.WorkloadAnalytics, 500, major),
		hw(4, 16, 100, capacity.StorageEBS, capacity.WorkloadMixed, 200, 14),
		hw(1024, 32768, math.MaxInt32, capacity.StorageSSD, capacity.WorkloadAnalytics, 10000, 13),
	} {
		t.Run(fmt.Sprintf("%dvcpu_%ggib_%.6gdisk_%s_%s_pg%d", h.VCPUs, h.MemoryGiB, h.DiskGiB, h.Storage, h.Workload, h.PostgresMajor), func(t *testing.T) {
			params, err := capacity.Tune(h)
			if err != nil {
				t.Fatalf("Tune: %v", err)
			}
			setParams(t, pg, params)
			for _, k := range append([]string{"shared_buffers"}, slices.Sorted(maps.Keys(params))...) {
				got, err := pg.ConfigValue(k)
				if err != nil {
					t.Fatalf("postgres rejected the configuration (asking for %s): %v\nparameters: %v", k, err, params)
				}
				want, err := canonical(k, params[k])
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s = %q: PostgreSQL reads %q, want %q", k, params[k], got, want)
				}
			}
		})
	}

	// -C allocates nothing: 4 TiB of shared_buffers with huge_pages = on
	// passes on a machine with neither.
	t.Run("does not allocate", func(t *testing.T) {
		params, _ := capacity.Tune(hw(1024, 32768, 100000, capacity.StorageNVMe, capacity.WorkloadOLTP, 100, major))
		params["huge_pages"] = "on"
		setParams(t, pg, params)
		if got, err := pg.ConfigValue("shared_buffers"); err != nil || got != "536870912" {
			t.Fatalf("postgres -C shared_buffers = %q, %v; want 536870912 (4 TiB in 8 kB pages)", got, err)
		}
	})

	// The check itself must be able to fail.
	t.Run("rejects an invalid value", func(t *testing.T) {
		params, _ := capacity.Tune(hw(16, 64, 884, capacity.StorageNVMe, capacity.WorkloadOLTP, 100, major))
		params["work_mem"] = "54 MiB"
		setParams(t, pg, params)
		if _, err := pg.ConfigValue("shared_buffers"); err == nil {
			t.Fatal("postgres -C accepted work_mem = '54 MiB'")
		}
	})
	// 18's io_method is unknown to an older server (an 18 server has no newer
	// parameter set to refuse).
	if major < 18 {
		t.Run("rejects 18's parameters on an older server", func(t *testing.T) {
			params, _ := capacity.Tune(hw(16, 64, 884, capacity.StorageNVMe, capacity.WorkloadOLTP, 100, 18))
			setParams(t, pg, params)
			_, err := pg.ConfigValue("shared_buffers")
			if err == nil || !strings.Contains(err.Error(), "io_method") {
				t.Fatalf("postgres %d -C with io_method: err = %v, want it rejected", major, err)
			}
		})
	}
}

// setParams makes params the cluster's parameters (pgnvme.conf), as
// pgnvme_cluster writes them.
func setParams(t *testing.T, pg *pgfixture.Server, params map[string]string) {
	t.Helper()
	if err := pg.Engine.SetParameters(pg.Node, params); err != nil {
		t.Fatal(err)
	}
}

// canonical is how postgres -C prints value: integers in the parameter's
// base unit (8 kB blocks, kB, MB, s), reals shortest, wal_compression "on"
// as the 15 server names it.
func canonical(name, value string) (string, error) {
	baseKB := map[string]int64{
		"shared_buffers": 8, "effective_cache_size": 8, "wal_buffers": 8,
		"work_mem": 1, "maintenance_work_mem": 1,
		"max_wal_size": 1024, "min_wal_size": 1024, "max_slot_wal_keep_size": 1024,
	}
	switch {
	case baseKB[name] != 0:
		mb, err := parseMB(value)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return strconv.FormatInt(mb*1024/baseKB[name], 10), nil
	case name == "checkpoint_timeout":
		m, ok := strings.CutSuffix(value, "min")
		n, err := strconv.Atoi(m)
		if !ok || err != nil {
			return "", fmt.Errorf("checkpoint_timeout %q is not whole minutes", value)
		}
		return strconv.Itoa(n * 60), nil
	case name == "wal_compression" && value == "on":
		return "pglz", nil // 15 and later read the boolean "on" as pglz
	case name == "random_page_cost" || name == "checkpoint_completion_target":
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	}
	return value, nil
}

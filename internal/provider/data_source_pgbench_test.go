package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
)

// The talk's random UPDATE, against a primary with two standbys under ANY 1: the figures are pgbench's
// own, the percentiles come from its per-transaction log, and the wait events add up.
func TestAccPgbenchDataSource_talkScript(t *testing.T) {
	cluster := acctest.StartCluster(t, 2, nil)
	cluster.SetStandbyNames(t, "ANY 1 (s1, s2)")
	const addr = "data.pgnvme_pgbench.talk"
	// One apply (acctest.Workdir): a terraform-plugin-testing step would read the data source, and so run
	// pgbench, three times.
	st := applyState(t, acctest.NewWorkdir(t), fmt.Sprintf(`
data "pgnvme_pgbench" "talk" {
  server {
    host = "127.0.0.1"
    port = %d
  }
  script           = <<-EOT
    \set aid random(1, 100000 * :scale)
    UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
  EOT
  initialize       = true
  scale            = 2
  clients          = 4
  duration_seconds = 4
}

locals {
  b = data.pgnvme_pgbench.talk
}

output "ordered" {
  value = local.b.latency_p50_ms <= local.b.latency_p90_ms && local.b.latency_p90_ms <= local.b.latency_p95_ms && local.b.latency_p95_ms <= local.b.latency_p99_ms && local.b.latency_p99_ms <= local.b.latency_max_ms && local.b.latency_p50_ms > 0
}
output "log_matches_count" {
  value = local.b.transactions_processed > 0 && local.b.logged_transactions == local.b.transactions_processed + local.b.failed_transactions
}
output "shares_sum_to_one" {
  value = local.b.wait_event_samples > 0 && abs(sum(values(local.b.wait_events)) - 1) < 0.000001
}
output "threads_default" {
  value = local.b.threads >= 1 && local.b.threads <= 4 && local.b.scale == 2 && local.b.clients == 4
}
`, cluster.Primary.Port))
	wantOutputsTrue(t, st, "ordered", "log_matches_count", "shares_sum_to_one", "threads_default")
	if err := pgbenchMatchesOwnSummary(st.Resources[addr]); err != nil {
		t.Error(err)
	}
}

// pgbenchMatchesOwnSummary re-reads pgbench's printed summary (the output attribute) with its own
// expressions and compares tps, average latency and the transaction count with the attributes.
func pgbenchMatchesOwnSummary(attrs map[string]any) error {
	out := fmt.Sprint(attrs["output"])
	find := func(re string) (float64, error) {
		m := regexp.MustCompile(re).FindStringSubmatch(out)
		if m == nil {
			return 0, fmt.Errorf("pgbench output lacks %s:\n%s", re, out)
		}
		return strconv.ParseFloat(m[1], 64)
	}
	tps, err := find(`tps = ([0-9.]+) \(without initial connection time\)`)
	if err != nil {
		return err
	}
	lat, err := find(`latency average = ([0-9.]+) ms`)
	if err != nil {
		return err
	}
	n, err := find(`number of transactions actually processed: ([0-9]+)`)
	if err != nil {
		return err
	}
	for name, printed := range map[string]float64{"tps": tps, "latency_avg_ms": lat, "transactions_processed": n} {
		got, err := strconv.ParseFloat(fmt.Sprint(attrs[name]), 64)
		if err != nil {
			return fmt.Errorf("%s = %v: %w", name, attrs[name], err)
		}
		if got != printed {
			return fmt.Errorf("%s attribute %v, pgbench printed %v", name, got, printed)
		}
	}
	return nil
}

type stateCheckFuncWithAddr struct {
	addr string
	f    func(ctx context.Context, attrs map[string]any) error
}

func newStateCheckWithAddr(addr string, f func(ctx context.Context, attrs map[string]any) error) statecheck.StateCheck {
	return stateCheckFuncWithAddr{addr: addr, f: f}
}

func (s stateCheckFuncWithAddr) CheckState(ctx context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	for _, r := range req.State.Values.RootModule.Resources {
		if r.Address == s.addr {
			resp.Error = s.f(ctx, r.AttributeValues)
			return
		}
	}
	resp.Error = fmt.Errorf("%s not in state", s.addr)
}

// Throttled with rate, the measured TPS is within 20% of the rate. pgbench schedules a throttled run's
// transactions as a Poisson process, so 5 s at 200/s is about 1,000 transactions give or take 3% (one
// standard deviation), and a loaded machine's stalls add to that (10% failed once in CI); unthrottled, the
// same select-only run makes thousands per second, far outside.
func TestAccPgbenchDataSource_rate(t *testing.T) {
	cluster := acctest.StartCluster(t, 0, nil)
	// One apply (acctest.Workdir): a terraform-plugin-testing step would run pgbench three times.
	st := applyState(t, acctest.NewWorkdir(t), fmt.Sprintf(`
data "pgnvme_pgbench" "throttled" {
  server {
    host = "127.0.0.1"
    port = %d
  }
  builtin            = "select-only"
  initialize         = true
  scale              = 1
  clients            = 2
  duration_seconds   = 5
  rate               = 200
  sample_wait_events = false
}

output "within_twenty_percent" {
  value = abs(data.pgnvme_pgbench.throttled.tps - 200) <= 40
}
output "not_sampled" {
  value = data.pgnvme_pgbench.throttled.wait_event_samples == 0 && length(data.pgnvme_pgbench.throttled.wait_events) == 0
}
`, cluster.Primary.Port))
	wantOutputsTrue(t, st, "within_twenty_percent", "not_sampled")
}

// A failing pgbench is an error carrying pgbench's message, never partial numbers.
func TestAccPgbenchDataSource_failures(t *testing.T) {
	cluster := acctest.StartCluster(t, 0, nil)
	conn := fmt.Sprintf("server {\n host = \"127.0.0.1\"\n port = %d\n}\n", cluster.Primary.Port)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				Config:      "data \"pgnvme_pgbench\" \"x\" {\n" + conn + "builtin = \"tpcb-like\"\nduration_seconds = 1\n}",
				ExpectError: regexpOf(`(?s)pgbench Tables Not Found.*initialize = true`),
			},
			{
				Config:      "data \"pgnvme_pgbench\" \"x\" {\n" + conn + "script = \"SELEC 1;\"\nscale = 1\nduration_seconds = 1\n}",
				ExpectError: regexpOf(`(?s)pgbench Failed.*syntax error`),
			},
		},
	})
}

func TestAccPgbenchDataSource_badInputs(t *testing.T) {
	pb := func(body string) string {
		return "data \"pgnvme_pgbench\" \"x\" {\nserver {\n host = \"127.0.0.1\"\n}\n" + body + "\n}\n"
	}
	runBadInputs(t, []badInput{
		{"builtin and script", pb("builtin = \"tpcb-like\"\nscript = \"SELECT 1;\""), `(?s)Invalid Attribute Combination`},
		{"neither builtin nor script", pb(""), `(?s)Missing Attribute Configuration.*builtin,script`},
		{"duration and transactions", pb("builtin = \"tpcb-like\"\nduration_seconds = 5\ntransactions = 100"), `(?s)Invalid Attribute Combination`},
		{"zero clients", pb("builtin = \"tpcb-like\"\nclients = 0"), `(?s)clients.*at least 1`},
		{"threads above clients", pb("builtin = \"tpcb-like\"\nclients = 2\nthreads = 4"), `(?s)Too Many Threads`},
		{"unknown builtin", pb("builtin = \"tpcc\""), `(?s)builtin.*value must be one of`},
		{"unknown protocol", pb("builtin = \"tpcb-like\"\nprotocol = \"binary\""), `(?s)protocol.*value must be one of`},
		{"initialize without scale", pb("builtin = \"tpcb-like\"\ninitialize = true"), `(?s)Missing Scale`},
		{"negative rate", pb("builtin = \"tpcb-like\"\nrate = -1"), `(?s)rate.*at least`},
	})
}

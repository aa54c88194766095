# A benchmark gate: the real pgbench against a PostgreSQL server, and check blocks that compare its throughput
# and latency percentiles with thresholds. A check block warns without stopping the apply; `passed` and
# `violations` are for a pipeline that must stop (see README.md).

locals {
  builtins = ["tpcb-like", "simple-update", "select-only"]

  # The talk's workload: random single-row UPDATEs over the whole pgbench_accounts table.
  random_update = <<-EOT
    \set aid random(1, 100000 * :scale)
    UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
  EOT

  result = data.pgnvme_pgbench.this

  # One entry per gate: whether it holds, and what to say when it does not.
  gates = {
    tps = {
      ok      = var.min_tps == null ? true : local.result.tps >= var.min_tps
      message = var.min_tps == null ? "" : format("TPS is %.1f, below min_tps = %g.", local.result.tps, var.min_tps)
    }
    latency_p95 = {
      ok      = var.max_latency_p95_ms == null ? true : local.result.latency_p95_ms <= var.max_latency_p95_ms
      message = var.max_latency_p95_ms == null ? "" : format("p95 latency is %.3f ms, above max_latency_p95_ms = %g.", local.result.latency_p95_ms, var.max_latency_p95_ms)
    }
    latency_p99 = {
      ok      = var.max_latency_p99_ms == null ? true : local.result.latency_p99_ms <= var.max_latency_p99_ms
      message = var.max_latency_p99_ms == null ? "" : format("p99 latency is %.3f ms, above max_latency_p99_ms = %g.", local.result.latency_p99_ms, var.max_latency_p99_ms)
    }
    failed_transactions = {
      ok      = local.result.failed_transactions == 0
      message = format("%d transactions failed (pgbench's summary is in the `output` attribute of data.pgnvme_pgbench.this).", local.result.failed_transactions)
    }
  }
  violations = [for name in sort(keys(local.gates)) : local.gates[name].message if !local.gates[name].ok]
}

data "pgnvme_pgbench" "this" {
  server {
    host     = var.server.host
    port     = var.server.port
    database = var.server.database
    username = var.server.username
    sslmode  = var.server.sslmode
  }
  builtin          = contains(local.builtins, var.workload) ? var.workload : null
  script           = contains(local.builtins, var.workload) ? null : (var.workload == "random-update" ? local.random_update : var.workload)
  initialize       = var.initialize_scale != null
  scale            = var.initialize_scale
  clients          = var.clients
  duration_seconds = var.duration_seconds
}

check "tps" {
  assert {
    condition     = local.gates.tps.ok
    error_message = local.gates.tps.message
  }
}

check "latency_p95" {
  assert {
    condition     = local.gates.latency_p95.ok
    error_message = local.gates.latency_p95.message
  }
}

check "latency_p99" {
  assert {
    condition     = local.gates.latency_p99.ok
    error_message = local.gates.latency_p99.message
  }
}

check "failed_transactions" {
  assert {
    condition     = local.gates.failed_transactions.ok
    error_message = local.gates.failed_transactions.message
  }
}

# The gate against a real PostgreSQL: a one-node local cluster made by ./tests/setup (data_dir and port_base
# come from the command line: `terraform test -var data_dir=... -var port_base=...`), then real pgbench runs.

run "server" {
  module {
    source = "./tests/setup"
  }
}

run "gate_passes" {
  variables {
    server             = { host = run.server.host, port = run.server.port }
    initialize_scale   = 1
    clients            = 2
    duration_seconds   = 2
    min_tps            = 1
    max_latency_p95_ms = 10000
    max_latency_p99_ms = 10000
  }

  assert {
    condition     = output.passed && output.violations == []
    error_message = "A real run should pass generous thresholds: ${jsonencode(output.violations)}"
  }
  assert {
    condition     = output.tps > 1 && output.transactions.processed > 0 && output.transactions.failed == 0
    error_message = "pgbench should have run transactions: ${output.tps} TPS."
  }
  assert {
    condition     = output.latency_ms.p50 <= output.latency_ms.p95 && output.latency_ms.p95 <= output.latency_ms.p99 && output.latency_ms.p99 <= output.latency_ms.max
    error_message = "Percentiles should be ordered: ${jsonencode(output.latency_ms)}"
  }
  assert {
    condition     = startswith(output.server_version, "1")
    error_message = "server_version should be the server's: ${output.server_version}"
  }
}

run "gate_fails" {
  variables {
    server           = { host = run.server.host, port = run.server.port }
    workload         = "select-only"
    clients          = 2
    duration_seconds = 1
    min_tps          = 100000000
  }

  expect_failures = [check.tps]

  assert {
    condition     = !output.passed && length(output.violations) == 1 && startswith(output.violations[0], "TPS is ")
    error_message = "An unreachable TPS threshold should fail the TPS gate only: ${jsonencode(output.violations)}"
  }
}

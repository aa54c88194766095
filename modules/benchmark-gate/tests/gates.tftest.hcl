# The gates' logic and the variables' validation, at plan level: pgbench's results are overridden, so no
# server is needed and nothing runs.

variables {
  server = { host = "127.0.0.1" }
}

override_data {
  target = data.pgnvme_pgbench.this
  values = {
    tps                    = 1200.5
    latency_p50_ms         = 4
    latency_p95_ms         = 9
    latency_p99_ms         = 14
    failed_transactions    = 0
    transactions_processed = 36000
  }
}

run "no_thresholds_pass" {
  command = plan

  assert {
    condition     = output.passed && length(output.violations) == 0
    error_message = "Without thresholds every gate should hold."
  }
  assert {
    condition     = output.tps == 1200.5 && output.latency_ms.p95 == 9 && output.latency_ms.p99 == 14
    error_message = "The outputs should carry pgbench's results."
  }
}

run "within_thresholds_pass" {
  command = plan

  variables {
    min_tps            = 1000
    max_latency_p95_ms = 10
    max_latency_p99_ms = 14
  }

  assert {
    condition     = output.passed
    error_message = "TPS 1200.5 >= 1000, p95 9 <= 10 and p99 14 <= 14 should pass."
  }
}

run "tps_below_minimum_fails" {
  command = plan

  variables {
    min_tps = 2000
  }

  expect_failures = [check.tps]

  assert {
    condition     = !output.passed && output.violations == ["TPS is 1200.5, below min_tps = 2000."]
    error_message = "Only the TPS gate should fail, saying by how much."
  }
}

run "p95_above_maximum_fails" {
  command = plan

  variables {
    max_latency_p95_ms = 5
    max_latency_p99_ms = 20
  }

  expect_failures = [check.latency_p95]

  assert {
    condition     = output.violations == ["p95 latency is 9.000 ms, above max_latency_p95_ms = 5."]
    error_message = "Only the p95 gate should fail."
  }
}

run "p99_above_maximum_fails" {
  command = plan

  variables {
    max_latency_p99_ms = 10
  }

  expect_failures = [check.latency_p99]

  assert {
    condition     = output.violations == ["p99 latency is 14.000 ms, above max_latency_p99_ms = 10."]
    error_message = "Only the p99 gate should fail."
  }
}

run "failed_transactions_fail" {
  command = plan

  override_data {
    target = data.pgnvme_pgbench.this
    values = {
      tps                 = 1200.5
      latency_p95_ms      = 9
      latency_p99_ms      = 14
      failed_transactions = 3
    }
  }

  expect_failures = [check.failed_transactions]

  assert {
    condition     = !output.passed && length(output.violations) == 1
    error_message = "Failed transactions should fail the gate."
  }
}

run "builtin_workload" {
  command = plan

  variables {
    workload = "select-only"
  }

  assert {
    condition     = data.pgnvme_pgbench.this.builtin == "select-only" && data.pgnvme_pgbench.this.script == null
    error_message = "A built-in workload should be passed as builtin."
  }
}

run "random_update_workload" {
  command = plan

  assert {
    condition     = data.pgnvme_pgbench.this.builtin == null && strcontains(data.pgnvme_pgbench.this.script, "UPDATE pgbench_accounts")
    error_message = "The default workload should be the talk's random UPDATE script."
  }
}

run "invalid_host" {
  command = plan

  variables {
    server = { host = " " }
  }

  expect_failures = [var.server]
}

run "invalid_port" {
  command = plan

  variables {
    server = { host = "127.0.0.1", port = 70000 }
  }

  expect_failures = [var.server]
}

run "invalid_sslmode" {
  command = plan

  variables {
    server = { host = "127.0.0.1", sslmode = "on" }
  }

  expect_failures = [var.server]
}

run "invalid_workload" {
  command = plan

  variables {
    workload = "random"
  }

  expect_failures = [var.workload]
}

run "invalid_initialize_scale" {
  command = plan

  variables {
    initialize_scale = 0.5
  }

  expect_failures = [var.initialize_scale]
}

run "invalid_clients" {
  command = plan

  variables {
    clients = 0
  }

  expect_failures = [var.clients]
}

run "invalid_duration" {
  command = plan

  variables {
    duration_seconds = 7200
  }

  expect_failures = [var.duration_seconds]
}

run "invalid_min_tps" {
  command = plan

  variables {
    min_tps = 0
  }

  expect_failures = [var.min_tps]
}

run "invalid_max_latency_p95" {
  command = plan

  variables {
    max_latency_p95_ms = -1
  }

  expect_failures = [var.max_latency_p95_ms]
}

run "invalid_max_latency_p99" {
  command = plan

  variables {
    max_latency_p99_ms = 0
  }

  expect_failures = [var.max_latency_p99_ms]
}

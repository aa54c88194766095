# The talk's workload: random single-row UPDATEs over the whole pgbench_accounts table.
data "pgnvme_pgbench" "random_update" {
  server {
    host = "10.0.1.10"
  }
  script           = <<-EOT
    \set aid random(1, 100000 * :scale)
    UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
  EOT
  clients          = 64
  threads          = 16
  duration_seconds = 300
}

output "tps" {
  value = data.pgnvme_pgbench.random_update.tps
}

output "where_backends_wait" {
  value = data.pgnvme_pgbench.random_update.wait_events # e.g. { "CPU" = 0.41, "IPC:SyncRep" = 0.38, ... }
}

# Gate a change on the result.
check "fast_enough" {
  assert {
    condition     = data.pgnvme_pgbench.random_update.latency_p95_ms < 10
    error_message = "p95 latency of the random UPDATE is 10 ms or more."
  }
}

output "passed" {
  description = "True when every gate holds: TPS, p95 and p99 latency within their thresholds, and no failed transactions."
  value       = length(local.violations) == 0
}

output "violations" {
  description = "One sentence per gate that does not hold, e.g. `TPS is 812.4, below min_tps = 1000.`; empty when `passed`."
  value       = local.violations
}

output "tps" {
  description = "Transactions per second, as pgbench printed it (without initial connection time)."
  value       = local.result.tps
}

output "latency_ms" {
  description = "Transaction latency in ms: `avg` as pgbench printed it; `p50`, `p90`, `p95`, `p99` and `max` from pgbench's per-transaction log."
  value = {
    avg = local.result.latency_avg_ms
    p50 = local.result.latency_p50_ms
    p90 = local.result.latency_p90_ms
    p95 = local.result.latency_p95_ms
    p99 = local.result.latency_p99_ms
    max = local.result.latency_max_ms
  }
}

output "transactions" {
  description = "Transactions processed and failed, as pgbench printed them."
  value = {
    processed = local.result.transactions_processed
    failed    = local.result.failed_transactions
  }
}

output "wait_events" {
  description = "Share of sampled pgbench backends in each wait event (`IO:DataFileRead`, `LWLock:WALWrite`, `IPC:SyncRep`, ... and `CPU` for none); the shares sum to 1."
  value       = local.result.wait_events
}

output "server_version" {
  description = "The server's `server_version`."
  value       = local.result.server_version
}

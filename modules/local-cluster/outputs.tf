output "name" {
  description = "The cluster's name (also its `id`)."
  value       = pgnvme_cluster.this.id
}

output "connection_uri" {
  description = "libpq URI of the primary, without a password (connections from 127.0.0.1 are trusted); with `tls`, with `sslmode=verify-full` and the authority's file as `sslrootcert`. Null while no single primary is known."
  value       = pgnvme_cluster.this.connection_uri
}

output "primary" {
  description = "Where the primary listens: `host` and `port`; null while no single primary is known."
  value       = pgnvme_cluster.this.primary
}

output "nodes" {
  description = "Every node as last seen: `name`, `role` (`primary` or `standby`), `state` (`running`, `stopped` or `missing`), `host`, `port`, `zone`."
  value       = pgnvme_cluster.this.nodes
}

output "synchronous_standby_names" {
  description = "The `synchronous_standby_names` in force on the primary, e.g. `ANY 1 (\"node-2\", \"node-3\")`."
  value       = pgnvme_cluster.this.synchronous_standby_names
}

output "data_dirs" {
  description = "Each node's data directory, by node name."
  value       = pgnvme_cluster.this.local.data_dirs
}

output "parameters" {
  description = "The PostgreSQL parameters every node runs with: the tuned ones for its share of the machine, overridden by `parameters`."
  value       = pgnvme_cluster.this.parameters
}

output "benchmark" {
  description = "The pgbench run's results (null without `benchmark`): `tps`, `latency_ms` (`avg`, `p50`, `p90`, `p95`, `p99`, `max`), `failed_transactions`, `wait_events` (share of sampled backends per wait event) and `server_version`."
  value = var.benchmark == null ? null : {
    tps = data.pgnvme_pgbench.this[0].tps
    latency_ms = {
      avg = data.pgnvme_pgbench.this[0].latency_avg_ms
      p50 = data.pgnvme_pgbench.this[0].latency_p50_ms
      p90 = data.pgnvme_pgbench.this[0].latency_p90_ms
      p95 = data.pgnvme_pgbench.this[0].latency_p95_ms
      p99 = data.pgnvme_pgbench.this[0].latency_p99_ms
      max = data.pgnvme_pgbench.this[0].latency_max_ms
    }
    failed_transactions = data.pgnvme_pgbench.this[0].failed_transactions
    wait_events         = data.pgnvme_pgbench.this[0].wait_events
    server_version      = data.pgnvme_pgbench.this[0].server_version
  }
}

output "tls" {
  description = "With `tls`: the authority's certificate (`ca_certificate`, PEM), its file (`ca_file`) and when each certificate ends (`not_after`, by node name and `client`); null without."
  value       = pgnvme_cluster.this.tls == null ? null : { ca_certificate = pgnvme_cluster.this.tls.ca_certificate, ca_file = pgnvme_cluster.this.tls.ca_file, not_after = pgnvme_cluster.this.tls.not_after }
}

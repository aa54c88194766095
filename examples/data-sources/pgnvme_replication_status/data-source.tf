data "pgnvme_replication_status" "orders" {
  server {
    host = "10.0.1.10"
    # A server that takes TLS only and checks client certificates: verify it against its authority, and
    # present a certificate of the role (paths on the machine that runs Terraform).
    sslmode     = "verify-full"
    sslrootcert = "/etc/pgnvme/orders/ca.crt"
    sslcert     = "/etc/pgnvme/orders/monitor.crt"
    sslkey      = "/etc/pgnvme/orders/monitor.key"
    username    = "monitor"
  }
}

# Fail the plan's checks when the quorum is degraded or archiving is failing.
check "replication_healthy" {
  assert {
    condition     = length([for s in data.pgnvme_replication_status.orders.standbys : s if s.sync_state == "quorum"]) >= 2
    error_message = "Fewer than two standbys are in the synchronous quorum."
  }
  assert {
    condition     = data.pgnvme_replication_status.orders.archiver.failed_count == 0
    error_message = "WAL archiving has failed: see pg_stat_archiver."
  }
}

# A PostgreSQL cluster on this machine for a laptop lab: node_count PostgreSQL processes on 127.0.0.1 (a primary
# and standbys under quorum commit), each tuned for its share of the machine, and optionally the talk's
# pgbench against the primary.

locals {
  # Processes on one machine share its CPUs; memory and disk are split between the nodes.
  per_node = {
    memory_gib = var.machine.memory_gib / var.node_count
    disk_gib   = var.machine.disk_gib / var.node_count
  }

  # The talk's workload: random single-row UPDATEs over the whole pgbench_accounts table.
  random_update = <<-EOT
    \set aid random(1, 100000 * :scale)
    UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
  EOT
}

data "pgnvme_tuning" "node" {
  vcpus          = var.machine.vcpus
  memory_gib     = local.per_node.memory_gib
  disk_gib       = local.per_node.disk_gib
  storage        = "ssd"
  postgres_major = var.postgres_major

  lifecycle {
    precondition {
      condition     = local.per_node.memory_gib >= 0.5 && local.per_node.disk_gib >= 1
      error_message = format("Each of the %d nodes gets %.2f GiB of memory and %.2f GiB of disk (machine divided by node_count); a node needs at least 0.5 GiB and 1 GiB. Give machine more memory_gib or disk_gib, or lower node_count.", var.node_count, local.per_node.memory_gib, local.per_node.disk_gib)
    }
  }
}

resource "pgnvme_cluster" "this" {
  name           = var.name
  node_count     = var.node_count
  postgres_major = var.postgres_major

  synchronous {
    method          = var.synchronous.method
    number          = coalesce(var.synchronous.number, min(1, var.node_count - 1))
    data_durability = var.synchronous.data_durability
  }

  parameters = merge(data.pgnvme_tuning.node.postgres_parameters, var.parameters)

  local {
    data_dir  = var.data_dir
    port_base = var.port_base
  }

  dynamic "tls" {
    for_each = var.tls ? [1] : []
    content {}
  }
}

# A data source runs on every plan and apply: with benchmark set, every plan re-initialises the pgbench tables
# at benchmark.scale and runs pgbench for benchmark.duration_seconds.
data "pgnvme_pgbench" "this" {
  count = var.benchmark == null ? 0 : 1

  server {
    host        = pgnvme_cluster.this.primary.host
    port        = pgnvme_cluster.this.primary.port
    sslmode     = var.tls ? "verify-full" : null
    sslrootcert = var.tls ? pgnvme_cluster.this.tls.ca_file : null
  }
  builtin          = var.benchmark.builtin
  script           = var.benchmark.builtin == null ? local.random_update : null
  initialize       = true
  scale            = var.benchmark.scale
  clients          = var.benchmark.clients
  duration_seconds = var.benchmark.duration_seconds
}

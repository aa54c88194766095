# The talk's architecture on this machine: three PostgreSQL nodes (a primary and two standbys under
# ANY 1 quorum commit), tuned for this machine's share of CPUs, memory and disk, then the talk's
# random UPDATE benchmark against the primary. `make demo` applies it; `make demo-destroy` removes it.
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source = "pgnvme/pgnvme"
    }
  }
}

variable "data_dir" {
  description = "Absolute directory for the three nodes' data directories."
  type        = string
  validation {
    condition     = startswith(var.data_dir, "/")
    error_message = "data_dir must be an absolute path."
  }
}

variable "port_base" {
  description = "First of three consecutive free TCP ports on 127.0.0.1."
  type        = number
  default     = 54320
  validation {
    condition     = var.port_base >= 1024 && var.port_base <= 65000
    error_message = "port_base must be between 1024 and 65000."
  }
}

variable "vcpus" {
  description = "vCPUs each node may use (this machine's CPUs: the nodes share them)."
  type        = number
  validation {
    condition     = var.vcpus >= 1
    error_message = "vcpus must be at least 1."
  }
}

variable "memory_gib" {
  description = "Memory per node in GiB (a third of this machine's)."
  type        = number
  validation {
    condition     = var.memory_gib >= 0.5
    error_message = "memory_gib must be at least 0.5."
  }
}

variable "disk_gib" {
  description = "Disk per node in GiB (a third of the free space under data_dir)."
  type        = number
  validation {
    condition     = var.disk_gib >= 1
    error_message = "disk_gib must be at least 1."
  }
}

variable "benchmark_seconds" {
  description = "Length of the pgbench run in seconds."
  type        = number
  default     = 15
  validation {
    condition     = var.benchmark_seconds >= 1
    error_message = "benchmark_seconds must be at least 1."
  }
}

variable "postgres_major" {
  description = "PostgreSQL major of the nodes: the local platform runs /usr/lib/postgresql/<major>/bin (make demo installs 18, the default)."
  type        = number
  default     = 18
  validation {
    condition     = var.postgres_major >= 13 && var.postgres_major <= 18 && floor(var.postgres_major) == var.postgres_major
    error_message = "postgres_major must be a whole number from 13 to 18, e.g. 18."
  }
}

data "pgnvme_tuning" "node" {
  vcpus          = var.vcpus
  memory_gib     = var.memory_gib
  disk_gib       = var.disk_gib
  storage        = "ssd"
  postgres_major = var.postgres_major
}

resource "pgnvme_cluster" "demo" {
  name           = "demo"
  postgres_major = var.postgres_major
  node_count     = 3
  synchronous {
    method = "any"
    number = 1
  }
  parameters = data.pgnvme_tuning.node.postgres_parameters
  local {
    data_dir  = var.data_dir
    port_base = var.port_base
  }
}

# Runs after the cluster exists (its port is known only then), on every apply.
data "pgnvme_pgbench" "talk" {
  server {
    host = pgnvme_cluster.demo.primary.host
    port = pgnvme_cluster.demo.primary.port
  }
  script           = <<-EOT
    \set aid random(1, 100000 * :scale)
    UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
  EOT
  initialize       = true
  scale            = 10
  clients          = 8
  threads          = 2
  duration_seconds = var.benchmark_seconds
}

output "nodes" {
  value = { for n in pgnvme_cluster.demo.nodes : n.name => "${n.role} on port ${n.port}" }
}

output "synchronous_standby_names" {
  value = pgnvme_cluster.demo.synchronous_standby_names
}

output "server_version" {
  description = "The primary's server_version, as pgbench read it."
  value       = data.pgnvme_pgbench.talk.server_version
}

output "connection_uri" {
  value = pgnvme_cluster.demo.connection_uri
}

output "tps" {
  value = data.pgnvme_pgbench.talk.tps
}

output "latency_ms" {
  value = {
    avg = data.pgnvme_pgbench.talk.latency_avg_ms
    p50 = data.pgnvme_pgbench.talk.latency_p50_ms
    p95 = data.pgnvme_pgbench.talk.latency_p95_ms
    p99 = data.pgnvme_pgbench.talk.latency_p99_ms
    max = data.pgnvme_pgbench.talk.latency_max_ms
  }
}

output "wait_events" {
  description = "Share of sampled backends in each wait event (CPU = not waiting)."
  value       = { for k, v in data.pgnvme_pgbench.talk.wait_events : k => format("%.1f%%", v * 100) }
}

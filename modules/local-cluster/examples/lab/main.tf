# The talk's architecture on a laptop: three PostgreSQL nodes under ANY 1 quorum commit, tuned for this
# machine's share, and the talk's random UPDATE benchmark against the primary.
#
#   terraform apply -var data_dir=/tmp/pgnvme-lab \
#     -var "machine={vcpus=$(nproc), memory_gib=6, disk_gib=30}"
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source  = "pgnvme/pgnvme"
      version = ">= 0.1.0"
    }
  }
}

variable "data_dir" {
  description = "Absolute directory for the nodes' data (the postgres user must be able to reach it)."
  type        = string
}

variable "postgres_major" {
  description = "PostgreSQL major of the nodes; it must be installed on this machine (/usr/lib/postgresql/<major>/bin)."
  type        = number
  default     = 18
}

variable "machine" {
  description = "vCPUs, memory GiB and disk GiB the lab may use."
  type = object({
    vcpus      = number
    memory_gib = number
    disk_gib   = number
  })
}

module "lab" {
  source = "../.."

  data_dir       = var.data_dir
  postgres_major = var.postgres_major
  machine        = var.machine
  node_count     = 3

  benchmark = {
    scale            = 10
    clients          = 8
    duration_seconds = 15
  }
}

output "synchronous_standby_names" {
  description = "The quorum in force on the primary."
  value       = module.lab.synchronous_standby_names
}

output "connection_uri" {
  description = "libpq URI of the primary."
  value       = module.lab.connection_uri
}

output "tps" {
  description = "Transactions per second of the benchmark."
  value       = module.lab.benchmark.tps
}

output "latency_ms" {
  description = "Latency percentiles of the benchmark in ms."
  value       = module.lab.benchmark.latency_ms
}

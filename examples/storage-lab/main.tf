# The talk's experiment, small, on one machine: the same PostgreSQL with the same tuning and the same data
# on two disks, one unthrottled ("NVMe") and one throttled to gp3's baseline of 3,000 IOPS and 125 MiB/s
# with gp3's latency of about 1 ms per read and per write ("gp3"), each node's memory limited so the dataset is at least 8x memory, then the talk's random UPDATE
# on both, one after the other. The figures are this machine's, not EC2's: the unthrottled disk is
# whatever backs data_dir (a loop device on a sparse file), and the talk's ratios are printed next to them.
# To take this machine's own disk out of the comparison (its latency differs from machine to machine), put
# data_dir on a tmpfs with room for both images, about 1.5x the dataset and 2 GiB each (as `make bench` does):
#   mount -t tmpfs -o size=18g lab /srv/lab   # then data_dir = "/srv/lab"
#
# Needs root (cgroups, loop devices) and the cgroup memory and blkio/io controllers; the plan says so when
# they are missing. `terraform apply` takes a few minutes (two pgbench initialisations of about
# 8 x memory_mib, then two runs of benchmark_seconds); `terraform destroy` removes the nodes, their
# cgroups and disks.
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source = "pgnvme/pgnvme"
    }
  }
}

variable "data_dir" {
  description = "Absolute directory for both clusters (each node's disk image and mount point live below it)."
  type        = string
  validation {
    condition     = startswith(var.data_dir, "/")
    error_message = "data_dir must be an absolute path."
  }
}

variable "port_base" {
  description = "First of two consecutive free TCP ports on 127.0.0.1 (NVMe, then gp3)."
  type        = number
  default     = 55320
  validation {
    condition     = var.port_base >= 1024 && var.port_base <= 65000
    error_message = "port_base must be between 1024 and 65000."
  }
}

variable "memory_mib" {
  description = "Memory limit of each node in MiB, page cache included; the parameters are tuned for it."
  type        = number
  default     = 512
  validation {
    condition     = var.memory_mib >= 512
    error_message = "memory_mib must be at least 512 (pgnvme_tuning's smallest machine)."
  }
}

variable "dataset_to_memory" {
  description = "Dataset size as a multiple of memory_mib (the talk: 482 GiB on 64 GiB, about 7.5x)."
  type        = number
  default     = 8
  validation {
    condition     = var.dataset_to_memory >= 8
    error_message = "dataset_to_memory must be at least 8, so most reads miss memory as in the talk."
  }
}

variable "vcpus" {
  description = "vCPUs the parameters are tuned for (the two clusters run their benchmarks one after the other)."
  type        = number
  default     = 2
  validation {
    condition     = var.vcpus >= 1
    error_message = "vcpus must be at least 1."
  }
}

variable "clients" {
  description = "pgbench clients (the talk used 64 on 16 vCPUs)."
  type        = number
  default     = 8
  validation {
    condition     = var.clients >= 1
    error_message = "clients must be at least 1."
  }
}

variable "benchmark_seconds" {
  description = "Length of each pgbench run in seconds."
  type        = number
  default     = 60
  validation {
    condition     = var.benchmark_seconds >= 10
    error_message = "benchmark_seconds must be at least 10."
  }
}

locals {
  dataset_gib = var.memory_mib / 1024 * var.dataset_to_memory
  scale       = provider::pgnvme::pgbench_scale(local.dataset_gib)
  # Room for the tables, their indexes, the UPDATEs' bloat and WAL; sparse, so unused space costs nothing.
  disk_gib = ceil(local.dataset_gib * 2) + 8
  talk = {
    nvme_tps    = 16030
    gp3_tps     = 1734
    nvme_p50_ms = 4.0
    gp3_p50_ms  = 36.9
  }
}

# One tuning for both: the same machine, only the disk differs.
data "pgnvme_tuning" "node" {
  vcpus          = var.vcpus
  memory_gib     = var.memory_mib / 1024
  disk_gib       = local.disk_gib
  storage        = "nvme"
  postgres_major = 18
}

resource "pgnvme_cluster" "nvme" {
  name       = "lab-nvme"
  node_count = 1
  parameters = data.pgnvme_tuning.node.postgres_parameters
  local {
    data_dir  = "${var.data_dir}/nvme"
    port_base = var.port_base
    limits {
      memory_mib = var.memory_mib
      disk_gib   = local.disk_gib
    }
  }
}

resource "pgnvme_cluster" "gp3" {
  name       = "lab-gp3"
  node_count = 1
  parameters = data.pgnvme_tuning.node.postgres_parameters
  local {
    data_dir  = "${var.data_dir}/gp3"
    port_base = var.port_base + 1
    limits {
      memory_mib           = var.memory_mib
      read_iops            = 3000
      write_iops           = 3000
      read_mib_per_second  = 125
      write_mib_per_second = 125
      read_latency_ms      = 1 # a gp3 read takes about 1 ms however idle the volume is
      write_latency_ms     = 1
      disk_gib             = local.disk_gib
    }
  }
}

# The talk's random UPDATE, initialising the same scale on each; gp3 runs after NVMe so the two never share
# the CPUs.
data "pgnvme_pgbench" "nvme" {
  server {
    host = pgnvme_cluster.nvme.primary.host
    port = pgnvme_cluster.nvme.primary.port
  }
  script           = <<-EOT
    \set aid random(1, 100000 * :scale)
    UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = :aid;
  EOT
  initialize       = true
  scale            = local.scale
  clients          = var.clients
  protocol         = "prepared"
  duration_seconds = var.benchmark_seconds
}

data "pgnvme_pgbench" "gp3" {
  server {
    host = pgnvme_cluster.gp3.primary.host
    port = pgnvme_cluster.gp3.primary.port
  }
  script           = data.pgnvme_pgbench.nvme.script
  initialize       = true
  scale            = local.scale
  clients          = var.clients
  protocol         = "prepared"
  duration_seconds = var.benchmark_seconds
  depends_on       = [data.pgnvme_pgbench.nvme]
}

locals {
  runs = { nvme = data.pgnvme_pgbench.nvme, gp3 = data.pgnvme_pgbench.gp3 }
  results = { for k, r in local.runs : k => {
    tps                 = r.tps
    p50_ms              = r.latency_p50_ms
    p95_ms              = r.latency_p95_ms
    p99_ms              = r.latency_p99_ms
    io_datafileread_pct = 100 * lookup(r.wait_events, "IO:DataFileRead", 0)
    lwlock_walwrite_pct = 100 * lookup(r.wait_events, "LWLock:WALWrite", 0)
    failed_transactions = r.failed_transactions
  } }
}

output "dataset" {
  value = format("pgbench scale %d (about %.1f GiB) on %d MiB of memory per node: %.1fx", local.scale, provider::pgnvme::pgbench_size_gib(local.scale), var.memory_mib, provider::pgnvme::pgbench_size_gib(local.scale) * 1024 / var.memory_mib)
}

output "results" {
  value = local.results
}

output "ratios" {
  description = "NVMe over gp3 here, next to the talk's (m6id.4xlarge, 482 GiB, 64 clients)."
  value = {
    tps_nvme_over_gp3      = format("%.1fx here, %.1fx in the talk", local.results.nvme.tps / local.results.gp3.tps, local.talk.nvme_tps / local.talk.gp3_tps)
    p50_gp3_over_nvme      = format("%.1fx here, %.1fx in the talk", local.results.gp3.p50_ms / local.results.nvme.p50_ms, local.talk.gp3_p50_ms / local.talk.nvme_p50_ms)
    p95_gp3_over_nvme      = format("%.1fx here", local.results.gp3.p95_ms / local.results.nvme.p95_ms)
    p99_gp3_over_nvme      = format("%.1fx here", local.results.gp3.p99_ms / local.results.nvme.p99_ms)
    io_datafileread_shares = format("%.0f%% on gp3 vs %.0f%% on NVMe here; in the talk page reads were 19 of 36.9 ms on gp3 (51%%) and 0.3 of 4.0 ms on NVMe (8%%)", local.results.gp3.io_datafileread_pct, local.results.nvme.io_datafileread_pct)
  }
}

output "cgroups" {
  description = "Each node's cgroup, to watch its counters (memory.max_usage_in_bytes, blkio.throttle.io_serviced)."
  value = {
    nvme = pgnvme_cluster.nvme.local.cgroups
    gp3  = pgnvme_cluster.gp3.local.cgroups
  }
}

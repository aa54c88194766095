# The talk's workload: 482 GiB of pgbench data (3.3 billion rows), a primary and two standbys in three zones
# of us-east-1, at least 16 vCPUs and 64 GiB per node. Runs with no AWS credentials: the embedded catalog.
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source = "pgnvme/pgnvme"
    }
  }
}

provider "pgnvme" {
  region = "us-east-1"
}

variable "dataset_gib" {
  description = "Tables and indexes today, in GiB."
  type        = number
  default     = 482
  validation {
    condition     = var.dataset_gib > 0
    error_message = "dataset_gib must be greater than 0 GiB."
  }
}

data "pgnvme_capacity_plan" "talk" {
  dataset_gib    = var.dataset_gib
  min_vcpus      = 16
  min_memory_gib = 64
  architectures  = ["x86_64"]
  node_count     = 3
}

data "pgnvme_placement" "talk" {
  instance_type = data.pgnvme_capacity_plan.talk.instance_type
  node_count    = 3
}

locals {
  standby_names = [for s in data.pgnvme_placement.talk.standbys : s.name]
}

output "instance_type" {
  description = "Recommended instance type."
  value       = data.pgnvme_capacity_plan.talk.instance_type
}

output "required_nvme_gib" {
  description = "NVMe each node needs at the horizon, in GiB."
  value       = data.pgnvme_capacity_plan.talk.required_nvme_gib
}

output "candidates" {
  description = "The five best-ranked candidates with their disk utilisation at the horizon."
  value = [for c in slice(data.pgnvme_capacity_plan.talk.candidates, 0, min(5, length(data.pgnvme_capacity_plan.talk.candidates))) :
  format("%-16s %3d vCPU %6.1f GiB RAM %8.1f GiB NVMe  %5.1f%% full", c.instance_type, c.vcpus, c.memory_gib, c.nvme_total_gib, c.disk_utilization * 100)]
}

output "zones" {
  description = "Node -> zone (zone ID)."
  value       = { for n in data.pgnvme_placement.talk.nodes : n.name => "${n.zone} (${n.zone_id})" }
}

output "survives_zone_loss" {
  value = data.pgnvme_placement.talk.survives_zone_loss
}

output "synchronous_standby_names" {
  value = provider::pgnvme::synchronous_standby_names("any", 1, local.standby_names)
}

output "postgres_parameters" {
  description = "PostgreSQL settings tuned for the recommended type."
  value       = data.pgnvme_capacity_plan.talk.postgres_parameters
}

# The instance catalog: what the snapshot compiled into the provider says, where it came from, and (with
# compare_with_ec2 = true and AWS credentials) what a live read of EC2 says that the snapshot does not.
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source = "pgnvme/pgnvme"
    }
  }
}

variable "region" {
  description = "AWS region to ask about. The embedded snapshot covers six regions; the error for any other names them."
  type        = string
  default     = "us-east-1"

  validation {
    condition     = can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", var.region))
    error_message = "region must be an AWS region name, such as us-east-1 (not a zone such as us-east-1a)."
  }
}

variable "min_nvme_gib" {
  description = "Smallest total instance-store SSD per node worth listing, in GiB."
  type        = number
  default     = 800

  validation {
    condition     = var.min_nvme_gib >= 0
    error_message = "min_nvme_gib must be 0 or more GiB (0 lists every type)."
  }
}

variable "max_nvme_gib" {
  description = "Largest total instance-store SSD per node worth listing, in GiB."
  type        = number
  default     = 2000

  validation {
    condition     = var.max_nvme_gib > 0
    error_message = "max_nvme_gib must be greater than 0 GiB (and at least min_nvme_gib, which the data source checks)."
  }
}

variable "compare_with_ec2" {
  description = "Also read the region live from EC2 (needs credentials allowed ec2:DescribeInstanceTypes, ec2:DescribeInstanceTypeOfferings and ec2:DescribeAvailabilityZones) and report what differs from the snapshot."
  type        = bool
  default     = false
}

provider "pgnvme" {
  region = var.region
}

locals {
  # Types a PostgreSQL node can use: current generation, no accelerators, not Macs, and instance storage that
  # is NVMe (pgnvme_cluster refuses nvme_support = "unsupported"; the filters below do not test it).
  filters = {
    min_nvme_gib                = var.min_nvme_gib
    max_nvme_gib                = var.max_nvme_gib
    architectures               = ["x86_64", "arm64"]
    exclude_previous_generation = true
    exclude_special_purpose     = true
  }
}

# The snapshot compiled into the provider: no credentials, no AWS call.
data "pgnvme_instance_types" "embedded" {
  source                      = "embedded"
  region                      = var.region
  min_nvme_gib                = local.filters.min_nvme_gib
  max_nvme_gib                = local.filters.max_nvme_gib
  architectures               = local.filters.architectures
  exclude_previous_generation = local.filters.exclude_previous_generation
  exclude_special_purpose     = local.filters.exclude_special_purpose
}

# The same question asked of EC2 itself, once per region per provider process.
data "pgnvme_instance_types" "ec2" {
  count                       = var.compare_with_ec2 ? 1 : 0
  source                      = "ec2"
  region                      = var.region
  min_nvme_gib                = local.filters.min_nvme_gib
  max_nvme_gib                = local.filters.max_nvme_gib
  architectures               = local.filters.architectures
  exclude_previous_generation = local.filters.exclude_previous_generation
  exclude_special_purpose     = local.filters.exclude_special_purpose
}

locals {
  nvme_types = [for t in data.pgnvme_instance_types.embedded.instance_types : t if t.nvme_support != "unsupported"]

  embedded_zones = { for t in data.pgnvme_instance_types.embedded.instance_types : t.instance_type => t.zone_ids }
  ec2_zones      = var.compare_with_ec2 ? { for t in data.pgnvme_instance_types.ec2[0].instance_types : t.instance_type => t.zone_ids } : {}
}

output "catalog" {
  description = "When and where the embedded snapshot was read."
  value = {
    date   = data.pgnvme_instance_types.embedded.catalog_date
    origin = data.pgnvme_instance_types.embedded.catalog_origin
  }
}

output "nvme_types" {
  description = "Matching types with NVMe instance storage, by total NVMe, from the snapshot."
  value = [for t in local.nvme_types :
  format("%-16s %7.1f GiB NVMe on %d disk(s), %3d vCPU, %6.1f GiB RAM, zones %s", t.instance_type, t.nvme_total_gib, t.nvme_disks, t.vcpus, t.memory_gib, join(",", t.zone_ids))]
}

output "only_in_ec2" {
  description = "Types EC2 lists here that the snapshot does not (newer than it, or offered here since); null without compare_with_ec2."
  value       = var.compare_with_ec2 ? sort(setsubtract(keys(local.ec2_zones), keys(local.embedded_zones))) : null
}

output "only_in_snapshot" {
  description = "Types the snapshot lists here that EC2 does not offer this account in the region; null without compare_with_ec2."
  value       = var.compare_with_ec2 ? sort(setsubtract(keys(local.embedded_zones), keys(local.ec2_zones))) : null
}

output "zones_differ" {
  description = "Types both list, offered in other zone IDs than the snapshot says; null without compare_with_ec2."
  value = var.compare_with_ec2 ? {
    for name, zones in local.ec2_zones : name => { embedded = local.embedded_zones[name], ec2 = zones }
    if contains(keys(local.embedded_zones), name) && join(",", local.embedded_zones[name]) != join(",", zones)
  } : null
}

# A major upgrade on EC2 as two clusters side by side: the existing cluster ("orders", PostgreSQL 16) left
# as it is, and a new cluster of the new major ("orders-pg17") with an archive of its own. The data moves
# between them with pg_dump/pg_restore or logical replication (see the guide); clients then switch to the
# new cluster's URI, and the old cluster is destroyed last.
#
# Never change postgres_major of a running cluster: that replaces it, and a replacement destroys every node
# with its data before it creates an empty cluster.
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source = "pgnvme/pgnvme"
    }
  }
}

provider "pgnvme" {
  region = var.region
}

variable "region" {
  description = "AWS region of both clusters."
  type        = string
  default     = "eu-west-1"
}

variable "subnet_ids" {
  description = "Subnets by availability zone name, all in one VPC; both clusters use the same zones."
  type        = map(string)
}

variable "name" {
  description = "The existing cluster's name. The new cluster is named <name>-pg<new_major>."
  type        = string
  default     = "orders"
}

variable "old_major" {
  description = "The existing cluster's PostgreSQL major version, pinned as it is in state."
  type        = number
  default     = 16
  validation {
    condition     = var.old_major >= 13 && var.old_major <= 18 && floor(var.old_major) == var.old_major
    error_message = "old_major must be a whole number from 13 to 18, e.g. 16."
  }
}

variable "new_major" {
  description = "The PostgreSQL major version to move to."
  type        = number
  default     = 17
  validation {
    condition     = var.new_major >= 13 && var.new_major <= 18 && floor(var.new_major) == var.new_major
    error_message = "new_major must be a whole number from 13 to 18, e.g. 17."
  }
}

variable "dataset_gib" {
  description = "Size of the database today in GiB, for the capacity plan."
  type        = number
  default     = 200
  validation {
    condition     = var.dataset_gib > 0
    error_message = "dataset_gib must be greater than 0 GiB."
  }
}

variable "logical_replication" {
  description = "Set wal_level = logical on the existing cluster so the new one can subscribe to it. A change of wal_level restarts every node of the existing cluster, standbys first, the primary last."
  type        = bool
  default     = false
}

variable "old_deletion_protection" {
  description = "Refuse destroying the existing cluster. Set false and apply before removing its resource block."
  type        = bool
  default     = true
}

variable "database" {
  description = "The application's database, for the URIs in the outputs."
  type        = string
  default     = "orders"
  validation {
    condition     = can(regex("^[a-z_][a-z0-9_]*$", var.database))
    error_message = "database must be a lower-case SQL identifier such as orders."
  }
}

locals {
  new_name = "${var.name}-pg${var.new_major}"
}

# The same sizing for both majors; the parameters differ, since each major knows its own settings.
data "pgnvme_capacity_plan" "old" {
  dataset_gib    = var.dataset_gib
  node_count     = 3
  architectures  = ["x86_64"]
  postgres_major = var.old_major
}

data "pgnvme_capacity_plan" "new" {
  dataset_gib    = var.dataset_gib
  node_count     = 3
  architectures  = ["x86_64"]
  postgres_major = var.new_major
}

data "pgnvme_placement" "nodes" {
  instance_type = data.pgnvme_capacity_plan.old.instance_type
  node_count    = 3
  zones         = sort(keys(var.subnet_ids))
}

# The existing cluster and its archive, unchanged but for postgres_major written down and, while the new
# cluster subscribes to it, wal_level.
resource "pgnvme_archive_bucket" "old" {
  bucket_prefix = "${var.name}-wal-"
  prefix        = "clusters/${var.name}"
}

resource "pgnvme_cluster" "old" {
  name           = var.name
  postgres_major = var.old_major
  parameters     = merge(data.pgnvme_capacity_plan.old.postgres_parameters, var.logical_replication ? { wal_level = "logical" } : {})

  dynamic "node" {
    for_each = data.pgnvme_placement.nodes.nodes
    content {
      name = node.value.name
      zone = node.value.zone
    }
  }
  archive {
    walg_env = pgnvme_archive_bucket.old.walg_env
  }
  aws {
    instance_type       = data.pgnvme_capacity_plan.old.instance_type
    subnet_ids          = { for n in data.pgnvme_placement.nodes.nodes : n.zone => var.subnet_ids[n.zone] }
    node_policy_json    = pgnvme_archive_bucket.old.node_policy_json
    deletion_protection = var.old_deletion_protection
  }
}

# The new cluster: another name (its IAM role, SSM parameters and network interfaces are named after it) and
# an archive location that holds nothing yet. The old cluster's archive would be refused ("Archive Holds
# Another Cluster's History"), and a restore block cannot bring a backup of another major.
resource "pgnvme_archive_bucket" "new" {
  bucket_prefix = "${local.new_name}-wal-"
  prefix        = "clusters/${local.new_name}"
}

resource "pgnvme_cluster" "new" {
  name           = local.new_name
  postgres_major = var.new_major
  parameters     = data.pgnvme_capacity_plan.new.postgres_parameters

  dynamic "node" {
    for_each = data.pgnvme_placement.nodes.nodes
    content {
      name = node.value.name
      zone = node.value.zone
    }
  }
  archive {
    walg_env = pgnvme_archive_bucket.new.walg_env
  }
  aws {
    instance_type    = data.pgnvme_capacity_plan.new.instance_type
    subnet_ids       = { for n in data.pgnvme_placement.nodes.nodes : n.zone => var.subnet_ids[n.zone] }
    node_policy_json = pgnvme_archive_bucket.new.node_policy_json
  }
}

# Multi-host URIs of user postgres (libpq finds the primary): to the postgres database, and to the
# application's. The passwords are the SSM SecureStrings below, one per cluster.
output "old_uri" {
  value = pgnvme_cluster.old.connection_uri
}

output "new_uri" {
  value = pgnvme_cluster.new.connection_uri
}

output "old_app_uri" {
  value = replace(pgnvme_cluster.old.connection_uri, "/postgres?", "/${var.database}?")
}

output "new_app_uri" {
  value = replace(pgnvme_cluster.new.connection_uri, "/postgres?", "/${var.database}?")
}

output "old_password_parameter" {
  value = "${pgnvme_cluster.old.aws.ssm_parameter_path}/superuser-password"
}

output "new_password_parameter" {
  value = "${pgnvme_cluster.new.aws.ssm_parameter_path}/superuser-password"
}

output "new_archive_status" {
  description = "The new cluster's archive: archiving_ok and a first base backup before clients move."
  value       = pgnvme_cluster.new.archive_status
}

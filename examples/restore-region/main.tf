# Disaster recovery on EC2: a new cluster in another region, restored from the replica of the lost region's
# archive bucket (pgnvme_archive_bucket's replica, written by WAL-G) to a moment (or, without target_time, to
# the end of what S3 replication copied), archiving into a bucket of its own in the new region.
#
# The plan reads the replica and names the base backup it starts from (the newest that finished before the
# target) and the archive's recoverable window; a target the replica cannot reach is refused there. The
# nodes read the replica with their instance role: their policy is the new bucket's node_policy_json plus
# read access to the replica's prefix, below. `restored` says what the apply reached.
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source = "pgnvme/pgnvme"
    }
  }
}

variable "region" {
  description = "The region the cluster is restored into: the replica bucket's."
  type        = string
}

variable "name" {
  description = "The new cluster's name (and its archive's prefix)."
  type        = string
  default     = "orders-dr"
}

variable "replica_walg_env" {
  description = "The lost cluster's walg_env, pointing at the replica bucket: its WALG_S3_PREFIX and AWS_REGION (the replica's)."
  type        = map(string)
}

variable "target_time" {
  description = "RFC 3339 time to restore to; null restores to the end of the replica."
  type        = string
  default     = null
}

variable "instance_type" {
  description = "The nodes' instance type, with instance-store NVMe for the database (pgnvme_capacity_plan recommends one)."
  type        = string
  default     = "i4i.xlarge"
}

variable "subnet_ids" {
  description = "Subnets of the new region by availability zone name, one per node."
  type        = map(string)
}

locals {
  # s3://bucket/prefix of the replica.
  replica        = regex("^s3://([^/]+)/?(.*)$", var.replica_walg_env["WALG_S3_PREFIX"])
  replica_bucket = local.replica[0]
  replica_prefix = trimsuffix(local.replica[1], "/")
}

provider "pgnvme" {
  region = var.region
}

resource "pgnvme_archive_bucket" "this" {
  bucket_prefix = "${var.name}-wal-"
  region        = var.region
  prefix        = "clusters/${var.name}"
}

resource "pgnvme_cluster" "this" {
  name           = var.name
  postgres_major = 18

  dynamic "node" {
    for_each = slice(sort(keys(var.subnet_ids)), 0, 3)
    content {
      name = "node-${node.key + 1}"
      zone = node.value
    }
  }

  restore {
    archive {
      walg_env = var.replica_walg_env
    }
    target {
      time = var.target_time
    }
  }

  archive {
    walg_env = pgnvme_archive_bucket.this.walg_env
  }

  aws {
    region        = var.region
    instance_type = var.instance_type
    subnet_ids    = { for z in slice(sort(keys(var.subnet_ids)), 0, 3) : z => var.subnet_ids[z] }
    # The new archive's policy, and reading the replica (an SSE-KMS replica needs kms:Decrypt on its key too).
    node_policy_json = jsonencode({
      Version = "2012-10-17"
      Statement = concat(jsondecode(pgnvme_archive_bucket.this.node_policy_json).Statement, [
        {
          Sid       = "ListTheReplica"
          Effect    = "Allow"
          Action    = ["s3:ListBucket"]
          Resource  = "arn:aws:s3:::${local.replica_bucket}"
          Condition = { StringLike = { "s3:prefix" = ["${local.replica_prefix}/*"] } }
        },
        {
          Sid      = "ReadTheReplica"
          Effect   = "Allow"
          Action   = ["s3:GetObject"]
          Resource = "arn:aws:s3:::${local.replica_bucket}/${local.replica_prefix}/*"
        },
      ])
    })
  }
}

output "restored" {
  description = "The backup restored, the position and commit time reached, the new timeline, and how long it took."
  value       = pgnvme_cluster.this.restored
}

output "connection_uri" {
  value = pgnvme_cluster.this.connection_uri
}

# Getting started on AWS: a primary and two standbys on instance-store NVMe, one per availability zone, under
# ANY 1 quorum commit with Patroni failover, archiving continuously with WAL-G to a bucket made for it.
#
# The same steps as modules/aws-cluster, written out: capacity plan -> placement -> archive bucket -> cluster.
# Give subnet_ids (one subnet per zone, at least three zones, one VPC) and run Terraform where it reaches the
# nodes' private addresses (PostgreSQL 5432, Patroni's REST API 8008): in the VPC or over a VPN.
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source = "pgnvme/pgnvme"
    }
  }
}

variable "region" {
  description = "AWS region of the cluster and its archive bucket."
  type        = string
  default     = "eu-west-1"

  validation {
    condition     = can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", var.region))
    error_message = "region must be an AWS region name, such as eu-west-1 (not a zone such as eu-west-1a)."
  }
}

variable "name" {
  description = "Cluster name: Patroni's scope, the archive prefix and the name of what the platform creates (pgnvme-<name>). IAM names are global: use a name no cluster in another region of the account uses."
  type        = string
  default     = "orders"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,56}$", var.name))
    error_message = "name must start with a lower-case letter and hold only lower-case letters, digits and - (at most 57 characters), e.g. \"orders\"."
  }
}

variable "subnet_ids" {
  description = "Subnets by availability zone name, all in one VPC, e.g. { \"eu-west-1a\" = \"subnet-0a...\" }. The nodes are placed one per zone among these zones, where the instance type is offered."
  type        = map(string)

  validation {
    condition     = length(var.subnet_ids) >= 3 && alltrue([for z, id in var.subnet_ids : can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9][a-z]$", z)) && can(regex("^subnet-[0-9a-f]{8,17}$", id))])
    error_message = "subnet_ids must map at least three availability zone names (such as eu-west-1a) to subnet IDs (subnet-...): one node per zone."
  }
}

variable "dataset_gib" {
  description = "Tables and indexes today, in GiB: the capacity plan sizes each node's instance store for them, their growth and the WAL."
  type        = number
  default     = 100

  validation {
    condition     = var.dataset_gib > 0
    error_message = "dataset_gib must be greater than 0 GiB, e.g. 100."
  }
}

variable "catalog_source" {
  description = "Where the capacity plan and the placement read instance types and their zones: \"ec2\" (live DescribeInstanceTypes and DescribeInstanceTypeOfferings: what AWS offers this account) or \"embedded\" (the snapshot compiled into the provider, no AWS call)."
  type        = string
  default     = "ec2"

  validation {
    condition     = contains(["ec2", "embedded"], var.catalog_source)
    error_message = "catalog_source must be \"ec2\" or \"embedded\"."
  }
}

variable "instance_type" {
  description = "Instance type of the nodes; null takes the capacity plan's recommendation. Set it once chosen: the plan is read again on every plan, and a change of type replaces the nodes one at a time."
  type        = string
  default     = null
}

variable "deletion_protection" {
  description = "Refuse terraform destroy of the cluster while true: its data lives on instance store. Set false and apply before destroying."
  type        = bool
  default     = true
}

variable "acm_pca_arn" {
  description = "An ACM Private CA (ARN, ACTIVE) to issue the nodes' certificates; null for an authority the provider makes for the cluster."
  type        = string
  default     = null
}

locals {
  # One major for the tuning and the nodes: the plan writes only settings this major knows.
  postgres_major = 18
  instance_type  = coalesce(var.instance_type, data.pgnvme_capacity_plan.db.instance_type)
}

provider "pgnvme" {
  region = var.region
}

# The NVMe each node needs for the data, a year of growth, bloat and WAL, and the smallest type that holds it.
data "pgnvme_capacity_plan" "db" {
  source               = var.catalog_source
  region               = var.region
  dataset_gib          = var.dataset_gib
  growth_gib_per_month = 5
  horizon_months       = 12
  node_count           = 3
  architectures        = ["x86_64"]
  postgres_major       = local.postgres_major
}

# One node per zone, among the subnets' zones, where the type is offered (compared by zone ID).
data "pgnvme_placement" "db" {
  source        = var.catalog_source
  region        = var.region
  instance_type = local.instance_type
  node_count    = 3
  zones         = sort(keys(var.subnet_ids))
}

# The WAL archive: versioned, encrypted, private, TLS only; its walg_env and node_policy_json go to the cluster.
resource "pgnvme_archive_bucket" "wal" {
  bucket_prefix = "${substr(var.name, 0, 32)}-wal-"
  region        = var.region
  prefix        = "clusters/${var.name}"
}

resource "pgnvme_cluster" "db" {
  name           = var.name
  postgres_major = local.postgres_major
  parameters     = data.pgnvme_capacity_plan.db.postgres_parameters

  dynamic "node" {
    for_each = data.pgnvme_placement.db.nodes
    content {
      name = node.value.name
      zone = node.value.zone
    }
  }

  archive {
    walg_env = pgnvme_archive_bucket.wal.walg_env
  }

  # TLS for every connection to and between the nodes, from the cluster's own authority or your ACM Private
  # CA (set at create: neither can be changed later). Certificates valid 90 days, renewed by any apply within
  # 7 days of their end.
  tls {
    acm_pca_arn = var.acm_pca_arn
  }

  aws {
    region              = var.region
    instance_type       = local.instance_type
    subnet_ids          = { for n in data.pgnvme_placement.db.nodes : n.zone => var.subnet_ids[n.zone] }
    node_policy_json    = pgnvme_archive_bucket.wal.node_policy_json
    deletion_protection = var.deletion_protection
  }
}

# Replication health, read from the primary on every plan (a failed check is a warning). Pass the password
# kept in SSM (output password_parameter) as PGPASSWORD.
check "quorum" {
  data "pgnvme_replication_status" "primary" {
    server {
      host     = try(pgnvme_cluster.db.primary.host, pgnvme_cluster.db.nodes[0].host)
      port     = try(pgnvme_cluster.db.primary.port, pgnvme_cluster.db.nodes[0].port)
      username = "postgres"
    }
  }

  assert {
    condition     = data.pgnvme_replication_status.primary.is_primary && length([for s in data.pgnvme_replication_status.primary.standbys : s if s.state == "streaming"]) >= 2
    error_message = "No single primary is known, or fewer than two standbys stream from it: the next apply replaces lost nodes."
  }
}

# Archive health from the cluster's last refresh: WAL reaches the bucket, and the archive has no hole.
check "archive" {
  assert {
    condition     = try(pgnvme_cluster.db.archive_status.archiving_ok, null) != false
    error_message = "WAL is not reaching the archive bucket: see the plan's Archive Behind warning."
  }

  assert {
    condition     = try(pgnvme_cluster.db.archive_status.first_missing_wal, null) == null && try(pgnvme_cluster.db.archive_status.verification_ok, null) != false
    error_message = "The archive is not continuous: see the plan's Archive Hole or Archive Not Verified warning."
  }
}

output "instance_type" {
  description = "The nodes' instance type."
  value       = local.instance_type
}

output "required_nvme_gib" {
  description = "NVMe each node needs at the horizon, in GiB."
  value       = data.pgnvme_capacity_plan.db.required_nvme_gib
}

output "zones" {
  description = "Each node's availability zone, by node name."
  value       = { for n in data.pgnvme_placement.db.nodes : n.name => n.zone }
}

output "connection_uri" {
  description = "Every node, target_session_attrs=read-write: libpq and pgx find the primary, also after a failover. No password."
  value       = pgnvme_cluster.db.connection_uri
}

output "read_only_connection_uri" {
  description = "Every node, target_session_attrs=prefer-standby."
  value       = pgnvme_cluster.db.read_only_connection_uri
}

output "ca_certificate" {
  description = "The cluster's certificate authority (PEM): save it as the clients' sslrootcert, e.g. ~/.postgresql/root.crt, for the URIs' sslmode=verify-full."
  value       = pgnvme_cluster.db.tls.ca_certificate
}

output "password_parameter" {
  description = "SSM SecureString holding the postgres user's password."
  value       = "${pgnvme_cluster.db.aws.ssm_parameter_path}/superuser-password"
}

output "archive_status" {
  description = "The archive as the last refresh read it."
  value       = pgnvme_cluster.db.archive_status
}

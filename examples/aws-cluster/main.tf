# The talk's architecture on EC2: a primary and two standbys on instance-store NVMe, one per availability
# zone, under ANY 1 quorum commit with Patroni failover, archiving continuously.
#
# On AWS: give subnet_ids (one subnet per zone you allow) and run Terraform where it reaches the nodes'
# private addresses (Patroni's REST API, port 8008): in the VPC or over a VPN. The archive is a
# pgnvme_archive_bucket written by WAL-G.
#
# Without AWS: `make ec2-demo` applies this configuration against moto plus the node simulator
# (internal/nodesim), which boots every instance moto runs from its user-data in a network namespace at its
# network interface's address. The simulator sets endpoint, ami_id, postgres_major and pgbackrest_options
# (WAL-G cannot be installed there; pgBackRest archives to a bucket at the simulated endpoint).
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source = "pgnvme/pgnvme"
    }
  }
}

variable "region" {
  description = "AWS region of the cluster."
  type        = string
  default     = "eu-west-1"
}

variable "name" {
  description = "Cluster name: Patroni's scope, the archive prefix, and the prefix of what the platform creates."
  type        = string
  default     = "orders"
}

variable "subnet_ids" {
  description = "Subnets by availability zone name, all in one VPC; the nodes are placed in three of these zones."
  type        = map(string)
}

variable "dataset_gib" {
  description = "Size of the database today in GiB; the capacity plan sizes the instance store for it and its growth."
  type        = number
  default     = 50
}

variable "instance_type" {
  description = "Instance type override; null takes the capacity plan's recommendation."
  type        = string
  default     = null
}

variable "postgres_major" {
  description = "PostgreSQL major version of the nodes."
  type        = number
  default     = 17
}

variable "ami_id" {
  description = "AMI of the nodes; null reads Debian 12's from its public SSM parameter."
  type        = string
  default     = null
}

variable "endpoint" {
  description = "One endpoint URL for every AWS service the provider calls (moto, LocalStack); null for AWS itself."
  type        = string
  default     = null
}

variable "pgbackrest_options" {
  description = "pgBackRest repository options to archive with instead of a WAL-G bucket made here; null on AWS."
  type        = map(string)
  default     = null
}

variable "patroni" {
  description = "Patroni's timings; null keeps Patroni's defaults (ttl 30, loop_wait 10, retry_timeout 10)."
  type = object({
    ttl           = number
    loop_wait     = number
    retry_timeout = number
  })
  default = null
}

variable "deletion_protection" {
  description = "Refuse terraform destroy while true."
  type        = bool
  default     = true
}

provider "pgnvme" {
  region                      = var.region
  skip_credentials_validation = var.endpoint != null
  s3_use_path_style           = var.endpoint != null
  endpoints {
    ec2 = var.endpoint
    s3  = var.endpoint
    iam = var.endpoint
    sts = var.endpoint
    ssm = var.endpoint
  }
}

# Instance store for the data, its growth for a year and the WAL; the recommended type's tuned parameters.
data "pgnvme_capacity_plan" "db" {
  region               = var.region
  dataset_gib          = var.dataset_gib
  growth_gib_per_month = 5
  horizon_months       = 12
  node_count           = 3
  architectures        = ["x86_64"]
  postgres_major       = var.postgres_major
}

locals {
  instance_type = coalesce(var.instance_type, data.pgnvme_capacity_plan.db.instance_type)
}

# One node per zone, among the zones that have a subnet.
data "pgnvme_placement" "db" {
  instance_type = local.instance_type
  region        = var.region
  node_count    = 3
  zones         = keys(var.subnet_ids)
}

resource "pgnvme_archive_bucket" "wal" {
  count         = var.pgbackrest_options == null ? 1 : 0
  bucket_prefix = "${var.name}-wal-"
  region        = var.region
  prefix        = "clusters/${var.name}"
}

resource "pgnvme_cluster" "db" {
  name           = var.name
  postgres_major = var.postgres_major
  node           = [for n in data.pgnvme_placement.db.nodes : { name = n.name, zone = n.zone }]
  parameters     = data.pgnvme_capacity_plan.db.postgres_parameters
  archive = var.pgbackrest_options != null ? {
    pgbackrest_options = var.pgbackrest_options
    walg_env           = null
    } : {
    pgbackrest_options = null
    walg_env           = pgnvme_archive_bucket.wal[0].walg_env
  }
  aws = {
    region              = var.region
    instance_type       = local.instance_type
    ami_id              = var.ami_id
    subnet_ids          = var.subnet_ids
    node_policy_json    = var.pgbackrest_options == null ? pgnvme_archive_bucket.wal[0].node_policy_json : null
    patroni             = var.patroni
    deletion_protection = var.deletion_protection
  }
}

output "connection_uri" {
  description = "Every node, libpq picks the primary (target_session_attrs=read-write); the password is in SSM."
  value       = pgnvme_cluster.db.connection_uri
}

output "read_only_connection_uri" {
  value = pgnvme_cluster.db.read_only_connection_uri
}

output "nodes" {
  value = pgnvme_cluster.db.nodes
}

output "instance_ids" {
  value = pgnvme_cluster.db.aws.instance_ids
}

output "synchronous_standby_names" {
  value = pgnvme_cluster.db.synchronous_standby_names
}

output "password_parameter" {
  description = "SSM SecureString holding the postgres user's password."
  value       = "${pgnvme_cluster.db.aws.ssm_parameter_path}/superuser-password"
}

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
#
# The configuration is the aws-cluster module (modules/aws-cluster) plus the provider's settings.
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
  default     = 18
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
    ec2   = var.endpoint
    s3    = var.endpoint
    iam   = var.endpoint
    sts   = var.endpoint
    ssm   = var.endpoint
    elbv2 = var.endpoint
  }
}

# Capacity plan -> placement -> archive bucket -> cluster: the aws-cluster module.
module "db" {
  source = "../../modules/aws-cluster"

  name                 = var.name
  region               = var.region
  subnet_ids           = var.subnet_ids
  dataset_gib          = var.dataset_gib
  growth_gib_per_month = 5
  instance_type        = var.instance_type
  postgres_major       = var.postgres_major
  ami_id               = var.ami_id
  pgbackrest_options   = var.pgbackrest_options
  deletion_protection  = var.deletion_protection
}

output "connection_uri" {
  description = "Every node, libpq picks the primary (target_session_attrs=read-write); the password is in SSM."
  value       = module.db.connection_uri
}

output "read_only_connection_uri" {
  value = module.db.read_only_connection_uri
}

output "nodes" {
  value = module.db.nodes
}

output "instance_ids" {
  value = module.db.instance_ids
}

output "instance_type" {
  value = module.db.instance_type
}

output "synchronous_standby_names" {
  value = module.db.synchronous_standby_names
}

output "password_parameter" {
  description = "SSM SecureString holding the postgres user's password."
  value       = module.db.password_parameter
}

# Getting started on AWS: a primary and two standbys on instance-store NVMe, one per availability zone, under
# ANY 1 quorum commit with Patroni failover, archiving continuously with WAL-G to a bucket made for it.
#
# The aws-cluster module takes the steps: capacity plan -> placement -> archive bucket -> cluster, with check
# blocks on the quorum and the archive. Here it is the module of this repository; in your own configuration
# pin it to a commit (source = "git::https://github.com/pgnvme/terraform-provider-pgnvme.git//modules/aws-cluster?ref=<commit>")
# or give the path of your clone. Give subnet_ids (one subnet per zone, at least three zones, one VPC) and run
# Terraform where it reaches the nodes' private addresses (PostgreSQL 5432, Patroni's REST API 8008): in the
# VPC or over a VPN. The module checks every input at plan.
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
}

variable "subnet_ids" {
  description = "Subnets by availability zone name, all in one VPC, e.g. { \"eu-west-1a\" = \"subnet-0a...\" }. The nodes are placed one per zone among these zones, where the instance type is offered."
  type        = map(string)
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

provider "pgnvme" {
  region = var.region
}

module "orders" {
  source = "../../../modules/aws-cluster"

  # Patroni's scope, the archive prefix and the name of what the platform creates (pgnvme-orders). IAM names
  # are global: use a name no cluster in another region of the account uses.
  name       = "orders"
  region     = var.region
  subnet_ids = var.subnet_ids

  # The NVMe each node needs for the data, a year of growth, bloat and WAL, and the smallest type that holds
  # it, read live from EC2: what AWS offers this account in these zones.
  dataset_gib          = 100
  growth_gib_per_month = 5
  horizon_months       = 12
  catalog_source       = "ec2"
  instance_type        = var.instance_type

  # TLS for every connection to and between the nodes, from the cluster's own authority (set at create: it
  # cannot be added later). Certificates valid 90 days, renewed by any apply within 7 days of their end.
  tls                 = {}
  deletion_protection = var.deletion_protection
}

output "instance_type" {
  description = "The nodes' instance type."
  value       = module.orders.instance_type
}

output "zones" {
  description = "Each node's availability zone, by node name."
  value       = module.orders.zones
}

output "connection_uri" {
  description = "Every node, target_session_attrs=read-write: libpq and pgx find the primary, also after a failover. No password."
  value       = module.orders.connection_uri
}

output "read_only_connection_uri" {
  description = "Every node, target_session_attrs=prefer-standby."
  value       = module.orders.read_only_connection_uri
}

output "ca_certificate" {
  description = "The cluster's certificate authority (PEM): save it as the clients' sslrootcert, e.g. ~/.postgresql/root.crt, for the URIs' sslmode=verify-full."
  value       = module.orders.ca_certificate
}

output "password_parameter" {
  description = "SSM SecureString holding the postgres user's password."
  value       = module.orders.password_parameter
}

output "archive_status" {
  description = "The archive as the last refresh read it."
  value       = module.orders.archive_status
}

# An orders database of 200 GiB growing 10 GiB a month, on three zones of a VPC you already have.
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source  = "pgnvme/pgnvme"
      version = ">= 0.1.0"
    }
  }
}

variable "subnet_ids" {
  description = "Private subnets by availability zone name, at least three, in one VPC."
  type        = map(string)
}

provider "pgnvme" {
  region = "eu-west-1"
}

module "orders" {
  source = "../.."

  name                 = "orders"
  region               = "eu-west-1"
  subnet_ids           = var.subnet_ids
  dataset_gib          = 200
  growth_gib_per_month = 10
  tags                 = { team = "payments" }
}

output "connection_uri" {
  value = module.orders.connection_uri
}

output "instance_type" {
  value = module.orders.instance_type
}

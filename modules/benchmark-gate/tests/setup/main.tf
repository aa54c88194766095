# A one-node local PostgreSQL cluster for the gate's tests to benchmark; the test run passes data_dir and
# port_base (a directory the postgres user can reach and a free port).
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source  = "pgnvme/pgnvme"
      version = ">= 0.1.0"
    }
  }
}

variable "data_dir" {
  description = "Absolute directory for the node's data, reachable by the postgres user."
  type        = string
}

variable "port_base" {
  description = "A free TCP port on 127.0.0.1."
  type        = number
}

resource "pgnvme_cluster" "server" {
  name       = "tf-acc-gate"
  node_count = 1
  local {
    data_dir  = var.data_dir
    port_base = var.port_base
  }
}

output "host" {
  description = "Address the primary listens on."
  value       = pgnvme_cluster.server.primary.host
}

output "port" {
  description = "Port the primary listens on."
  value       = pgnvme_cluster.server.primary.port
}

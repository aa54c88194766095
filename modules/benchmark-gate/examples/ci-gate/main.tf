# Gate a change on performance: the talk's random UPDATE for 60 seconds against a primary, with thresholds.
# `terraform apply` warns when a gate fails; a pipeline that must stop reads the `passed` output:
#
#   terraform apply -auto-approve -var host=10.0.1.10
#   test "$(terraform output -raw passed)" = true || { terraform output violations; exit 1; }
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source  = "pgnvme/pgnvme"
      version = ">= 0.1.0"
    }
  }
}

variable "host" {
  description = "Primary to benchmark (the password comes from PGPASSWORD or ~/.pgpass)."
  type        = string
}

module "gate" {
  source = "../.."

  server           = { host = var.host, port = 5432 }
  workload         = "random-update"
  clients          = 64
  duration_seconds = 60

  min_tps            = 10000
  max_latency_p95_ms = 10
  max_latency_p99_ms = 25
}

output "passed" {
  description = "True when every gate holds."
  value       = module.gate.passed
}

output "violations" {
  description = "One sentence per gate that does not hold."
  value       = module.gate.violations
}

output "tps" {
  description = "Transactions per second."
  value       = module.gate.tps
}

output "latency_ms" {
  description = "Latency percentiles in ms."
  value       = module.gate.latency_ms
}

# Quorum commit: every commit waits for the fastest of the two standbys, never the slowest.
resource "pgnvme_synchronous_replication" "orders" {
  server {
    host     = "10.0.1.10"
    port     = 5432
    username = "postgres"
    sslmode  = "require"
    # Write-only (Terraform 1.11+): used to apply, never stored. Refresh uses PGPASSWORD or ~/.pgpass.
    password_wo = var.postgres_password
  }
  method        = "any"
  number        = 1
  standby_names = ["pg-b", "pg-c"]
}

variable "postgres_password" {
  type      = string
  sensitive = true
  ephemeral = true
}

output "synchronous_standby_names" {
  value = pgnvme_synchronous_replication.orders.synchronous_standby_names # ANY 1 ("pg-b", "pg-c")
}

# The same import as a configuration block (Terraform 1.5 and later): `terraform plan` shows what it
# imports, `terraform apply` records it.
import {
  to = pgnvme_synchronous_replication.orders
  id = "10.0.1.10:5432/postgres"
}

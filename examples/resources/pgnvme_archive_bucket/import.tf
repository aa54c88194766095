# The same import as a configuration block (Terraform 1.5 and later): `terraform plan` shows what it
# imports, `terraform apply` records it.
import {
  to = pgnvme_archive_bucket.wal
  id = "acme-orders-wal-archive"
}

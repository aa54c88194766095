# The same import as a configuration block (Terraform 1.5 and later): `terraform plan` shows what it
# imports, `terraform apply` records it. For a cluster on EC2 the id is "aws:<region>:<name>".
import {
  to = pgnvme_cluster.demo
  id = "local:/var/lib/pgnvme/demo"
}

# 482 GiB of tables and indexes, growing 10 GiB a month for a year, on three nodes in three zones.
data "pgnvme_capacity_plan" "orders" {
  region               = "us-east-1"
  dataset_gib          = 482
  growth_gib_per_month = 10
  horizon_months       = 12
  min_vcpus            = 16
  min_memory_gib       = 64
  architectures        = ["x86_64"]
  node_count           = 3
  postgres_major       = 18
}

output "instance_type" {
  value = data.pgnvme_capacity_plan.orders.instance_type
}

# Which rule picked the type (the ranking order and the vCPU floor it applied).
output "why" {
  value = data.pgnvme_capacity_plan.orders.recommendation_reason
}

output "required_nvme_gib" {
  value = data.pgnvme_capacity_plan.orders.required_nvme_gib
}

output "shared_buffers" {
  value = data.pgnvme_capacity_plan.orders.postgres_parameters["shared_buffers"]
}

# Sized as a pgbench database instead of a dataset size:
data "pgnvme_capacity_plan" "bench" {
  region        = "us-east-1"
  pgbench_scale = 10000
}

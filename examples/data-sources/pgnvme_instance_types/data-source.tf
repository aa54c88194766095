# Instance types with at least 900 GiB of local NVMe, x86_64, offered in three zones of us-east-1.
data "pgnvme_instance_types" "big_nvme" {
  region              = "us-east-1"
  min_nvme_gib        = 900
  min_vcpus           = 16
  architectures       = ["x86_64"]
  exclude_families    = ["i3"]
  offered_in_zone_ids = ["use1-az1", "use1-az2", "use1-az4"]
}

output "nvme_types" {
  value = [for t in data.pgnvme_instance_types.big_nvme.instance_types : "${t.instance_type}: ${t.nvme_total_gib} GiB on ${t.nvme_disks} disk(s)"]
}

# The same query, live from EC2 (needs credentials):
data "pgnvme_instance_types" "live" {
  source       = "ec2"
  region       = "eu-west-1"
  min_nvme_gib = 900
}

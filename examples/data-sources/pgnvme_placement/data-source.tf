# A primary and two standbys of m6id.4xlarge in three distinct zones of us-east-1.
data "pgnvme_placement" "cluster" {
  instance_type = "m6id.4xlarge"
  region        = "us-east-1"
  node_count    = 3
  node_names    = ["pg-a", "pg-b", "pg-c"]
}

output "primary_zone" {
  value = data.pgnvme_placement.cluster.primary.zone
}

output "standby_zones" {
  value = [for s in data.pgnvme_placement.cluster.standbys : s.zone]
}

output "survives_zone_loss" {
  value = data.pgnvme_placement.cluster.survives_zone_loss
}

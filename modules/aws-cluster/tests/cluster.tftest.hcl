# A real cluster on EC2 as moto plus the node simulator run it (internal/moduletest's TestAWSClusterModule
# starts them, points AWS_ENDPOINT_URL at moto and passes region, subnet_ids, ami_id, postgres_major and
# pgbackrest_options on the command line: WAL-G cannot be installed there; it also stores the superuser's
# password in SSM first and passes it as PGPASSWORD, for the quorum check). terraform test destroys it at
# the end.

variables {
  name                = "tf-acc-mod"
  dataset_gib         = 10
  deletion_protection = false
  tags                = { team = "tf-acc" }
}

run "create" {
  assert {
    condition     = output.instance_type == data.pgnvme_capacity_plan.this.instance_type && output.instance_type == pgnvme_cluster.this.aws.instance_type
    error_message = "Without an override the nodes should get the capacity plan's type, not ${output.instance_type}."
  }
  assert {
    condition     = length(output.nodes) == 3 && alltrue([for n in output.nodes : n.state == "running"]) && length([for n in output.nodes : n if n.role == "primary"]) == 1
    error_message = "Three running nodes, one primary: ${jsonencode(output.nodes)}"
  }
  assert {
    condition     = length(distinct([for n in output.nodes : n.zone])) == 3 && length(distinct(values(output.zones))) == 3
    error_message = "One node per zone: ${jsonencode(output.nodes)}"
  }
  assert {
    condition     = startswith(output.synchronous_standby_names, "ANY 1 (")
    error_message = "Patroni's quorum should be ANY 1 of the standbys: ${output.synchronous_standby_names}"
  }
  assert {
    condition     = length(split(",", output.connection_uri)) == 3 && endswith(output.connection_uri, "target_session_attrs=read-write")
    error_message = "The URI should list every node: ${output.connection_uri}"
  }
  assert {
    condition     = output.walg_env == null && length(output.instance_ids) == 3 && output.nvme_utilization > 0 && output.nvme_utilization <= 1
    error_message = "With pgbackrest_options there is no WAL-G bucket; three instances; the NVMe utilisation is a share."
  }
  assert {
    condition     = output.archive_status.archiving_ok && output.archive_status.backup_count == 1 && output.archive_status.last_backup_type == "full"
    error_message = "After create WAL should reach the bucket and it should hold the full backup taken at create: ${jsonencode(output.archive_status)}"
  }
}

# A minor input (a tag) changes nothing on the cluster: no replacement, no roll. Applied rather than only
# planned: the quorum check reads the primary at apply (a plan of a changed cluster defers it), and the
# instances after the apply prove it.
run "tag_change_replaces_nothing" {

  variables {
    tags = { team = "tf-acc", cost_center = "db" }
  }

  assert {
    condition     = output.instance_ids == run.create.instance_ids && output.nodes[*].host == run.create.nodes[*].host
    error_message = "A tag change should keep every instance and address."
  }
  assert {
    condition     = pgnvme_cluster.this.aws.tags["cost_center"] == "db"
    error_message = "The new tags should be in the cluster's configuration."
  }
}

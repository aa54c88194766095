# The user-data of each node of a three-node cluster whose instances you launch yourself. Each node keeps a
# stable private IP on its own ENI, so a replaced instance comes back with the same identity.
locals {
  nodes = [
    { name = "node-1", private_ip = "10.0.1.10", zone = "eu-west-1a" },
    { name = "node-2", private_ip = "10.0.2.10", zone = "eu-west-1b" },
    { name = "node-3", private_ip = "10.0.3.10", zone = "eu-west-1c" },
  ]
}

data "pgnvme_node_bootstrap" "node" {
  for_each = { for n in local.nodes : n.name => n }

  name          = "orders"
  node          = each.key
  nodes         = local.nodes
  instance_type = "m6id.4xlarge"
  region        = "eu-west-1"
  allowed_cidrs = ["10.0.0.0/16"]
  synchronous {
    number          = 1
    data_durability = "required"
  }
  parameters = {
    shared_buffers = "16GB"
  }
  archive {
    walg_env = {
      WALG_S3_PREFIX = "s3://orders-wal-archive/orders"
      AWS_REGION     = "eu-west-1"
    }
  }
}

# With the hashicorp/aws provider (not applied here). Never let a user-data change modify an instance in
# place: a stop/start wipes its instance store. Replace it instead, one node at a time.
#
# resource "aws_instance" "node" {
#   for_each                    = data.pgnvme_node_bootstrap.node
#   ami                         = data.aws_ssm_parameter.debian12.value
#   instance_type               = "m6id.4xlarge"
#   iam_instance_profile        = aws_iam_instance_profile.node.name # may read /pgnvme/orders/* and the archive
#   user_data_base64            = each.value.user_data_base64gzip
#   user_data_replace_on_change = true
#   metadata_options { http_tokens = "required" }
#   network_interface {
#     network_interface_id = aws_network_interface.node[each.key].id
#     device_index         = 0
#   }
# }

output "ssm_parameters_to_create" {
  value = data.pgnvme_node_bootstrap.node["node-1"].ssm_parameter_names
}

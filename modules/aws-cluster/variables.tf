variable "name" {
  description = "Cluster name: Patroni's scope, the archive prefix and the name of what the platform creates (`pgnvme-<name>`). Lower-case letters, digits and `-`, starting with a letter, at most 57 characters. Changing it replaces the cluster."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,56}$", var.name))
    error_message = "name must start with a lower-case letter and contain only lower-case letters, digits and - (at most 57 characters: the instance role is pgnvme-<name>, and IAM names have at most 64), e.g. \"orders\"."
  }
}

variable "postgres_major" {
  description = "PostgreSQL major version of the nodes. Changing it replaces the cluster."
  type        = number
  default     = 18

  validation {
    condition     = var.postgres_major >= 13 && var.postgres_major <= 18 && floor(var.postgres_major) == var.postgres_major
    error_message = "postgres_major must be a whole number from 13 to 18, e.g. 18."
  }
}

variable "region" {
  description = "AWS region of the cluster and its archive."
  type        = string

  validation {
    condition     = can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9]$", var.region))
    error_message = "region must be an AWS region name, such as eu-west-1."
  }
}

variable "subnet_ids" {
  description = "Subnets by availability zone name (`{ \"eu-west-1a\" = \"subnet-...\" }`), all in one VPC: the nodes are placed one per zone among these zones, where the instance type is offered."
  type        = map(string)

  validation {
    condition     = length(var.subnet_ids) >= 3 && alltrue([for z, id in var.subnet_ids : can(regex("^[a-z]{2}(-gov)?-[a-z]+-[0-9][a-z]$", z)) && can(regex("^subnet-[0-9a-f]{8,17}$", id))])
    error_message = "subnet_ids must map at least three availability zone names (such as eu-west-1a) to subnet IDs (subnet-...): one node per zone."
  }
}

variable "dataset_gib" {
  description = "Size of the database today (tables and indexes) in GiB; the capacity plan sizes the instance store for it, its growth and the WAL."
  type        = number

  validation {
    condition     = var.dataset_gib > 0
    error_message = "dataset_gib must be more than 0."
  }
}

variable "growth_gib_per_month" {
  description = "Growth of the dataset in GiB per month."
  type        = number
  default     = 0

  validation {
    condition     = var.growth_gib_per_month >= 0
    error_message = "growth_gib_per_month must be 0 or more."
  }
}

variable "horizon_months" {
  description = "Months of growth the instance store must hold."
  type        = number
  default     = 12

  validation {
    condition     = var.horizon_months >= 0 && var.horizon_months <= 120 && floor(var.horizon_months) == var.horizon_months
    error_message = "horizon_months must be a whole number from 0 to 120."
  }
}

variable "node_count" {
  description = "Nodes: a primary and `node_count - 1` standbys under `ANY 1` quorum commit, one per zone, so `subnet_ids` needs at least this many zones where the type is offered. 3 to 9; defaults to 3. Changing it adds or removes standbys in place."
  type        = number
  default     = 3
  nullable    = false

  validation {
    condition     = var.node_count >= 3 && var.node_count <= 9 && floor(var.node_count) == var.node_count
    error_message = "node_count must be a whole number from 3 to 9: with ANY 1 a cluster of 3 keeps every acknowledged commit and takes writes through the loss of any one node; fewer cannot do both."
  }
}

variable "architecture" {
  description = "CPU architecture the capacity plan chooses among: `x86_64` (default) or `arm64` (Graviton; the nodes then boot Debian 12's arm64 image). Ignored for the type when `instance_type` is set."
  type        = string
  default     = "x86_64"
  nullable    = false

  validation {
    condition     = contains(["x86_64", "arm64"], var.architecture)
    error_message = "architecture must be \"x86_64\" or \"arm64\"."
  }
}

variable "catalog_source" {
  description = "Where the capacity plan and the placement read instance types and their zones: `embedded` (default: the snapshot compiled into the provider, no AWS call) or `ec2` (live DescribeInstanceTypes and DescribeInstanceTypeOfferings in `region`: the zones where a type is really offered to this account). Use `ec2` for a real deployment."
  type        = string
  default     = "embedded"
  nullable    = false

  validation {
    condition     = contains(["embedded", "ec2"], var.catalog_source)
    error_message = "catalog_source must be \"embedded\" or \"ec2\"."
  }
}

variable "instance_type" {
  description = "Instance type override; null takes the capacity plan's recommendation (output `instance_type`). Changing the type replaces the nodes one at a time."
  type        = string
  default     = null

  validation {
    condition     = var.instance_type == null || can(regex("^[a-z][a-z0-9-]*\\.[a-z0-9-]+$", var.instance_type))
    error_message = "instance_type must be an EC2 instance type name such as m6id.xlarge, or null."
  }
}

variable "ami_id" {
  description = "AMI of the nodes (Debian 12); null reads Debian's public SSM parameter for the type's architecture when the cluster is created."
  type        = string
  default     = null

  validation {
    condition     = var.ami_id == null || can(regex("^ami-[0-9a-f]{8,17}$", var.ami_id))
    error_message = "ami_id must be an AMI ID (ami-...), or null."
  }
}

variable "allowed_cidrs" {
  description = "Networks that reach PostgreSQL and Patroni's REST API (Terraform among them); null means the VPC's CIDR."
  type        = list(string)
  default     = null

  validation {
    condition     = var.allowed_cidrs == null || alltrue([for c in coalesce(var.allowed_cidrs, []) : can(cidrhost(c, 0)) && c != "0.0.0.0/0"])
    error_message = "allowed_cidrs must be IPv4 CIDRs such as 10.0.0.0/16, and not 0.0.0.0/0 (PostgreSQL open to every network)."
  }
}

variable "pgbackrest_options" {
  description = "Archive with pgBackRest to an existing repository (its `repo1-*` options) instead of a WAL-G bucket created here; null creates the bucket."
  type        = map(string)
  default     = null

  validation {
    condition     = var.pgbackrest_options == null || alltrue([for k in keys(coalesce(var.pgbackrest_options, {})) : can(regex("^[a-z][a-z0-9]*(-[a-z0-9]+)*$", k)) && !can(regex("^pg[0-9]+-", k))])
    error_message = "pgbackrest_options keys must be pgBackRest option names such as repo1-s3-bucket (the nodes' own pg1-* options are set by the cluster), or pgbackrest_options null for a WAL-G bucket made here."
  }
}

variable "aws_settings" {
  description = <<-EOT
    More of pgnvme_cluster's `aws` settings, each optional (the resource's page says what each does):
    `load_balancer` (a Network Load Balancer in front of the primary, output `load_balancer_dns_name`; default false),
    `api_address` (`private_ip`, the default, or `public_ip`: an Elastic IP per node for a Terraform outside the VPC),
    `security_group_ids` (the nodes' groups instead of the one created), `iam_instance_profile` (the nodes' profile
    instead of the role created; it must then read the cluster's SSM path and the archive), `key_name` (SSH),
    `ami_ssm_parameter` (where the AMI is read when `ami_id` is null), `placement_group` (a spread group),
    `root_volume_gib` (default 20) and `metadata_hop_limit` (the instance metadata's hop limit, 1 to 64; null
    means the resource's default, 2).
  EOT
  type = object({
    load_balancer        = optional(bool, false)
    api_address          = optional(string, "private_ip")
    security_group_ids   = optional(list(string))
    iam_instance_profile = optional(string)
    key_name             = optional(string)
    ami_ssm_parameter    = optional(string)
    placement_group      = optional(string)
    root_volume_gib      = optional(number, 20)
    metadata_hop_limit   = optional(number)
  })
  default  = {}
  nullable = false

  validation {
    condition     = contains(["private_ip", "public_ip"], var.aws_settings.api_address)
    error_message = "aws_settings.api_address must be \"private_ip\" or \"public_ip\"."
  }
  validation {
    condition     = var.aws_settings.security_group_ids == null || (length(coalesce(var.aws_settings.security_group_ids, [])) >= 1 && length(coalesce(var.aws_settings.security_group_ids, [])) <= 5 && alltrue([for g in coalesce(var.aws_settings.security_group_ids, []) : can(regex("^sg-[0-9a-f]{8,17}$", g))]))
    error_message = "aws_settings.security_group_ids must hold 1 to 5 security group IDs (sg-...), or be left out for the group the cluster creates."
  }
  validation {
    condition     = var.aws_settings.root_volume_gib >= 8 && var.aws_settings.root_volume_gib <= 16384 && floor(var.aws_settings.root_volume_gib) == var.aws_settings.root_volume_gib
    error_message = "aws_settings.root_volume_gib must be a whole number of GiB from 8 to 16384."
  }
  validation {
    condition     = var.aws_settings.metadata_hop_limit == null || (coalesce(var.aws_settings.metadata_hop_limit, 2) >= 1 && coalesce(var.aws_settings.metadata_hop_limit, 2) <= 64 && floor(coalesce(var.aws_settings.metadata_hop_limit, 2)) == coalesce(var.aws_settings.metadata_hop_limit, 2))
    error_message = "aws_settings.metadata_hop_limit must be a whole number of network hops from 1 to 64, or be left out for the default 2."
  }
  validation {
    condition     = alltrue([for v in [var.aws_settings.iam_instance_profile, var.aws_settings.key_name, var.aws_settings.ami_ssm_parameter, var.aws_settings.placement_group] : v == null || trimspace(coalesce(v, "-")) != ""])
    error_message = "aws_settings.iam_instance_profile, key_name, ami_ssm_parameter and placement_group must be names, or be left out."
  }
  validation {
    condition     = var.aws_settings.ami_ssm_parameter == null || startswith(coalesce(var.aws_settings.ami_ssm_parameter, "/"), "/")
    error_message = "aws_settings.ami_ssm_parameter must be an SSM parameter name starting with / (for example /aws/service/debian/release/12/latest/amd64)."
  }
}

variable "tls" {
  description = <<-EOT
    TLS for every connection to and between the nodes (PostgreSQL, replication, Patroni's REST API, etcd), from the
    cluster's own certificate authority: `{}` for the provider's authority with 90-day certificates renewed 7 days
    before they end, or set `validity_period_hours`, `early_renewal_hours`, and `ca_cert_pem` with
    `ca_key_ssm_parameter` for an authority of your own (its key in an SSM SecureString outside `/pgnvme/<name>`).
    Set at create: adding or removing it later is refused at plan. Null (the default): no TLS.
  EOT
  type = object({
    validity_period_hours = optional(number)
    early_renewal_hours   = optional(number)
    ca_cert_pem           = optional(string)
    ca_key_ssm_parameter  = optional(string)
  })
  default = null

  validation {
    condition     = var.tls == null || ((try(var.tls.ca_cert_pem, null) == null) == (try(var.tls.ca_key_ssm_parameter, null) == null))
    error_message = "tls.ca_cert_pem and tls.ca_key_ssm_parameter go together: your authority's certificate and the SSM SecureString holding its key, or neither for the provider's own authority."
  }
}

variable "tags" {
  description = "Tags of every AWS object the module creates (the cluster's `pgnvme:` tags are the platform's own). A change plans no replacement."
  type        = map(string)
  default     = {}

  validation {
    condition     = alltrue([for k in keys(var.tags) : !startswith(lower(k), "aws:") && !startswith(lower(k), "pgnvme:")])
    error_message = "tags must not use the reserved prefixes aws: and pgnvme:."
  }
}

variable "deletion_protection" {
  description = "Refuse terraform destroy of the cluster while true (its data lives on instance store)."
  type        = bool
  default     = true
}

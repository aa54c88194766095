package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
)

// clusterAWSSchema is the aws platform block.
func clusterAWSSchema() schema.SingleNestedBlock {
	computedMap := func(desc string) schema.MapAttribute {
		return schema.MapAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: desc}
	}
	timing := func(desc string, min int64) schema.Int64Attribute {
		return schema.Int64Attribute{Optional: true, MarkdownDescription: desc, Validators: []validator.Int64{int64validator.AtLeast(min)}}
	}
	return schema.SingleNestedBlock{
		MarkdownDescription: "The EC2 platform: one instance per node on instance-store NVMe, one node per availability zone, " +
			"etcd and Patroni (>= 4, `synchronous_mode: quorum`) on every node, archiving to `archive`. Each node has a network " +
			"interface of its own, created first, whose private IP is the node's identity and survives replacement. The provider " +
			"never stops or modifies an instance in place (that wipes its NVMe): a lost instance (terminated or stopped) is replaced " +
			"alone, and a change of `instance_type`, the AMI, `root_volume_gib`, `key_name` or anything else in the nodes' user-data " +
			"replaces the nodes one at a time, standbys first, then a switchover, then the old primary (`parameters`, `synchronous` and " +
			"the `patroni` timings change through Patroni's dynamic configuration instead, without replacing any instance). When every " +
			"node is lost, the apply restores the cluster from the archive's newest base backup to the end of the archive (never an empty database over it; without a backup it stops). Passwords are generated at creation and live " +
			"only in SSM SecureStrings under `ssm_parameter_path` (never in state or user-data). The provider reaches Patroni's " +
			"REST API (port 8008) at each node's `api_address`: run Terraform where it can.",
		Attributes: map[string]schema.Attribute{
			"region": schema.StringAttribute{
				Optional: true, MarkdownDescription: "AWS region of the cluster. Defaults to the provider's `region`. Changing it replaces the cluster.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"instance_type": schema.StringAttribute{
				Optional: true, Validators: []validator.String{requiredInBlock()},
				MarkdownDescription: "Required in `aws {}`. Instance type of every node, with instance-store NVMe, typically `data.pgnvme_capacity_plan.x.instance_type`. " +
					"Changing it replaces the nodes one at a time (a rolling replacement).",
			},
			"ami_id": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "AMI of the nodes (Debian 12, of the type's architecture). Unset: read from `ami_ssm_parameter` when " +
					"the cluster is created and kept in state (a newer image rolls the nodes only when you set it here). Changing it rolls the nodes.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"ami_ssm_parameter": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("SSM parameter holding the AMI ID when `ami_id` is unset. Defaults to Debian's public "+
					"parameter for the type's architecture: `%s` or `%s`.", awsspec.DefaultAMIParameterAMD64, awsspec.DefaultAMIParameterARM64),
				Validators: []validator.String{stringvalidator.ConflictsWith(path.MatchRelative().AtParent().AtName("ami_id"))},
			},
			"subnet_ids": schema.MapAttribute{
				ElementType: types.StringType, Optional: true, Validators: []validator.Map{requiredInBlock()},
				MarkdownDescription: "Required in `aws {}`. Subnet of each node zone, by zone name (`{ \"eu-west-1a\" = \"subnet-...\" }`), all in one VPC. " +
					"Every `node[].zone` needs one. A node's subnet is fixed for life (its network interface lives there).",
			},
			"security_group_ids": schema.ListAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Security groups of the nodes' network interfaces. Unset: the provider creates one " +
					"(`pgnvme-<name>`) that lets the members reach each other on PostgreSQL (5432), Patroni's REST API (8008) and etcd " +
					"(2379, 2380), and `allowed_cidrs` reach PostgreSQL and the REST API. Given groups must allow the same.",
				Validators: []validator.List{listvalidator.SizeBetween(1, 5)},
			},
			"allowed_cidrs": schema.ListAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Networks that reach PostgreSQL (password authentication, scram-sha-256) and Patroni's REST API " +
					"(the provider among them). Unset: the VPC's CIDR. The members always reach each other.",
			},
			"iam_instance_profile": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Instance profile of the nodes. Unset: the provider creates a role and profile (`pgnvme-<name>`) " +
					"that read the cluster's SSM parameters, plus `node_policy_json`. A given profile must allow reading " +
					"`ssm_parameter_path` and the archive.",
			},
			"node_policy_json": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Extra IAM policy of the role the provider creates, typically `pgnvme_archive_bucket.x.node_policy_json` " +
					"(the archive prefix only). Only with the created role (not with `iam_instance_profile`). With a `restore` block it must also " +
					"let the nodes list and read the source archive; the plan warns when no statement of it can.",
			},
			"key_name": schema.StringAttribute{Optional: true, MarkdownDescription: "EC2 key pair for SSH to the nodes. Unset: none. Changing it rolls the nodes."},
			"placement_group": schema.StringAttribute{Optional: true, MarkdownDescription: "Name of an existing spread (or partition) " +
				"placement group the nodes' instances launch into, such as an `aws_placement_group` with `strategy = \"spread\"` and " +
				"`spread_level = \"rack\"`: EC2 then puts no two nodes on the same rack, even within one zone. A cluster placement group " +
				"(one zone) is refused at plan, and so is one that does not exist. Unset: none. Changing it rolls the nodes."},
			"root_volume_gib": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(awsspec.DefaultRootVolumeGiB),
				MarkdownDescription: fmt.Sprintf("Size of each node's root volume in GiB (gp3, encrypted, deleted with the instance): "+
					"the system, etcd's data and logs; PostgreSQL's data lives on instance store. Defaults to `%d`; %d to %d. Changing it rolls the nodes.",
					awsspec.DefaultRootVolumeGiB, awsspec.MinRootVolumeGiB, awsspec.MaxRootVolumeGiB),
			},
			"metadata_hop_limit": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("How many network hops a response of the instance metadata service (IMDSv2, always required) "+
					"may travel: `1` keeps the metadata and the node's role credentials to the host itself, `2` (the default when unset) lets a "+
					"container on the node reach them too. %d to %d. Changing it rolls the nodes.", awsspec.MinMetadataHopLimit, awsspec.MaxMetadataHopLimit),
				// 0 would read as unset (the default) in the block: refused here, the range checked again by the block's rule.
				Validators: []validator.Int64{int64validator.Between(awsspec.MinMetadataHopLimit, awsspec.MaxMetadataHopLimit)},
			},
			"api_address": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(awsspec.APIAddressPrivate),
				MarkdownDescription: "Address the provider reaches the nodes' REST API and PostgreSQL at: `private_ip` (default; run " +
					"Terraform in the VPC or over a VPN) or `public_ip`: each node's interface gets an Elastic IP of its own (kept across replacements, " +
					"released when the node is removed, on destroy or when this goes back to `private_ip`); `allowed_cidrs` must then hold the address Terraform runs from.",
				Validators: []validator.String{stringvalidator.OneOf(awsspec.APIAddressPrivate, awsspec.APIAddressPublic)},
			},
			"tags": schema.MapAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Tags of every object the platform creates, over the provider's `default_tags`. The platform adds " +
					"`pgnvme:cluster`, `pgnvme:node` and `pgnvme:config` itself (`pgnvme:` keys are reserved). A change takes effect on new objects.",
			},
			"deletion_protection": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Refuse destroy (and replacement of the whole cluster) while true. Defaults to `true`: the data lives " +
					"on instance store. To destroy, set it to `false`, apply, then destroy. (`prevent_destroy` cannot take a variable; this can.)",
			},
			"load_balancer": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Create an internal Network Load Balancer (`pgnvme-<name>`) in the nodes' subnets for clients that " +
					"cannot use multi-host URIs: port 5432 forwards to the primary (targets healthy on Patroni's `GET /primary`), " +
					"port 5433 to the standbys (`GET /replica`). The targets are the nodes' interface addresses, so a replaced node " +
					"needs no re-registration. The health checks come from the load balancer's addresses in the subnets: " +
					"`allowed_cidrs` must hold them (the default, the VPC's CIDR, does). Defaults to `false`; turning it off removes it.",
			},
			"load_balancer_dns_name": schema.StringAttribute{Computed: true, MarkdownDescription: "The load balancer's DNS name (`:5432` read-write, `:5433` read-only); null without `load_balancer`."},
			"configuration_applied": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether Patroni's dynamic configuration " +
				"(the parameters, `patroni` timings and the quorum, kept in etcd) is this configuration's and no node waits for a restart to apply it; " +
				"false after a change made outside Terraform (`patronictl edit-config`) or an apply that stopped part-way, and the next apply sets it again. " +
				"Null when it could not be read."},
			"pending_restart": schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "The nodes whose PostgreSQL " +
				"waits for a restart to apply a setting (Patroni's `pending_restart`), in node order; the next apply restarts them one at a time, standbys first."},
			"instance_ids":          computedMap("Each node's current instance, by node name. A replaced node has a new one."),
			"network_interface_ids": computedMap("Each node's network interface, by node name: fixed for the node's life."),
			"private_ips":           computedMap("Each node's private IP (its interface's), by node name: its stable address for etcd, Patroni and clients."),
			"security_group_id":     schema.StringAttribute{Computed: true, MarkdownDescription: "The security group the provider created; null when `security_group_ids` is given."},
			"instance_profile":      schema.StringAttribute{Computed: true, MarkdownDescription: "The instance profile the provider created; null when `iam_instance_profile` is given."},
			"ssm_parameter_path": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: fmt.Sprintf("SSM path of the cluster's password SecureStrings: `<path>/superuser-password` (user `%s`), "+
					"`/replication-password` and `/restapi-password` (Patroni's REST API user `%s`).", bootstrap.DefaultSuperuser, bootstrap.DefaultPatroniRESTAPIUser),
			},
		},
		Blocks: map[string]schema.Block{
			"patroni": schema.SingleNestedBlock{
				MarkdownDescription: "Patroni's timings. Unset values are Patroni's defaults (ttl 30, loop_wait 10, retry_timeout 10 " +
					"seconds, maximum_lag_on_failover 1 MiB). Patroni requires `loop_wait + 2 * retry_timeout <= ttl`; the ttl bounds " +
					"how long a lost leader holds writes up.",
				Attributes: map[string]schema.Attribute{
					"ttl":           timing("Leader lock time to live in seconds; 20 or more.", 20),
					"loop_wait":     timing("Seconds between Patroni's loops; 1 or more.", 1),
					"retry_timeout": timing("Seconds before Patroni gives up on the DCS or PostgreSQL; 3 or more.", 3),
					"maximum_lag_on_failover": schema.Int64Attribute{Optional: true, MarkdownDescription: "Bytes a standby may lag and still " +
						"take part in a failover, and the most a switchover target may lag in a rolling replacement.", Validators: []validator.Int64{int64validator.AtLeast(0)}},
				},
			},
		},
	}
}

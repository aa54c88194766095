package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/awsspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/pki"
)

// pgnvme_cluster's tls block: its schema and its conversions to and from cluster.TLSInput and
// cluster.TLSStatus.

type tlsModel struct {
	ValidityPeriodHours types.Int64  `tfsdk:"validity_period_hours"`
	EarlyRenewalHours   types.Int64  `tfsdk:"early_renewal_hours"`
	CACertPEM           types.String `tfsdk:"ca_cert_pem"`
	CAKeyParameter      types.String `tfsdk:"ca_key_ssm_parameter"` // cluster.TLSInput's name: expand matches by field name
	ACMPCAArn           types.String `tfsdk:"acm_pca_arn"`
	CACertificate       types.String `tfsdk:"ca_certificate"`
	CAFile              types.String `tfsdk:"ca_file"`
	NotAfter            types.Map    `tfsdk:"not_after"`
}

// clusterTLSSchema is the tls block.
func clusterTLSSchema() schema.SingleNestedBlock {
	return schema.SingleNestedBlock{
		MarkdownDescription: "TLS for every TCP connection to the nodes, from the cluster's own certificate authority (see [TLS](#tls)). " +
			"With the block, each node serves TLS only (`ssl = on`, TLS 1.2 at least; set `parameters.ssl_min_protocol_version = \"TLSv1.3\"` " +
			"when every client allows it): `pg_hba.conf` rejects TCP connections without TLS, replication authenticates by a client certificate, " +
			"and `connection_uri` carries `sslmode=verify-full` with the authority's certificate. The provider makes the authority (ECDSA P-256, " +
			"valid 10 years) and a server certificate per node; a plain apply renews each certificate before it ends (the plan says which and " +
			"why) with a reload, no restart and no failover. Adding or removing the block is done in place (the primary first, each node " +
			"reloaded). No private key is in Terraform's state. On `aws` Patroni's REST API serves https only (the provider verifies it, and the " +
			"load balancer's health checks use HTTPS) and etcd's peers and clients use TLS with client certificates; the authority's key is kept " +
			"in the SecureString `/pgnvme-ca/<name>`, outside the SSM path the nodes' role reads, and each node's key and certificates in " +
			"`<ssm_path>/tls/<node>`, which the node reads at boot and every 20 seconds; a renewal is applied node by node, the apply waiting " +
			"until each serves its new certificate. The certificates name each node's private address, its Elastic IP (`api_address = \"public_ip\"`) " +
			"and the load balancer's DNS name, so `verify-full` holds through either. A client verifies with `tls.ca_certificate` saved as " +
			"`~/.postgresql/root.crt` (libpq's default) or named by `sslrootcert`. On `aws` the block is set when the cluster is created: adding " +
			"or removing it on a running cluster is refused at plan (etcd and replication cannot mix TLS and plain TCP during a rolling " +
			"replacement); make a new cluster from the archive instead. On `aws` the authority may be your own (`ca_cert_pem` and " +
			"`ca_key_ssm_parameter`), or an ACM Private CA (`acm_pca_arn`).",
		Attributes: map[string]schema.Attribute{
			"validity_period_hours": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("How long each node's and the client's certificate is valid, in hours: at least %d, at most "+
					"the authority's %d. Defaults to `%d` (90 days). A shorter value renews the certificates that would outlive it.",
					int(pki.MinValidity.Hours()), int(pki.CAValidity.Hours()), pki.DefaultValidityHours),
			},
			"early_renewal_hours": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("An apply renews a certificate that ends within this many hours; it must be shorter than "+
					"`validity_period_hours`. Defaults to `%d` (7 days). Apply at least this often (a scheduled `terraform apply`, or a check "+
					"on `tls.not_after`) so that no certificate ends.", pki.DefaultRenewBeforeHours),
			},
			"ca_cert_pem": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "`aws` only: the certificate (PEM) of a certificate authority of your own, which then issues the nodes' " +
					"certificates instead of one the provider makes (give `ca_key_ssm_parameter` with it). It must be a CA certificate " +
					"(`CA:TRUE`, `keyCertSign`) that outlives `validity_period_hours` from now. Set at create: changing it on a running " +
					"cluster is refused at plan.",
			},
			"ca_key_ssm_parameter": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "`aws` only, with `ca_cert_pem`: the name of the SSM SecureString (in the cluster's region) holding that " +
					"authority's private key (PEM). The provider reads it when it issues certificates; the key never enters Terraform's state. " +
					"It must not be under the cluster's SSM path (`/pgnvme/<name>`), which the nodes' role reads. Destroy leaves it.",
			},
			"acm_pca_arn": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: fmt.Sprintf("`aws` only: the ARN of an ACM Private CA that issues the nodes' certificates instead of an authority "+
					"the provider makes; its key never leaves ACM. The provider makes each node's key and a certificate request with the node's "+
					"names, and the CA issues from it with its end-entity template (server and client authentication), valid for "+
					"`validity_period_hours`; the CA's certificate and chain become `ca_certificate`. It must be `ACTIVE` (checked at plan), and a CA "+
					"in short-lived certificate mode allows `validity_period_hours` of at most %d. The provider's credentials need "+
					"`acm-pca:DescribeCertificateAuthority`, `GetCertificateAuthorityCertificate`, `IssueCertificate` and `GetCertificate` on it "+
					"(the CA may be in another region; the ARN says which). Each node costs two issued certificates per renewal (ACM's price per "+
					"certificate applies). With it the provider logs in to PostgreSQL as the superuser by password, over TLS verified against the CA, "+
					"instead of by a client certificate of its own. Set at create: changing it on a running cluster is refused at plan.",
					int(awsspec.PrivateCAShortLived.Hours())),
			},
			"ca_certificate": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "The cluster's certificate authority (PEM): what a client verifies the nodes with (`sslrootcert`).",
			},
			"ca_file": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "The authority's certificate as a file on the machine that runs Terraform, for a client's `sslrootcert` " +
					"(on `local`: `<data_dir>/.pgnvme-tls/ca.crt`, readable by every user; null on `aws`, where clients are elsewhere: save " +
					"`ca_certificate` where they read it).",
			},
			"not_after": schema.MapAttribute{
				ElementType: types.StringType,
				Computed:    true,
				MarkdownDescription: "When each certificate ends (RFC 3339), by node name, and on `local` `client` for the superuser's client certificate. " +
					"Use it in a `check` block.",
			},
		},
	}
}

// tlsSpecInput is the tls block as cluster.TLSInput: nil when the block is absent; ok is false while a
// value is unknown.
func tlsSpecInput(ctx context.Context, v types.Object, diags *diag.Diagnostics) (*cluster.TLSInput, bool) {
	if v.IsNull() {
		return nil, true
	}
	if inputUnknown(v, clusterTLSOutputs) {
		return nil, false
	}
	var t tlsModel
	diags.Append(v.As(ctx, &t, basetypes.ObjectAsOptions{UnhandledUnknownAsEmpty: true})...)
	in := &cluster.TLSInput{}
	expand(ctx, t, in, diags)
	return in, true
}

// tlsObject is the tls block as given (in) with the status st (nil: its outputs unknown, or null when
// unread, as after an import before its read); null without the block.
func tlsObject(ctx context.Context, in *cluster.TLSInput, st *cluster.TLSStatus, unread bool, diags *diag.Diagnostics) types.Object {
	if in == nil {
		return types.ObjectNull(clusterTLSAttrTypes)
	}
	ca, caFile, notAfter := types.StringUnknown(), types.StringUnknown(), types.MapUnknown(types.StringType)
	if unread {
		ca, caFile, notAfter = types.StringNull(), types.StringNull(), types.MapNull(types.StringType)
	}
	if st != nil {
		if st.CACertificate != "" {
			ca = types.StringValue(st.CACertificate)
		}
		caFile = types.StringNull()
		if st.CAFile != "" {
			caFile = types.StringValue(st.CAFile)
		}
		known := true
		for _, v := range st.NotAfter {
			known = known && v != ""
		}
		if known {
			var d diag.Diagnostics
			notAfter, d = types.MapValueFrom(ctx, types.StringType, st.NotAfter)
			diags.Append(d...)
		}
	}
	attrs := flatten(ctx, in, clusterTLSAttrTypes, map[string]string{"ca_key_ssm_parameter": "CAKeyParameter"}, diags)
	attrs["ca_certificate"], attrs["ca_file"], attrs["not_after"] = ca, caFile, notAfter
	v, d := types.ObjectValue(clusterTLSAttrTypes, attrs)
	diags.Append(d...)
	return v
}

// tlsInputOf is the tls block an imported cluster's policy gives: only what differs from the defaults.
func tlsInputOf(t *cluster.TLS) *cluster.TLSInput {
	if t == nil {
		return nil
	}
	in := &cluster.TLSInput{}
	def := pki.DefaultPolicy()
	if t.Policy.Validity != def.Validity {
		h := int(t.Policy.Validity / time.Hour)
		in.ValidityPeriodHours = &h
	}
	if t.Policy.RenewBefore != def.RenewBefore {
		h := int(t.Policy.RenewBefore / time.Hour)
		in.EarlyRenewalHours = &h
	}
	if t.OwnCA() {
		in.CACertPEM, in.CAKeyParameter = &t.CACertPEM, &t.CAKeyParameter
	}
	if t.PrivateCA() {
		in.ACMPCAArn = &t.ACMPCAArn
	}
	return in
}

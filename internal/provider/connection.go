package provider

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgclient"
)

// Defaults of the connection block, as libpq's.
const (
	defaultPGPort     = 5432
	defaultPGDatabase = "postgres"
	defaultPGUser     = "postgres"
	defaultSSLMode    = "prefer"
)

// connectionModel is the connection block of the data sources (no password attribute: Terraform stores a
// data source's arguments in state, so the password comes from PGPASSWORD or a passfile).
type connectionModel struct {
	Host     types.String `tfsdk:"host"`
	Port     types.Int64  `tfsdk:"port"`
	Database types.String `tfsdk:"database"`
	Username types.String `tfsdk:"username"`
	SSLMode  types.String `tfsdk:"sslmode"`
	tlsFiles
}

// tlsFiles are the connection block's TLS files (paths on the machine that runs Terraform).
type tlsFiles struct {
	SSLRootCert types.String `tfsdk:"sslrootcert"`
	SSLCert     types.String `tfsdk:"sslcert"`
	SSLKey      types.String `tfsdk:"sslkey"`
}

// resourceConnectionModel adds the write-only password of the resources.
type resourceConnectionModel struct {
	Host       types.String `tfsdk:"host"`
	Port       types.Int64  `tfsdk:"port"`
	Database   types.String `tfsdk:"database"`
	Username   types.String `tfsdk:"username"`
	SSLMode    types.String `tfsdk:"sslmode"`
	PasswordWO types.String `tfsdk:"password_wo"`
	tlsFiles
}

const (
	hostDescription = "Host name or IP address of the PostgreSQL server, e.g. `127.0.0.1`."
	portDescription = "TCP port. Defaults to `5432`."
	dbDescription   = "Database to connect to. Defaults to `postgres`."
	userDescription = "Role to connect as; it needs superuser (or `ALTER SYSTEM` privilege on the settings) " +
		"for changes, and `pg_monitor` for reading replication state. Defaults to `postgres`."
	sslDescription = "libpq `sslmode`: `disable`, `allow`, `prefer` (default), `require`, `verify-ca` or `verify-full` " +
		"(TLS, the server's certificate checked against `sslrootcert` and its name against `host`: what a client of a server on " +
		"another machine wants)."
	rootCertDescription = "Path of a PEM file of the certificate authorities the server's certificate is checked against (libpq's " +
		"`sslrootcert`), on the machine that runs Terraform. Unset: `PGSSLROOTCERT`, else libpq's default (`~/.postgresql/root.crt`)."
	certDescription = "Path of the client's certificate (PEM, libpq's `sslcert`), for a server that authenticates clients by " +
		"certificate; with `sslkey`. Unset: `PGSSLCERT`, else none."
	keyDescription = "Path of the client certificate's private key (PEM, libpq's `sslkey`; mode 0600). Unset: `PGSSLKEY`, else none."
)

// tlsDataSourceAttributes and tlsResourceAttributes are the TLS files' attributes of the connection blocks.
func tlsDataSourceAttributes(attrs map[string]dschema.Attribute) map[string]dschema.Attribute {
	for name, desc := range map[string]string{"sslrootcert": rootCertDescription, "sslcert": certDescription, "sslkey": keyDescription} {
		attrs[name] = dschema.StringAttribute{Optional: true, MarkdownDescription: desc, Validators: []validator.String{stringvalidator.LengthAtLeast(1)}}
	}
	return attrs
}

func tlsResourceAttributes(attrs map[string]rschema.Attribute) map[string]rschema.Attribute {
	for name, desc := range map[string]string{"sslrootcert": rootCertDescription, "sslcert": certDescription, "sslkey": keyDescription} {
		attrs[name] = rschema.StringAttribute{Optional: true, MarkdownDescription: desc, Validators: []validator.String{stringvalidator.LengthAtLeast(1)}}
	}
	return attrs
}

// The connection is a block, not a nested attribute: Terraform drops an unknown key of a nested attribute's
// object before the provider sees it (hashicorp/terraform#33570), so `server = { sslmod = "verify-full" }`
// connected with sslmode prefer; in a block a misspelt argument is an error at validate. A block cannot be
// Required, nor its attributes (terraform-plugin-framework#740): requiredBlock and requiredInRequiredBlock
// ask for them.

// connectionExample is the error's example of a connection block.
const connectionExample = "server {\n  host = \"10.0.1.10\"\n}"

func connectionDataSourceBlock() dschema.SingleNestedBlock {
	return dschema.SingleNestedBlock{
		MarkdownDescription: "How to reach the PostgreSQL server (required). The password is read from `PGPASSWORD` or a " +
			"passfile (`PGPASSFILE`, `~/.pgpass`): Terraform keeps a data source's arguments in state, so there is no " +
			"password argument here.",
		Validators: []validator.Object{requiredBlock(connectionExample)},
		Attributes: tlsDataSourceAttributes(map[string]dschema.Attribute{
			"host": dschema.StringAttribute{Optional: true, MarkdownDescription: hostDescription + " Required.",
				Validators: []validator.String{requiredInRequiredBlock(), stringvalidator.LengthAtLeast(1)}},
			"port":     dschema.Int64Attribute{Optional: true, MarkdownDescription: portDescription, Validators: []validator.Int64{int64validator.Between(1, 65535)}},
			"database": dschema.StringAttribute{Optional: true, MarkdownDescription: dbDescription, Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
			"username": dschema.StringAttribute{Optional: true, MarkdownDescription: userDescription, Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
			"sslmode":  dschema.StringAttribute{Optional: true, MarkdownDescription: sslDescription, Validators: []validator.String{stringvalidator.OneOf(pgclient.SSLModes...)}},
		}),
	}
}

func connectionResourceBlock() rschema.SingleNestedBlock {
	return rschema.SingleNestedBlock{
		MarkdownDescription: "How to reach the primary (required). Changing `host`, `port` or `database` means another server: the " +
			"settings are reset on the old one and applied to the new one.",
		Validators: []validator.Object{requiredBlock(connectionExample)},
		Attributes: tlsResourceAttributes(map[string]rschema.Attribute{
			"host": rschema.StringAttribute{
				Optional: true, MarkdownDescription: hostDescription + " Required.",
				Validators:    []validator.String{requiredInRequiredBlock(), stringvalidator.LengthAtLeast(1)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"port": rschema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(defaultPGPort), MarkdownDescription: portDescription,
				Validators:    []validator.Int64{int64validator.Between(1, 65535)},
				PlanModifiers: []planmodifier.Int64{int64planmodifier.RequiresReplace()},
			},
			"database": rschema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(defaultPGDatabase), MarkdownDescription: dbDescription,
				Validators:    []validator.String{stringvalidator.LengthAtLeast(1)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"username": rschema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(defaultPGUser), MarkdownDescription: userDescription,
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"sslmode": rschema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(defaultSSLMode), MarkdownDescription: sslDescription,
				Validators: []validator.String{stringvalidator.OneOf(pgclient.SSLModes...)},
			},
			"password_wo": rschema.StringAttribute{
				Optional:  true,
				Sensitive: true,
				WriteOnly: true,
				MarkdownDescription: "Password, write-only: used to apply and never stored in plan or state (Terraform " +
					"1.11+). Unset: `PGPASSWORD` or a passfile. Refresh (drift detection) and destroy do not receive " +
					"write-only values, so they use `PGPASSWORD` or a passfile too.",
			},
		}),
	}
}

// pgConfig turns a connection block into a pgclient.Config; password "" falls back to PGPASSWORD (and
// pgx's passfile handling).
func pgConfig(c connectionModel, password string) pgclient.Config {
	port := int(int64Or(c.Port, defaultPGPort))
	if password == "" {
		password = os.Getenv("PGPASSWORD")
	}
	return pgclient.Config{
		Host:     c.Host.ValueString(),
		Port:     port,
		Database: stringOr(c.Database, defaultPGDatabase),
		User:     stringOr(c.Username, defaultPGUser),
		SSLMode:  stringOr(c.SSLMode, defaultSSLMode),
		Password: password,

		SSLRootCert: c.SSLRootCert.ValueString(),
		SSLCert:     c.SSLCert.ValueString(),
		SSLKey:      c.SSLKey.ValueString(),
	}
}

func (c resourceConnectionModel) plain() connectionModel {
	return connectionModel{Host: c.Host, Port: c.Port, Database: c.Database, Username: c.Username, SSLMode: c.SSLMode, tlsFiles: c.tlsFiles}
}

// connect opens a connection, reporting failures on the connection attribute.
func connect(ctx context.Context, cfg pgclient.Config, diags *diag.Diagnostics) *pgclient.Conn {
	conn, err := pgclient.Connect(ctx, cfg)
	if err != nil {
		diags.AddAttributeError(path.Root("server"), "Cannot Connect To PostgreSQL",
			fmt.Sprintf("Connecting to %s:%d/%s as %s failed. Check the server is running and reachable, the "+
				"credentials (password_wo, PGPASSWORD or a passfile), sslmode and the TLS files.\n\n%s", cfg.Host, cfg.Port, cfg.Database, cfg.User, err))
		return nil
	}
	return conn
}

// connectionID is the import ID form host:port/database.
func connectionID(cfg pgclient.Config) string {
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

// resourceConnectionAttrTypes are the attribute types of the resources' connection block.
var resourceConnectionAttrTypes = map[string]attr.Type{
	"host": types.StringType, "port": types.Int64Type, "database": types.StringType,
	"username": types.StringType, "sslmode": types.StringType, "password_wo": types.StringType,
	"sslrootcert": types.StringType, "sslcert": types.StringType, "sslkey": types.StringType,
}

// writeOnlyPassword reads password_wo from the configuration's connection block ("" when unset).
func writeOnlyPassword(ctx context.Context, cfgConn types.Object, diags *diag.Diagnostics) string {
	if cfgConn.IsNull() || cfgConn.IsUnknown() {
		return ""
	}
	var c resourceConnectionModel
	diags.Append(cfgConn.As(ctx, &c, basetypes.ObjectAsOptions{})...)
	return c.PasswordWO.ValueString()
}

// parseConnectionID reads host:port/database (IPv6 hosts in brackets).
func parseConnectionID(id string) (string, int, string, error) {
	hostPort, db, ok := strings.Cut(id, "/")
	if !ok || db == "" {
		return "", 0, "", fmt.Errorf("import ID %q must be host:port/database, e.g. 127.0.0.1:5432/postgres", id)
	}
	host, portText, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", 0, "", fmt.Errorf("import ID %q must be host:port/database, e.g. 127.0.0.1:5432/postgres: %w", id, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, "", fmt.Errorf("import ID %q has port %q; use 1 to 65535", id, portText)
	}
	return host, port, db, nil
}

package provider_test

import (
	"testing"
)

// A misspelt or unknown argument in the connection block (server) of pgnvme_pgbench,
// pgnvme_replication_status and pgnvme_synchronous_replication is an error at validate that names it. It is a
// block: Terraform drops an unknown key of a nested attribute's object before the provider sees it
// (hashicorp/terraform#33570), so `server = { host = "db", sslmod = "verify-full" }` connected with sslmode
// prefer, and a misspelt password_wo went nowhere. The block and its host are still required; the
// nested-attribute syntax of before is refused with a pointer to the block.
func TestConnection_unknownArgumentInBlock(t *testing.T) {
	status := func(body string) string {
		return "data \"pgnvme_replication_status\" \"x\" {\n" + body + "\n}\n"
	}
	bench := func(body string) string {
		return "data \"pgnvme_pgbench\" \"x\" {\n  builtin = \"select-only\"\n" + body + "\n}\n"
	}
	sync := func(body string) string {
		return "resource \"pgnvme_synchronous_replication\" \"x\" {\n  standby_names = [\"s1\", \"s2\"]\n" + body + "\n}\n"
	}
	notExpected := func(name string) string {
		return `(?s)Unsupported argument.*An argument named "` + name + `" is not expected here`
	}
	runBadInputs(t, []badInput{
		{"replication_status", status("  server {\n    host   = \"db.internal\"\n    sslmod = \"verify-full\"\n  }"), notExpected("sslmod")},
		{"pgbench", bench("  server {\n    host     = \"db.internal\"\n    databse = \"orders\"\n  }"), notExpected("databse")},
		{"synchronous_replication", sync("  server {\n    host       = \"db.internal\"\n    pasword_wo = \"secret\"\n  }"), notExpected("pasword_wo")},
		{"server as an attribute", status("  server = {\n    host = \"db.internal\"\n  }"),
			`(?s)Unsupported argument.*An argument named "server" is not expected here.*block of type "server"`},
		{"no server", status(""), `(?s)Missing Required Block.*The block "server" is required`},
		{"no server on the resource", sync(""), `(?s)Missing Required Block.*The block "server" is required`},
		{"server without host", bench("  server {\n    port = 5432\n  }"), `(?s)Missing Required Argument.*"host" is required in the server block, but no definition was\s+found. Set it.`},
	})
}

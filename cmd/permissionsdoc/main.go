// Command permissionsdoc writes the AWS permissions guide's template (awsclient.PermissionsGuide) to
// standard output: `make generate` writes it to templates/guides/aws-permissions.md.tmpl.
package main

import (
	"fmt"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
)

func main() {
	fmt.Print(awsclient.PermissionsGuide())
}

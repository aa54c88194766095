// Package acctest is test support: it starts the real outside parts the acceptance tests use (moto,
// PostgreSQL) on loopback, and wires the provider into terraform-plugin-testing.
package acctest

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/provider"
)

// ProviderName is the provider's local name in test configurations.
const ProviderName = "pgnvme"

// ProtoV6ProviderFactories serve the provider in-process to the Terraform CLI the tests run.
func ProtoV6ProviderFactories() map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		ProviderName: providerserver.NewProtocol6WithError(provider.New("test")()),
	}
}

// Setup prepares the process for acceptance tests and is called from TestMain. Every test here runs against
// real parts, so TF_ACC is switched on rather than letting terraform-plugin-testing skip silently, and the
// Terraform CLI is taken from TF_ACC_TERRAFORM_PATH or PATH (never downloaded). A missing CLI is an error.
func Setup() error {
	if err := os.Setenv("TF_ACC", "1"); err != nil {
		return err
	}
	if os.Getenv("TF_ACC_TERRAFORM_VERSION") != "" {
		return fmt.Errorf("TF_ACC_TERRAFORM_VERSION is set: it makes terraform-plugin-testing download Terraform, which these machines cannot; unset it and put terraform on PATH or in TF_ACC_TERRAFORM_PATH")
	}
	if os.Getenv("TF_ACC_TERRAFORM_PATH") == "" {
		path, err := exec.LookPath("terraform")
		if err != nil {
			return fmt.Errorf("the Terraform CLI is needed by the acceptance tests: put terraform on PATH or set TF_ACC_TERRAFORM_PATH: %w", err)
		}
		if err := os.Setenv("TF_ACC_TERRAFORM_PATH", path); err != nil {
			return err
		}
	}
	// Test configurations only use this provider, served in-process: no registry, no CLI config needed.
	return nil
}

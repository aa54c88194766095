package tfwork

import "fmt"

// SimProvider is the terraform and provider blocks of a configuration run against the node simulator's
// moto at endpoint (every AWS API the provider calls), in region.
func SimProvider(region, endpoint string) string {
	return fmt.Sprintf(`terraform {
  required_providers {
    pgnvme = { source = "pgnvme/pgnvme" }
  }
}

provider "pgnvme" {
  region                      = %[1]q
  skip_credentials_validation = true
  endpoints {
    ec2    = %[2]q
    ssm    = %[2]q
    iam    = %[2]q
    sts    = %[2]q
    s3     = %[2]q
    elbv2  = %[2]q
    acmpca = %[2]q
  }
}
`, region, endpoint)
}

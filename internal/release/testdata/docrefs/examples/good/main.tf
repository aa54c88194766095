terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source  = "registry.terraform.io/pgnvme/pgnvme"
      version = "~> 1.3" # met by the version the checkout builds
    }
  }
}

module "m" {
  source  = "pgnvme/x/pgnvme"
  version = ">= 1.1" # met by the tag v1.2.0
  tags    = { version = "9.9" }
}

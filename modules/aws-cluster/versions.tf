terraform {
  required_version = ">= 1.8"

  required_providers {
    pgnvme = {
      source  = "pgnvme/pgnvme"
      version = ">= 0.1.0"
    }
  }
}

terraform {
  required_providers {
    pgnvme = {
      source  = "pgnvme/pgnvme"
      version = "2.0.0" # bad
    }
  }
}

terraform {
  required_providers {
    pgnvme = { source = "pgnvme/pgnvme", version = "~> 2.0" } # bad
  }
}

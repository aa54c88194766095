terraform {
  required_providers {
    pgnvme = {
      source  = "pgnvme/pgnvme"
      version = "~> 0.1"
    }
  }
}

# Planning, tuning and the embedded catalog need no credentials.
provider "pgnvme" {
  region = "us-east-1"
}

# Against moto or LocalStack, as with the hashicorp/aws provider:
provider "pgnvme" {
  alias                       = "local"
  region                      = "us-east-1"
  s3_use_path_style           = true
  skip_credentials_validation = true

  endpoints {
    ec2 = "http://127.0.0.1:5000"
    s3  = "http://127.0.0.1:5000"
    iam = "http://127.0.0.1:5000"
    sts = "http://127.0.0.1:5000"
  }

  default_tags {
    tags = {
      team = "databases"
    }
  }
}

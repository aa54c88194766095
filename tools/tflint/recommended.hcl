# tflint on examples/, modules/*/examples/ and modules/*/tests/setup (`make release-check`): the bundled
# Terraform ruleset only (no plugin to download), its recommended rules. For the documentation snippets under
# examples/ scripts/release-check.sh also turns off terraform_required_version, terraform_required_providers
# and terraform_unused_declarations: a snippet has no terraform block and may show an alternative it does
# not use.
plugin "terraform" {
  enabled = true
  preset  = "recommended"
}

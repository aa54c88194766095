# tflint on each module under modules/ (`make release-check`): the bundled Terraform ruleset only (no plugin
# to download), every rule.
plugin "terraform" {
  enabled = true
  preset  = "all"
}

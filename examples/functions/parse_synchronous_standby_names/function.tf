output "parsed" {
  # { method = "any", number = 1, names = ["s1", "s2"] }
  value = provider::pgnvme::parse_synchronous_standby_names("ANY 1 (s1, s2)")
}

output "legacy" {
  # The pre-9.6 form "2 (a, b, c)" means FIRST 2.
  value = provider::pgnvme::parse_synchronous_standby_names("2 (a, b, c)").method
}

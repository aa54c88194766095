output "quorum" {
  # "ANY 1 (s1, s2)"
  value = provider::pgnvme::synchronous_standby_names("any", 1, ["s1", "s2"])
}

output "quoted" {
  # "FIRST 1 (\"Standby A\", s2)": names that are not plain identifiers are quoted
  value = provider::pgnvme::synchronous_standby_names("first", 1, ["Standby A", "s2"])
}

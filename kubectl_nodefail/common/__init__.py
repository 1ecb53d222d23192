"""The ground floor: what every wing may use and that uses nothing of the package: the errors
and their exit codes, the attestation's words, the check of a path to write, label selectors."""

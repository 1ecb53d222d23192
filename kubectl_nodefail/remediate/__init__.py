"""Remediation: the plan (pure: a diagnosis and the user's attestations in, gated steps out:
plan, nodesteps, narrow, steps, planfile, zoneplan) and its execution, the only code that
changes the cluster (actions and its parts: lock, recheck, mutations, release, trail, stop)."""

"""The turn gate: one turn at a time per session, leases, fairness and notes."""

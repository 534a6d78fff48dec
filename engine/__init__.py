"""M3-Bench scoring engine: load -> serialize -> embed -> align -> metrics -> report."""

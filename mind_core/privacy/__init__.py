"""Privacy: forgetting what was harvested (with tombstones that keep it out of later harvests) and the audit log of it; redacting secrets and personal data as they are harvested."""

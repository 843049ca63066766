"""Action organ, pure half: registry, allowlist, guard, consent tiers, confirmation, proposals.

Nothing in this package imports Home Assistant. The model proposes; the registry disposes: every
proposal is parsed strictly, resolved against a registry built from the exposed entities, and
checked against a per-domain allowlist before anything may reach an effector.
"""

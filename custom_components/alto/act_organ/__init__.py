"""The action organ's Home Assistant adapter.

`organ` turns a captured span into a proposal, the guard's verdict and a consent tier;
`effector` is the one place that calls a service; `exposure` keeps the registry of exposed
entities; `local_intents` raises the repair issue when Assist's local handling can bypass
confirm-first. The pure organ is `act/`.
"""

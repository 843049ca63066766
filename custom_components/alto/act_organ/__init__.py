"""The action organ's Home Assistant adapter: spans to proposals, the guard's verdicts to the one effector."""

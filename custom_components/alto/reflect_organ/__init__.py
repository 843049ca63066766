"""The background passes' Home Assistant adapter: scheduling, their state and the inbox."""

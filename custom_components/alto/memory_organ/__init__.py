"""The memory organ's Home Assistant adapter: the store, the journal and their writers, reads and repair issues."""

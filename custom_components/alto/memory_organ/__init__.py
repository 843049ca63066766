"""The memory organ's Home Assistant adapter.

`organ.MemoryOrgan` is the façade the rest of the integration uses; its parts (writer, reads,
embedding, interpretation, reports, freshness, damage, batching) live beside it. The pure organ
is `memory/`.
"""

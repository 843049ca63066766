"""The background passes' Home Assistant adapter.

`organ.ReflectOrgan` schedules N+1, N+25 and N+100, keeps their state and the inbox. The pure
organ is `reflect/`.
"""

"""The Surfacer's Home Assistant adapter.

`organ.SurfaceOrgan` delivers one verified thought per turn; `recorded` erases what the
recorder kept of the last thought sensor. The pure organ is `surface/`.
"""

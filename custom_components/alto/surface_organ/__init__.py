"""The Surfacer's Home Assistant adapter: one verified thought per turn, and erasing what the recorder kept of it."""

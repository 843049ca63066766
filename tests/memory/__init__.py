"""Tests of the memory package (no Home Assistant instance needed)."""

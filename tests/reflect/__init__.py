"""Tests of the reflect package (no Home Assistant instance needed)."""

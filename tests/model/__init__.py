"""Tests of the shared model infrastructure (no Home Assistant instance needed)."""

"""Tests for the Alto integration."""

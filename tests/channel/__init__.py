"""Tests of the marker channel and input admission."""

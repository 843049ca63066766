"""Tests for the Surfacer: cues, the extractive verifier, and its labelled set."""

"""The Surfacer: cues, fragment, render, and the extractive verifier that decides what surfaces."""

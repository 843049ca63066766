"""The Alto panel in a real browser (Debian's Chromium driven by Playwright) against a real HA."""

"""Shared fixtures. Importing the package first makes HA's loader find this project's alto."""

import custom_components.alto  # noqa: F401

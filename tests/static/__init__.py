"""Static checks over the integration's source."""

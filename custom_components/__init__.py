"""Home Assistant custom integrations: Alto lives in `alto`."""

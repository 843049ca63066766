"""The "Alto" sidebar panel: a plain web component served from this integration's folder.

`frontend/alto-panel.js` is committed as it runs (no build step, nothing downloaded at run time)
and talks to `websocket` over the frontend's own authenticated websocket. Every user sees the
panel; what it shows is decided per user by the websocket commands.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from homeassistant.components import panel_custom
from homeassistant.components.http import StaticPathConfig
from homeassistant.core import HomeAssistant

from ..const import DOMAIN
from .websocket import async_register_commands

FRONTEND_DIR = Path(__file__).parents[1] / "frontend"
PANEL_MODULE = "alto-panel.js"
PANEL_ELEMENT = "alto-panel"
STATIC_URL = f"/{DOMAIN}_static"
PANEL_URL_PATH = DOMAIN
PANEL_ICON = "mdi:head-lightbulb-outline"


def _module_version() -> str:
    """A digest of the panel module: its URL changes with its content, so browsers may cache it."""
    return hashlib.sha256((FRONTEND_DIR / PANEL_MODULE).read_bytes()).hexdigest()[:16]


async def async_setup_panel(hass: HomeAssistant) -> None:
    """Serve the panel's files, add it to the sidebar and register its websocket commands."""
    version = await hass.async_add_executor_job(_module_version)
    await hass.http.async_register_static_paths(
        [StaticPathConfig(STATIC_URL, str(FRONTEND_DIR), cache_headers=True)]
    )
    await panel_custom.async_register_panel(
        hass,
        frontend_url_path=PANEL_URL_PATH,
        webcomponent_name=PANEL_ELEMENT,
        sidebar_title="Alto",  # the product's name, the same in every language
        sidebar_icon=PANEL_ICON,
        module_url=f"{STATIC_URL}/{PANEL_MODULE}?v={version}",
        require_admin=False,
    )
    async_register_commands(hass)

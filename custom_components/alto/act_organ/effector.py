"""The effector: the one place in Alto that calls a Home Assistant service.

It consumes only a guard-validated call and runs it with the turn's context, so Home
Assistant's own user permissions apply.
"""

from __future__ import annotations

import probatio
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError, Unauthorized

from ..act.model import ValidatedCall


async def async_execute(hass: HomeAssistant, call: ValidatedCall, context: Context) -> str | None:
    """Run the call; None on success, else why it failed (`unauthorized` or the error)."""
    try:
        await hass.services.async_call(
            call.domain,
            call.service,
            {**call.data, "entity_id": call.entity_id},
            blocking=True,
            context=context,
        )
    except Unauthorized:
        return "unauthorized"
    except (HomeAssistantError, probatio.Invalid, ValueError) as err:
        return f"service_error: {err}"[:200]
    return None

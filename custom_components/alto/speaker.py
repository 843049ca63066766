"""Who is speaking in a turn, as the prompt tells the model: their name and their family at home.

The speaker is the Home Assistant user the turn comes from (a name said in the text proves
nothing); their name is their person's (Settings → People), else their user's. Their family is
what the options' Family step told (`memory.kin.relations`), named by each person's name.
"""

from __future__ import annotations

from collections.abc import Mapping

from homeassistant.components.person import ATTR_USER_ID
from homeassistant.components.person import DOMAIN as PERSON_DOMAIN
from homeassistant.core import HomeAssistant

from .memory.kin import Kin, relations
from .prompt import speaker_line


async def async_speaker_line(
    hass: HomeAssistant, family: Mapping[str, Kin], user_id: str | None
) -> str:
    """The prompt's line on who is speaking; empty when no user is (a voice satellite)."""
    if user_id is None:
        return ""
    people = hass.states.async_all(PERSON_DOMAIN)
    person = next((p for p in people if p.attributes.get(ATTR_USER_ID) == user_id), None)
    if person is None:
        user = await hass.auth.async_get_user(user_id)
        return speaker_line(user.name if user else None)
    names = {p.entity_id: p.name for p in people}
    kin = [(names[o], what) for o, what in relations(family, person.entity_id) if o in names]
    return speaker_line(person.name, kin)

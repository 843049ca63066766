"""The LLM tools platform: Alto's memory for every agent that uses the Assist API.

HA's `llm` integration asks each integration's `llm` platform for tools when it builds the Assist
API for a conversation (and `mcp_server` serves that API over MCP). The tools and their rules are
`memory_organ.tools`; this is the wiring.
"""

from __future__ import annotations

from homeassistant.components.llm import LLMTools
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers.llm import LLM_API_ASSIST, LLMContext

from .memory_organ.tools import PROMPT, TOOLS, async_memory


@callback
def async_get_tools(hass: HomeAssistant, llm_context: LLMContext, api_id: str) -> LLMTools | None:
    """The memory tools and their prompt for the Assist API, while Alto's memory is loaded."""
    if api_id != LLM_API_ASSIST or async_memory(hass) is None:
        return None
    return LLMTools(tools=list(TOOLS), prompt=PROMPT)

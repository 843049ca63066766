"""Which reply channel each chat model answers in, by how its replies went.

Per model name, kept across restarts (a `Store`, saved with a delay, off the event loop):

- JSON answers kept or ignored: a model that wrote text outside the answer object ignored
  Ollama's `format` (`JsonChannel.plain`), and its actions never reach the action organ;
- replies in marks, and those that had no marks at all and were spoken through the plain-reply
  fallback.

The channel a turn uses (`channel`): the one the user chose in the options, when they chose one.
With "auto", the JSON answer, unless the model ignored it on most of at least MIN_REPLIES replies:
then marks, which cost the model nothing to be asked for and which a model that ignores `format`
may still write. The verdict stays, since the JSON answer is no longer asked of that model.

A repair issue suggests the JSON answer when a model the user put on marks mostly writes none.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any, Final

from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import issue_registry as ir
from homeassistant.helpers.storage import Store

from .channel.json_channel import JsonChannel
from .channel.markers import MarkerChannel
from .const import DOMAIN, LOGGER
from .options import ReplyChannel
from .settings import AltoSettings

MIN_REPLIES = 10  # replies seen before a verdict on the model
MOSTLY = 0.5  # share of replies, above which the model "mostly" does it
STORAGE_VERSION: Final = 1
SAVE_DELAY_S: Final = 30.0  # counts change every turn: one write for a burst of turns


class ChannelReason(StrEnum):
    """Why a model answers in the channel it does (diagnostics)."""

    CHOSEN = "chosen"  # the reply channel option names it
    DEFAULT = "default"  # "auto", and the model keeps to the JSON answer (or too few replies)
    IGNORES_JSON = "ignores_json"  # "auto", and the model ignored the JSON answer on most


@dataclass(slots=True)
class ModelReplies:
    """Counts of one model's replies, all entries' restarts together."""

    json: int = 0  # replies asked for the JSON answer
    ignored: int = 0  # ... of which it wrote text outside the answer object
    marks: int = 0  # replies asked for marks
    fallback: int = 0  # ... of which it wrote none, spoken as plain text

    @property
    def ignores_json(self) -> bool:
        """Enough JSON replies, most of them with text outside the answer."""
        return self.json >= MIN_REPLIES and self.ignored > self.json * MOSTLY

    @property
    def mostly_fallback(self) -> bool:
        """Enough replies in marks, most of them without marks."""
        return self.marks >= MIN_REPLIES and self.fallback > self.marks * MOSTLY


def _store(hass: HomeAssistant, entry_id: str) -> Store[dict[str, Any]]:
    return Store(hass, STORAGE_VERSION, f"{DOMAIN}.reply_stats.{entry_id}", private=True)


class ReplyStats:
    """One entry's counts per model name, and the channel they choose."""

    def __init__(self, store: Store[dict[str, Any]] | None = None) -> None:
        """Empty counts, saved to `store` when given (else kept in memory only)."""
        self._store = store
        self.models: dict[str, ModelReplies] = {}

    @classmethod
    async def async_load(cls, hass: HomeAssistant, entry_id: str) -> ReplyStats:
        """The entry's counts as last saved; a file that does not read starts them afresh."""
        stats = cls(_store(hass, entry_id))
        try:
            data = await stats._store.async_load() if stats._store else None
        except Exception as err:  # noqa: BLE001 - counts are a measurement, never a failure
            LOGGER.warning("Alto's reply counts do not read, starting afresh: %s", err)
            data = None
        for name, counts in ((data or {}).get("models") or {}).items():
            try:
                stats.models[str(name)] = ModelReplies(**{k: int(v) for k, v in counts.items()})
            except (TypeError, ValueError, AttributeError):
                LOGGER.warning("Alto's reply counts for %s do not read, starting afresh", name)
        return stats

    @staticmethod
    async def async_remove(hass: HomeAssistant, entry_id: str) -> None:
        """Delete the entry's stored counts (the entry is removed)."""
        await _store(hass, entry_id).async_remove()

    async def async_save(self) -> None:
        """Write the counts now (the entry unloads: a reload reads them back at once)."""
        if self._store is not None:
            await self._store.async_save(self._data())

    def of(self, model: str) -> ModelReplies:
        """The counts of `model` (zeros for a model not seen)."""
        return self.models.get(model) or ModelReplies()

    def verdict(self, settings: AltoSettings, model: str) -> tuple[ReplyChannel, ChannelReason]:
        """The channel `model` answers in with these options, and why (the module's rule)."""
        option = settings.reply_channel_option
        if option in ReplyChannel:
            return ReplyChannel(option), ChannelReason.CHOSEN
        if self.of(model).ignores_json:
            return ReplyChannel.MARKERS, ChannelReason.IGNORES_JSON
        return ReplyChannel.JSON, ChannelReason.DEFAULT

    def channel(self, settings: AltoSettings) -> tuple[ReplyChannel, ChannelReason]:
        """The channel the conversational model answers in, and why."""
        return self.verdict(settings, settings.model)

    def diagnostics(self, settings: AltoSettings) -> dict[str, Any]:
        """Per model (the conversational one always): its counts, channel and why."""
        result = {}
        for name in sorted({settings.model, *self.models}):
            channel, why = self.verdict(settings, name)
            result[name] = {**asdict(self.of(name)), "channel": channel.value, "why": why.value}
        return result

    def _data(self) -> dict[str, Any]:
        return {"models": {name: asdict(counts) for name, counts in self.models.items()}}

    @callback
    def count(self, model: str, channel: MarkerChannel | JsonChannel) -> ModelReplies:
        """Count one reply of `model` in `channel`; save, with a delay; return its counts."""
        counts = self.models.setdefault(model, ModelReplies())
        if isinstance(channel, JsonChannel):
            counts.json += 1
            counts.ignored += channel.plain
        else:
            counts.marks += 1
            counts.fallback += channel.used_fallback
        if self._store is not None:
            self._store.async_delay_save(self._data, SAVE_DELAY_S)
        return counts


def issue_id(entry_id: str) -> str:
    """The repair issue of one entry."""
    return f"model_ignores_marks_{entry_id}"


@callback
def async_record(
    hass: HomeAssistant,
    entry_id: str,
    stats: ReplyStats,
    *,
    settings: AltoSettings,
    channel: MarkerChannel | JsonChannel,
) -> None:
    """Count one turn's reply (its first call's channel) for the conversational model.

    Logs when the model's channel changes; raises the repair issue when a model the user put on
    marks mostly writes none.
    """
    before = stats.channel(settings)[0]
    counts = stats.count(settings.model, channel)
    after, why = stats.channel(settings)
    if after is not before:
        LOGGER.info(
            "%s ignored the JSON answer on %d of %d replies; it answers in marks from now on",
            settings.model,
            counts.ignored,
            counts.json,
        )
    if counts.mostly_fallback and why is ChannelReason.CHOSEN:
        ir.async_create_issue(
            hass,
            DOMAIN,
            issue_id(entry_id),
            is_fixable=False,
            severity=ir.IssueSeverity.WARNING,
            translation_key="model_ignores_marks",
            translation_placeholders={
                "model": settings.model,
                "fallback": str(counts.fallback),
                "replies": str(counts.marks),
            },
        )

"""The Surfacer core: from a heard utterance to at most one verified first-person thought.

`Surfacer.surface_from_heard(heard)` is the one entry point per turn:

1. cues: the names the viewer's memory knows that the utterance literally contains (at most three,
   longest span first; `cues.CueIndex`);
2. fragment: the exact memory phrases licensed for each cued entity, plus, when the recall option
   is on, what the view's semantic `recall` adds; an empty fragment is outcome "nothing" and the
   model is never called;
3. render: one call to the small model with an extractive instruction, the fragment, the current
   utterance (what the thought is about, not a source) and the episode's spoken turns as context
   only, newest kept under a token ceiling;
4. verify: `verify.verify_render` against the same fragment the model saw, plus the episode-echo
   check below; on failure one regeneration that names the failing spans, then drop.

Episode echo (the decision): a render whose content words, entity names aside, all occur in one
earlier turn of the episode context (the trimmed turns the model saw) is dropped even when the
memory licenses every word. Such a thought says nothing the conversation has not just said;
handed to the conversational model as remembered, it would pass off what it has just heard as
memory. (A render taking words from the episode that the fragment does not hold already fails
the verifier as untraceable.) A turn older than the context is not read: the model never saw
it, so a render matching it can only have come from the memory. The current utterance is not an
episode turn for this check: a memory that answers it in its own words is recall, and words
taken from the utterance alone are the verifier's "echo" mode.

Off the event loop: segmenting text is pure Python (about 20 µs a character), so cue matching and
verification run through `run_blocking` (Home Assistant passes `hass.async_add_executor_job`; the
default is `asyncio.to_thread`), and only text the turn needs is segmented: the utterance, the
render, the fragment and the trimmed context, never the whole conversation. The names' cue keys
are kept per viewer (`cues.CueIndex`) and rebuilt, reusing every key already made, only when the
names the memory knows change.

Honesty fails toward dropping, and the organ never raises: a memory-view or render error (or a
render timeout) is outcome "nothing" with one log line; a verifier that cannot run drops. A failing
semantic `recall` only loses its own additions; the cued fragment still renders. Cancellation is
not an error and propagates.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, Protocol

from .cues import CueIndex
from .memory_view import MemoryView, Phrase
from .verify import is_content, tokens, verify_render

_LOGGER = logging.getLogger(__name__)

Outcome = Literal["surfaced", "dropped", "nothing"]
type Render = Callable[[list[dict[str, str]]], Awaitable[str]]
type Fragment = dict[str, list[Phrase]]

SYSTEM_INSTRUCTION = """\
You are the part of a mind that remembers. You are given memory phrases, grouped under the person \
or thing each is about, and what is being said now. Write ONE short first-person thought, a single \
sentence, recalling what the memory phrases hold about what is being said.

Rules:
- Write in the language of the memory phrases.
- Frame it as remembering: "I remember …", "I recall …", "Maria told me …".
- Use only the words of the memory phrases, joined by small connecting words. Add no opinion, \
feeling, judgement or detail that the phrases do not hold.
- Copy exact items — dates, times, names, numbers, quoted statements — exactly as written.
- Keep every fact with the person or thing it is listed under.
- What is being said now, and the conversation so far, only tell you what the thought is about. \
They are not memories: never quote them and never take words from them.
- Reply with the thought alone: no quotation marks, no preamble."""

REGENERATE_INSTRUCTION = (
    "Write the thought again, using only the words of the memory phrases and copying exact items "
    "exactly. If you cannot, reply with nothing."
)


class RunBlocking(Protocol):
    """Runs a blocking call away from the event loop (`hass.async_add_executor_job` in HA)."""

    def __call__[T](self, function: Callable[[], T], /) -> Awaitable[T]:
        """Run `function` away from the event loop; its result."""


async def run_in_thread[T](function: Callable[[], T]) -> T:
    """The default `RunBlocking` outside Home Assistant: a worker thread."""
    return await asyncio.to_thread(function)


@dataclass(frozen=True, slots=True)
class SurfacerOptions:
    """How the Surfacer reads and renders; the defaults are the shipped ones."""

    recall: bool = False  # add the view's semantic `recall` results to the cued fragment
    recall_limit: int = 4
    max_cues: int = 3
    max_phrases_per_entity: int = 8
    episode_token_ceiling: int = 1000  # the episode context rides along under this estimate
    chars_per_token: int = 4  # the estimate: tokens = ceil(characters / chars_per_token)
    render_timeout_s: float | None = 30.0


@dataclass(frozen=True, slots=True)
class SurfaceOutcome:
    """What one turn's surfacing produced.

    `source_ids`: for "surfaced", the memories the thought draws on (the fragment phrases sharing a
    content word with it, or the whole fragment when it shares none, as in "I remember Maria.");
    for "dropped", every memory in the fragment the model saw; for "nothing", none.
    `failure_modes`: the verifier's modes of every failed attempt, plus "episode_echo", "empty"
    (the model answered nothing), "memory_error", "recall_error", "render_error", "internal_error".
    `attempts`: render calls made.
    """

    verdict: Outcome
    thought: str | None = None
    source_ids: list[str] = field(default_factory=list)
    failure_modes: list[str] = field(default_factory=list)
    attempts: int = 0


class HeardLike(Protocol):
    """What the Surfacer reads of a heard utterance; `episode` may be absent (no context)."""

    @property
    def text(self) -> str:
        """What was said."""

    @property
    def actor(self) -> str | None:
        """The speaker's HA user id, None when unknown."""


@dataclass(frozen=True, slots=True)
class Heard:
    """A heard utterance.

    Its text, its speaker (HA user id, None when unknown) and the current episode's spoken
    turns, newest last.
    """

    text: str
    actor: str | None = None
    episode: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class _Problem:
    mode: str
    span: str


def estimate_tokens(text: str, chars_per_token: int = 4) -> int:
    """The token estimate the episode ceiling is measured in."""
    return -(-len(text) // max(1, chars_per_token))


def trim_episode(turns: Sequence[str], ceiling_tokens: int, chars_per_token: int = 4) -> list[str]:
    """The newest whole turns whose estimated tokens fit under the ceiling, oldest first.

    Trimming stops at the first turn (going back in time) that does not fit, so the context is
    always a contiguous, newest-ending stretch of the episode.
    """
    kept: list[str] = []
    left = ceiling_tokens
    for turn in reversed(turns):
        cost = estimate_tokens(turn, chars_per_token)
        if cost > left:
            break
        kept.append(turn)
        left -= cost
    return kept[::-1]


def render_messages(
    utterance: str, fragment: Mapping[str, Sequence[str]], episode: Sequence[str]
) -> list[dict[str, str]]:
    """The first render call's messages: the instruction, then the material in one user message."""
    parts: list[str] = []
    if episode:
        lines = "\n".join(f"- {turn}" for turn in episode)
        parts.append(f"The conversation so far (context only; never quote it):\n{lines}")
    parts.append(f"What is being said now (context only; never quote it):\n- {utterance}")
    memory = "\n".join(
        f"{name}:\n" + "\n".join(f'- "{phrase}"' for phrase in phrases)
        for name, phrases in fragment.items()
    )
    parts.append(f"Memory phrases (the only words the thought may use):\n{memory}")
    return [
        {"role": "system", "content": SYSTEM_INSTRUCTION},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


# Verifier modes whose words all trace but whose clause says something else than its phrase.
_MEANING_MODES = frozenset({"polarity", "swapped", "quantifier"})


def regenerate_message(problems: Iterable[_Problem]) -> str:
    """The one follow-up: names the failing spans by why they fail, and asks again."""
    problems = list(problems)
    untraced = _spans_of(p for p in problems if p.mode not in _MEANING_MODES | {"episode_echo"})
    changed = _spans_of(p for p in problems if p.mode in _MEANING_MODES)
    lines: list[str] = []
    if untraced:
        lines.append(
            f"These words of your thought do not trace to the memory phrases of the person or "
            f"thing they are about: {untraced}."
        )
    if changed:
        lines.append(
            f"These parts change what a memory phrase says (a negation, who did what, or how "
            f"often): {changed}."
        )
    if any(p.mode == "episode_echo" for p in problems):
        lines.append(
            "Your thought only repeats something already said in the conversation; it is not a "
            "memory."
        )
    lines.append(REGENERATE_INSTRUCTION)
    return " ".join(lines)


def _spans_of(problems: Iterable[_Problem]) -> str:
    """The distinct spans, quoted and comma-separated ("" when none)."""
    return ", ".join(f'"{span}"' for span in dict.fromkeys(p.span for p in problems if p.span))


class Surfacer:
    """Cue → fragment → render → verify, at most one thought per call; never raises."""

    def __init__(
        self,
        memory: MemoryView,
        render: Render,
        options: SurfacerOptions | None = None,
        *,
        run_blocking: RunBlocking = run_in_thread,
    ) -> None:
        """Read through `memory`, render with `render`, and match and verify in `run_blocking`.

        `render` is the small model's chat call.
        """
        self._memory = memory
        self._render = render
        self._options = options or SurfacerOptions()
        self._run_blocking = run_blocking
        # The last cue index built for each viewer (one per HA user, and None).
        self._cues: dict[str | None, CueIndex] = {}

    @property
    def options(self) -> SurfacerOptions:
        """The options in force."""
        return self._options

    async def surface_from_heard(self, heard: HeardLike) -> SurfaceOutcome:
        """Surface at most one verified thought about what was heard."""
        try:
            return await self._surface(heard)
        except Exception as err:  # noqa: BLE001 - the organ never raises into the turn
            _LOGGER.warning("Surfacer failed, nothing surfaces: %r", err)
            return SurfaceOutcome("nothing", failure_modes=["internal_error"])

    async def _surface(self, heard: HeardLike) -> SurfaceOutcome:
        text = heard.text if isinstance(heard.text, str) else ""
        viewer = heard.actor if isinstance(heard.actor, str) else None
        episode = [t for t in getattr(heard, "episode", None) or () if isinstance(t, str)]
        modes: list[str] = []
        try:
            fragment = await self._cued_fragment(text, viewer)
        except Exception as err:  # noqa: BLE001 - the organ never raises into the turn
            _LOGGER.warning("Surfacer: the memory view failed, nothing surfaces: %r", err)
            return SurfaceOutcome("nothing", failure_modes=["memory_error"])
        if self._options.recall:
            try:
                await self._add_recall(fragment, text, viewer)
            except Exception as err:  # noqa: BLE001 - the organ never raises into the turn
                _LOGGER.warning("Surfacer: semantic recall failed, using cues only: %r", err)
                modes.append("recall_error")
        if not fragment:
            return SurfaceOutcome("nothing", failure_modes=modes)

        licensed = {name: [p.text for p in phrases] for name, phrases in fragment.items()}
        all_ids = list(dict.fromkeys(p.source_id for ps in fragment.values() for p in ps))
        context = trim_episode(
            episode, self._options.episode_token_ceiling, self._options.chars_per_token
        )
        messages = render_messages(text, licensed, context)
        for attempt in (1, 2):
            try:
                thought = await self._call_render(messages)
            except Exception as err:  # noqa: BLE001 - the organ never raises into the turn
                _LOGGER.warning("Surfacer: the render failed, nothing surfaces: %r", err)
                return SurfaceOutcome(
                    "nothing", failure_modes=[*modes, "render_error"], attempts=attempt
                )
            if not thought:
                modes.append("empty")
                return SurfaceOutcome("dropped", None, all_ids, _distinct(modes), attempt)
            problems, sources = await self._run_blocking(
                partial(_check, fragment, licensed, thought, text, context)
            )
            if not problems:
                ids = sources or all_ids
                return SurfaceOutcome("surfaced", thought, ids, _distinct(modes), attempt)
            modes += [p.mode for p in problems]
            messages = [
                *messages,
                {"role": "assistant", "content": thought},
                {"role": "user", "content": regenerate_message(problems)},
            ]
        _LOGGER.debug("Surfacer dropped a render after regenerating: %s", _distinct(modes))
        return SurfaceOutcome("dropped", None, all_ids, _distinct(modes), 2)

    async def _cued_fragment(self, text: str, viewer: str | None) -> Fragment:
        names = await self._memory.known_names(viewer)
        current = self._cues.get(viewer)
        earlier = tuple(self._cues.values())
        index, cues = await self._run_blocking(
            partial(_match, text, names, self._options.max_cues, current, earlier)
        )
        self._cues[viewer] = index  # written here on the loop, so threads only ever read it
        fragment: Fragment = {}
        for name in cues:
            for phrase in await self._memory.phrases(name, viewer):
                self._add(fragment, name, phrase)
        return fragment

    async def _add_recall(self, fragment: Fragment, text: str, viewer: str | None) -> None:
        recall = getattr(self._memory, "recall", None)
        if recall is None:
            return
        for item in await recall(text, viewer, self._options.recall_limit):
            name, phrase = item
            if isinstance(name, str) and name:
                self._add(fragment, name, phrase)

    def _add(self, fragment: Fragment, name: str, phrase: Any) -> None:
        if not (
            isinstance(phrase, Phrase)
            and isinstance(phrase.text, str)
            and phrase.text.strip()
            and isinstance(phrase.source_id, str)
        ):
            return
        phrases = fragment.setdefault(name, [])
        if len(phrases) < self._options.max_phrases_per_entity and all(
            p.text != phrase.text for p in phrases
        ):
            phrases.append(phrase)

    async def _call_render(self, messages: list[dict[str, str]]) -> str:
        async with asyncio.timeout(self._options.render_timeout_s):
            thought = await self._render([dict(m) for m in messages])
        if not isinstance(thought, str):
            raise TypeError(f"render returned {type(thought).__name__}, not str")
        return thought.strip().strip('"“”').strip()


class NoopSurfacer:
    """Stands in when the model or the store is unavailable: nothing ever surfaces."""

    async def surface_from_heard(self, heard: HeardLike) -> SurfaceOutcome:
        """Nothing surfaces."""
        return SurfaceOutcome("nothing")


def build_surfacer(
    memory: MemoryView | None,
    render: Render | None,
    options: SurfacerOptions | None = None,
    *,
    run_blocking: RunBlocking = run_in_thread,
) -> Surfacer | NoopSurfacer:
    """A Surfacer, or the no-op when either the memory view or the render call is missing."""
    if memory is None or render is None:
        return NoopSurfacer()
    return Surfacer(memory, render, options, run_blocking=run_blocking)


def _match(
    text: str,
    names: Sequence[object],
    limit: int,
    current: CueIndex | None,
    earlier: Sequence[CueIndex],
) -> tuple[CueIndex, list[str]]:
    """The viewer's cue index for `names` and the names `text` cues.

    The viewer's `current` index stays while its names are unchanged; a new one takes every key
    the `earlier` indexes hold, so only a name the Surfacer has not seen yet is segmented.
    """
    if current is not None and current.names == tuple(names):  # the usual turn: one comparison
        return current, current.find(text, limit)
    given = tuple(n for n in names if isinstance(n, str) and n)
    if current is not None and current.names == given:
        index = current
    else:
        index = CueIndex.build(given, *earlier)
    return index, index.find(text, limit)


def _check(
    fragment: Fragment,
    licensed: Mapping[str, Sequence[str]],
    thought: str,
    utterance: str,
    context: Sequence[str],
) -> tuple[list[_Problem], list[str]]:
    """The render's problems, and the memories it draws on when it has none."""
    problems = _judge(licensed, thought, utterance, context)
    return problems, ([] if problems else _sources(fragment, thought))


def _judge(
    fragment: Mapping[str, Sequence[str]], thought: str, utterance: str, context: Sequence[str]
) -> list[_Problem]:
    """The verifier's failures plus an episode echo; a check that cannot run fails the render."""
    verdict = verify_render(fragment, thought, utterance=utterance)
    problems = [_Problem(f.mode, f.span) for f in verdict.failures]
    if not verdict.ok and not problems:  # a failing verdict always names why; be sure anyway
        problems.append(_Problem("untraceable", thought))
    try:
        if _episode_echo(fragment, thought, utterance, context):
            problems.append(_Problem("episode_echo", thought))
    except Exception as err:  # noqa: BLE001 - fail toward dropping
        _LOGGER.warning("Surfacer: the episode-echo check failed, dropping: %r", err)
        problems.append(_Problem("episode_echo", thought))
    return problems


def _content_keys(text: str, names: frozenset[str]) -> set[str]:
    """The render's content words as the verifier compares them, entity-name words aside."""
    return {t.key for t in tokens(text) if is_content(t) and t.key not in names}


def _episode_echo(
    fragment: Mapping[str, Sequence[str]], thought: str, utterance: str, context: Sequence[str]
) -> bool:
    names = frozenset(t.key for name in fragment for t in tokens(name) if t.key)
    keys = _content_keys(thought, names)
    if not keys:
        return False
    said_now = utterance.strip()
    return any(
        keys <= {t.key for t in tokens(turn)}
        for turn in context
        if not (said_now and turn.strip().endswith(said_now))  # the current utterance itself
    )


def _sources(fragment: Fragment, thought: str) -> list[str]:
    names = frozenset(t.key for name in fragment for t in tokens(name) if t.key)
    keys = _content_keys(thought, names)
    return list(
        dict.fromkeys(
            p.source_id
            for phrases in fragment.values()
            for p in phrases
            if keys & {t.key for t in tokens(p.text)}
        )
    )


def _distinct(modes: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(modes))

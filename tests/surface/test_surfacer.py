"""The Surfacer core: cue → fragment → render → verify, regenerate once, drop; never raises."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from custom_components.alto.surface import cues
from custom_components.alto.surface import surfacer as core
from custom_components.alto.surface.memory_view import MemoryView, Phrase, RecallView
from custom_components.alto.surface.surfacer import (
    REGENERATE_INSTRUCTION,
    SYSTEM_INSTRUCTION,
    Heard,
    NoopSurfacer,
    Surfacer,
    SurfacerOptions,
    build_surfacer,
    estimate_tokens,
    run_in_thread,
    trim_episode,
)

LOGGER_NAME = "custom_components.alto.surface.surfacer"
MEMORY = {
    "Maria": [
        Phrase("Maria walks the dog every morning", "m1"),
        Phrase("Maria is allergic to cats", "m2"),
    ],
    "Tom": [Phrase("Tom takes the bins out on Thursday night", "t1")],
    "the boiler": [Phrase("the boiler was serviced on March 3 at 7:30", "b1")],
}
FAITHFUL = "I remember Maria walks the dog every morning."


@dataclass
class View:
    """A memory view scoped per viewer: `visible` maps a viewer to the names it may see."""

    memory: dict[str, list[Phrase]] = field(default_factory=lambda: dict(MEMORY))
    visible: dict[str | None, list[str]] | None = None
    recalled: list[tuple[str, Phrase]] = field(default_factory=list)
    fail: str | None = None  # "known_names" | "phrases" | "recall"
    calls: list[tuple[str, Any, str | None]] = field(default_factory=list)

    async def known_names(self, viewer: str | None) -> list[str]:
        """The names `viewer` may see."""
        self.calls.append(("known_names", None, viewer))
        if self.fail == "known_names":
            raise ConnectionError("store unreachable")
        if self.visible is not None:
            return list(self.visible.get(viewer, []))
        return list(self.memory)

    async def phrases(self, name: str, viewer: str | None) -> list[Phrase]:
        """The phrases about `name` that `viewer` may see."""
        self.calls.append(("phrases", name, viewer))
        if self.fail == "phrases":
            raise RuntimeError("collection is gone")
        if self.visible is not None and name not in self.visible.get(viewer, []):
            return []
        return list(self.memory.get(name, []))

    async def recall(self, utterance: str, viewer: str | None, limit: int) -> list:
        """The recalled phrases, at most `limit`."""
        self.calls.append(("recall", (utterance, limit), viewer))
        if self.fail == "recall":
            raise TimeoutError("embedding model busy")
        return self.recalled[:limit]


class Renderer:
    """The render callable: answers from a script (a str, an exception, or a callable)."""

    def __init__(self, *answers: Any) -> None:
        """Answer the calls in turn with `answers`, the last one again after that."""
        self.answers = list(answers)
        self.calls: list[list[dict[str, str]]] = []

    async def __call__(self, messages: list[dict[str, str]]) -> str:
        """The next scripted answer: raised if an exception, called if a callable."""
        self.calls.append(messages)
        answer = self.answers[min(len(self.calls), len(self.answers)) - 1]
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            return await answer(messages)
        return answer


def material(call: list[dict[str, str]]) -> str:
    """The first user message of a render call: the fragment and context the model saw."""
    return call[1]["content"]


async def surface(view: View, renderer: Renderer, heard: Heard, **options: Any) -> Any:
    """Surface from `heard` through a Surfacer with these options."""
    return await Surfacer(view, renderer, SurfacerOptions(**options)).surface_from_heard(heard)


# --- the happy path ------------------------------------------------------------------------------


async def test_named_entity_surfaces_a_verified_thought() -> None:
    """Named entity surfaces a verified thought."""
    view, renderer = View(), Renderer(FAITHFUL)
    outcome = await surface(view, renderer, Heard("Is Maria coming round later?", "u1"))
    assert outcome.verdict == "surfaced"
    assert outcome.thought == FAITHFUL
    assert outcome.source_ids == ["m1"]  # the phrase the thought draws on, not every phrase
    assert outcome.failure_modes == []
    assert outcome.attempts == 1
    assert len(renderer.calls) == 1
    call = renderer.calls[0]
    assert call[0] == {"role": "system", "content": SYSTEM_INSTRUCTION}
    seen = material(call)
    assert '"Maria walks the dog every morning"' in seen
    assert '"Maria is allergic to cats"' in seen
    assert "Tom" not in seen
    assert "boiler" not in seen  # only cued entities reach the model
    assert "Is Maria coming round later?" in seen


@pytest.mark.parametrize(
    ("phrase", "faithful", "negation_dropped"),
    [
        (
            "Jonas isst keine Haselnüsse",
            "Ich erinnere mich, dass Jonas keine Haselnüsse isst.",
            "Jonas isst Haselnüsse.",
        ),
        (
            "Jonas eet geen hazelnoten",
            "Ik weet nog dat Jonas geen hazelnoten eet.",
            "Jonas eet hazelnoten.",
        ),
        (
            "Jonas ne mange jamais de noisettes",
            "Je me souviens que Jonas ne mange jamais de noisettes.",
            "Jonas mange des noisettes.",
        ),
        (
            "Jonas no come avellanas",
            "Recuerdo que Jonas no come avellanas.",
            "Jonas come avellanas.",
        ),
        (
            "Jonas non mangia nocciole",
            "Mi ricordo che Jonas non mangia nocciole.",
            "Jonas mangia nocciole.",
        ),
    ],
)
async def test_a_thought_in_the_households_language_is_verified_in_it(
    phrase: str, faithful: str, negation_dropped: str
) -> None:
    """A faithful thought in the memory's language surfaces; one without its negation does not."""
    view = View(memory={"Jonas": [Phrase(phrase, "j1")]})
    kept = await surface(view, Renderer(faithful), Heard("Jonas?", "u1"))
    assert kept.verdict == "surfaced"
    assert kept.thought == faithful
    flipped = await surface(view, Renderer(negation_dropped), Heard("Jonas?", "u2"))
    assert flipped.verdict == "dropped"
    assert "polarity" in flipped.failure_modes


def test_instruction_asks_for_one_extractive_first_person_thought() -> None:
    """Instruction asks for one extractive first person thought."""
    assert "ONE short first-person thought" in SYSTEM_INSTRUCTION
    assert "I remember" in SYSTEM_INSTRUCTION
    assert "Maria told me" in SYSTEM_INSTRUCTION
    assert "language of the memory phrases" in SYSTEM_INSTRUCTION
    assert "exactly" in SYSTEM_INSTRUCTION
    assert "never quote" in SYSTEM_INSTRUCTION


async def test_quoting_surrounds_are_stripped_from_the_render() -> None:
    """Quoting surrounds are stripped from the render."""
    outcome = await surface(View(), Renderer(f"  “{FAITHFUL}”\n"), Heard("Maria?"))
    assert outcome.verdict == "surfaced"
    assert outcome.thought == FAITHFUL


async def test_thought_with_no_shared_content_word_cites_the_whole_fragment() -> None:
    """Thought with no shared content word cites the whole fragment."""
    outcome = await surface(View(), Renderer("I remember Maria."), Heard("Maria?"))
    assert outcome.verdict == "surfaced"
    assert outcome.source_ids == ["m1", "m2"]


async def test_at_most_three_cues_longest_first() -> None:
    """At most three cues longest first."""
    view = View()
    view.memory = {**MEMORY, "Maria Lopez": [Phrase("Maria Lopez lives next door", "l1")]}
    renderer = Renderer("I remember Tom takes the bins out on Thursday night.")
    heard = Heard("Tom, Maria Lopez and the boiler man and Maria again", "u1")
    outcome = await surface(view, renderer, heard)
    asked = [name for kind, name, _ in view.calls if kind == "phrases"]
    # "Maria" alone is cued by its second mention; "Tom", the shortest, is the fourth cue.
    assert asked == ["Maria Lopez", "the boiler", "Maria"]
    assert "Tom takes" not in material(renderer.calls[0])
    assert outcome.verdict == "dropped"  # Tom's phrase was not licensed this turn


# --- regenerate once, then drop -------------------------------------------------------------------


async def test_fabricated_render_is_regenerated_once_then_dropped() -> None:
    """Fabricated render is regenerated once then dropped."""
    bad = "I remember Maria's awful habit of walking the dog every evening."
    renderer = Renderer(bad, bad, FAITHFUL)
    outcome = await surface(View(), renderer, Heard("Maria?", "u1"))
    assert outcome.verdict == "dropped"
    assert outcome.thought is None
    assert outcome.attempts == 2
    assert len(renderer.calls) == 2  # exactly one regeneration; the faithful third is never asked
    assert {"framing", "untraceable"} <= set(outcome.failure_modes)
    assert outcome.source_ids == ["m1", "m2"]  # what the model saw, for the trace
    second = renderer.calls[1]
    assert second[:2] == renderer.calls[0]
    assert second[2] == {"role": "assistant", "content": bad}
    follow_up = second[3]
    assert follow_up["role"] == "user"
    for span in ('"awful"', '"habit"', '"evening"'):
        assert span in follow_up["content"]
    assert "dog" not in follow_up["content"]  # only the untraceable spans are named


CHANGED = "These parts change what a memory phrase says (a negation, who did what, or how often):"


@pytest.mark.parametrize(
    ("render", "mode", "span"),
    [
        (
            "I remember the dog walks Maria every morning.",
            "swapped",
            "dog walks Maria every morning",
        ),
        ("I remember Maria is not allergic to cats.", "polarity", "not"),
        ("I remember Maria walks the dog some mornings.", "quantifier", "some"),
    ],
)
async def test_a_render_changing_what_a_phrase_says_is_told_so(
    render: str, mode: str, span: str
) -> None:
    """Words that trace but change a phrase's meaning are named as such, not as untraceable."""
    renderer = Renderer(render, FAITHFUL)
    outcome = await surface(View(), renderer, Heard("Maria?"))
    assert (outcome.verdict, outcome.failure_modes, outcome.attempts) == ("surfaced", [mode], 2)
    assert renderer.calls[1][-1]["content"] == f'{CHANGED} "{span}". {REGENERATE_INSTRUCTION}'


async def test_untraceable_and_changed_parts_are_named_apart() -> None:
    """A render with both kinds of failure gets one line for each."""
    bad = "I remember Maria walks the dog every evening and the dog walks Maria."
    renderer = Renderer(bad, FAITHFUL)
    outcome = await surface(View(), renderer, Heard("Maria?"))
    assert outcome.failure_modes == ["untraceable", "swapped"]
    assert renderer.calls[1][-1]["content"] == (
        "These words of your thought do not trace to the memory phrases of the person or thing "
        f'they are about: "evening". {CHANGED} "dog walks Maria". {REGENERATE_INSTRUCTION}'
    )


async def test_faithful_second_attempt_after_a_bad_first_is_surfaced() -> None:
    """Faithful second attempt after a bad first is surfaced."""
    renderer = Renderer("I remember Maria walks the cat every evening.", FAITHFUL)
    outcome = await surface(View(), renderer, Heard("What about Maria?"))
    assert outcome.verdict == "surfaced"
    assert outcome.thought == FAITHFUL
    assert outcome.attempts == 2
    assert outcome.failure_modes == ["untraceable"]
    assert '"evening"' in renderer.calls[1][-1]["content"]


async def test_misattributed_and_altered_precise_items_are_dropped() -> None:
    """Misattributed and altered precise items are dropped."""
    renderer = Renderer(
        "I remember Tom walks the dog every morning.",
        "I remember the boiler was serviced on March 4 at 7:30.",
    )
    outcome = await surface(View(), renderer, Heard("Did Tom or Maria fix the boiler?"))
    assert outcome.verdict == "dropped"
    assert "misattributed" in outcome.failure_modes
    assert "precise" in outcome.failure_modes


async def test_echo_of_the_current_utterance_is_not_a_memory() -> None:
    """Echo of the current utterance is not a memory."""
    renderer = Renderer("I remember Maria is bringing a cake.")
    outcome = await surface(View(), renderer, Heard("Maria is bringing a cake tonight"))
    assert outcome.verdict == "dropped"
    assert "echo" in outcome.failure_modes


async def test_empty_render_is_dropped_without_regenerating() -> None:
    """Empty render is dropped without regenerating."""
    renderer = Renderer("   ")
    outcome = await surface(View(), renderer, Heard("Maria?"))
    assert (outcome.verdict, outcome.attempts, outcome.failure_modes) == ("dropped", 1, ["empty"])
    assert len(renderer.calls) == 1


# --- no cue, no call ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "What's the weather like tomorrow?",
        "Mariana said hi",  # a longer word containing a name is not the name
        "tomorrow",
        "",
    ],
)
async def test_no_cue_means_no_model_call(text: str) -> None:
    """No cue means no model call."""
    renderer = Renderer(FAITHFUL)
    outcome = await surface(View(), renderer, Heard(text, "u1"))
    assert outcome.verdict == "nothing"
    assert outcome.thought is None
    assert outcome.attempts == 0
    assert renderer.calls == []


async def test_a_cue_whose_phrases_are_empty_means_no_model_call() -> None:
    """A cue whose phrases are empty means no model call."""
    view = View(memory={"Maria": []})
    renderer = Renderer(FAITHFUL)
    assert (await surface(view, renderer, Heard("Maria?"))).verdict == "nothing"
    assert renderer.calls == []


async def test_malformed_phrases_from_the_view_are_ignored() -> None:
    """Malformed phrases from the view are ignored."""
    view = View(memory={"Maria": ["a bare string", Phrase("", "x"), Phrase(3, "y")]})  # type: ignore[list-item]
    renderer = Renderer(FAITHFUL)
    assert (await surface(view, renderer, Heard("Maria?"))).verdict == "nothing"
    assert renderer.calls == []


# --- never raises ---------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["known_names", "phrases"])
async def test_memory_view_raising_is_nothing_with_one_log_line(
    where: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Memory view raising is nothing with one log line."""
    renderer = Renderer(FAITHFUL)
    with caplog.at_level(logging.DEBUG, logger=LOGGER_NAME):
        outcome = await surface(View(fail=where), renderer, Heard("Maria?", "u1"))
    assert outcome.verdict == "nothing"
    assert outcome.failure_modes == ["memory_error"]
    assert renderer.calls == []
    records = [r for r in caplog.records if r.name == LOGGER_NAME]
    assert len(records) == 1
    assert records[0].levelno == logging.WARNING


@pytest.mark.parametrize(
    "failure", [ConnectionError("ollama down"), ValueError("bad json"), KeyError("message")]
)
async def test_render_raising_is_nothing_with_one_log_line(
    failure: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    """Render raising is nothing with one log line."""
    renderer = Renderer(failure)
    with caplog.at_level(logging.DEBUG, logger=LOGGER_NAME):
        outcome = await surface(View(), renderer, Heard("Maria?"))
    assert outcome.verdict == "nothing"
    assert outcome.thought is None
    assert outcome.failure_modes == ["render_error"]
    assert outcome.attempts == 1
    assert len([r for r in caplog.records if r.name == LOGGER_NAME]) == 1


async def test_render_raising_on_the_regeneration_is_nothing() -> None:
    """Render raising on the regeneration is nothing."""
    renderer = Renderer("I remember Maria walks the cat every evening.", OSError("reset"))
    outcome = await surface(View(), renderer, Heard("Maria?"))
    assert outcome.verdict == "nothing"
    assert outcome.failure_modes == ["untraceable", "render_error"]
    assert outcome.attempts == 2


async def test_render_timeout_is_nothing() -> None:
    """A render slower than its timeout surfaces nothing."""

    async def slow(_messages: list[dict[str, str]]) -> str:
        await asyncio.sleep(5)
        return FAITHFUL

    outcome = await surface(View(), Renderer(slow), Heard("Maria?"), render_timeout_s=0.01)
    assert (outcome.verdict, outcome.failure_modes) == ("nothing", ["render_error"])


async def test_render_returning_a_non_string_is_nothing() -> None:
    """Render returning a non string is nothing."""
    outcome = await surface(View(), Renderer({"thought": FAITHFUL}), Heard("Maria?"))
    assert (outcome.verdict, outcome.failure_modes) == ("nothing", ["render_error"])


@pytest.mark.parametrize(
    "heard",
    [
        Heard(None),  # type: ignore[arg-type]
        Heard("Maria?", actor=42),  # type: ignore[arg-type]
        Heard("Maria?", episode=None),  # type: ignore[arg-type]
        object(),
    ],
)
async def test_odd_heard_objects_never_raise(heard: Any) -> None:
    """Odd heard objects never raise."""
    outcome = await Surfacer(View(), Renderer(FAITHFUL)).surface_from_heard(heard)
    assert outcome.verdict in ("surfaced", "nothing")


async def test_cancellation_propagates() -> None:
    """Cancellation propagates."""
    started = asyncio.Event()

    async def hang(_messages: list[dict[str, str]]) -> str:
        started.set()
        await asyncio.sleep(60)
        return FAITHFUL

    task = asyncio.create_task(surface(View(), Renderer(hang), Heard("Maria?")))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# --- off the event loop --------------------------------------------------------------------------


async def test_matching_and_verification_never_run_on_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Segmenting the utterance, the names and the render happens off the loop's thread."""
    threads: dict[str, set[int]] = {}
    for module, name in ((cues, "_words"), (core, "verify_render"), (core, "tokens")):
        original = getattr(module, name)

        def watched(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            threads.setdefault(_name, set()).add(threading.get_ident())
            return _original(*args, **kw)

        monkeypatch.setattr(module, name, watched)
    episode = ["user: Maria was round on Sunday.", "alto: Good to know."]
    outcome = await surface(View(), Renderer(FAITHFUL), Heard("Is Maria in?", "u1", episode))
    assert outcome.verdict == "surfaced"
    assert set(threads) == {"_words", "verify_render", "tokens"}
    assert all(threading.get_ident() not in ran_in for ran_in in threads.values())


async def test_the_blocking_work_goes_through_the_given_run_blocking() -> None:
    """Cue matching and each verification are one `run_blocking` call each (HA's executor)."""
    calls: list[str] = []

    async def recording(function: Callable[[], Any]) -> Any:
        calls.append(getattr(function, "func", function).__name__)
        return await run_in_thread(function)

    renderer = Renderer("I remember Maria walks the cat every evening.", FAITHFUL)
    surfacer = Surfacer(View(), renderer, run_blocking=recording)
    outcome = await surfacer.surface_from_heard(Heard("Maria?"))
    assert (outcome.verdict, outcome.attempts) == ("surfaced", 2)
    assert calls == ["_match", "_check", "_check"]


async def test_each_name_is_segmented_once_and_a_forgotten_name_no_longer_cues(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cue keys are kept across turns and viewers, and follow the names the memory knows."""
    segmented: list[str] = []
    keys = cues._keys

    def recording(name: str) -> tuple[tuple[str, ...], ...]:
        segmented.append(name)
        return keys(name)

    monkeypatch.setattr(cues, "_keys", recording)
    view = View()
    surfacer = Surfacer(view, Renderer(FAITHFUL))
    for viewer in ("u1", "u1", "u2"):
        await surfacer.surface_from_heard(Heard("Is Maria in?", viewer))
    assert sorted(segmented) == sorted(MEMORY)

    view.memory = {
        "Maria": MEMORY["Maria"],
        "Biscuit": [Phrase("Biscuit sleeps by the boiler", "c1")],
    }
    view.calls.clear()
    await surfacer.surface_from_heard(Heard("Did Tom feed Biscuit?", "u1"))
    assert segmented[len(MEMORY) :] == ["Biscuit"]
    assert [name for kind, name, _ in view.calls if kind == "phrases"] == ["Biscuit"]


# --- the episode: context only, newest kept, echoes dropped ---------------------------------------


def test_trim_episode_keeps_the_newest_whole_turns_under_the_ceiling() -> None:
    """Trim episode keeps the newest whole turns under the ceiling."""
    turns = [f"turn {n} " + "x" * 32 for n in range(6)]  # 40 characters = 10 tokens each
    assert estimate_tokens(turns[0]) == 10
    assert trim_episode(turns, 30) == turns[3:]
    assert trim_episode(turns, 29) == turns[4:]
    assert trim_episode(turns, 1000) == turns
    assert trim_episode(turns, 5) == []
    # A turn that does not fit stops the walk back: the context stays contiguous.
    assert trim_episode(["short", "y" * 400, "newest"], 20) == ["newest"]


async def test_episode_context_is_trimmed_to_the_ceiling_newest_kept() -> None:
    """Episode context is trimmed to the ceiling newest kept."""
    episode = [f"user: message number {n:02d} about the weather and the garden" for n in range(200)]
    renderer = Renderer(FAITHFUL)
    heard = Heard("And Maria?", "u1", episode)
    outcome = await surface(View(), renderer, heard)
    assert outcome.verdict == "surfaced"
    seen = material(renderer.calls[0])
    kept = [turn for turn in episode if turn in seen]
    assert kept == episode[-len(kept) :]  # a newest-ending stretch
    assert episode[-1] in seen
    assert episode[0] not in seen
    assert sum(estimate_tokens(t) for t in kept) <= 1000
    assert sum(estimate_tokens(t) for t in episode[-len(kept) - 1 :]) > 1000  # no room for more
    assert seen.index("conversation so far") < seen.index("Memory phrases")


async def test_a_smaller_ceiling_keeps_fewer_turns() -> None:
    """A smaller ceiling keeps fewer turns."""
    episode = ["a" * 40, "b" * 40, "c" * 40]
    renderer = Renderer(FAITHFUL)
    await surface(View(), renderer, Heard("Maria?", None, episode), episode_token_ceiling=20)
    seen = material(renderer.calls[0])
    assert "a" * 40 not in seen
    assert "b" * 40 in seen
    assert "c" * 40 in seen


async def test_an_echo_of_an_episode_turn_is_dropped() -> None:
    """An echo of an episode turn is dropped."""
    episode = ["user: Maria walks the dog every morning, you know.", "alto: Good to know."]
    renderer = Renderer(FAITHFUL, FAITHFUL)
    outcome = await surface(View(), renderer, Heard("What about Maria?", "u1", episode))
    assert outcome.verdict == "dropped"
    assert outcome.failure_modes == ["episode_echo"]
    assert len(renderer.calls) == 2
    assert "repeats something already said in the conversation" in renderer.calls[1][-1]["content"]


async def test_a_turn_outside_the_context_is_not_checked_for_an_echo() -> None:
    """Only the trimmed context, what the model saw, is read for an echo."""
    echoed = "user: Maria walks the dog every morning, you know."
    episode = [echoed, "alto: " + "x" * 70]  # the newest turn alone fills 20 tokens
    renderer = Renderer(FAITHFUL)
    heard = Heard("What about Maria?", "u1", episode)
    outcome = await surface(View(), renderer, heard, episode_token_ceiling=20)
    assert echoed not in material(renderer.calls[0])
    assert (outcome.verdict, outcome.failure_modes) == ("surfaced", [])


async def test_after_an_episode_echo_a_new_memory_surfaces() -> None:
    """After an episode echo a new memory surfaces."""
    episode = ["user: Maria walks the dog every morning, you know."]
    renderer = Renderer(FAITHFUL, "Maria told me she is allergic to cats.")
    outcome = await surface(View(), renderer, Heard("What about Maria?", "u1", episode))
    assert outcome.verdict == "surfaced"
    assert outcome.thought == "Maria told me she is allergic to cats."
    assert outcome.source_ids == ["m2"]
    assert outcome.failure_modes == ["episode_echo"]


async def test_a_memory_answering_the_current_utterance_is_not_an_episode_echo() -> None:
    """A memory answering the current utterance is not an episode echo."""
    text = "Does Maria walk the dog every morning?"
    renderer = Renderer(FAITHFUL)
    outcome = await surface(View(), renderer, Heard(text, "u1", ["alto: Hello.", f"user: {text}"]))
    assert outcome.verdict == "surfaced"


async def test_a_render_spread_over_two_turns_is_not_an_echo() -> None:
    """A render spread over two turns is not an echo."""
    episode = ["user: Maria walks a lot.", "user: The dog is fine every morning."]
    outcome = await surface(View(), Renderer(FAITHFUL), Heard("Maria?", None, episode))
    assert outcome.verdict == "surfaced"


async def test_words_taken_from_the_episode_are_untraceable() -> None:
    """Words taken from the episode are untraceable."""
    episode = ["user: Maria is visiting her sister in Leeds."]
    renderer = Renderer("I remember Maria is visiting her sister in Leeds.")
    outcome = await surface(View(), renderer, Heard("Maria?", None, episode))
    assert outcome.verdict == "dropped"
    assert {"untraceable", "precise"} <= set(outcome.failure_modes)


# --- viewer scoping and the second retriever ------------------------------------------------------


async def test_viewer_is_passed_to_every_memory_view_call() -> None:
    """Viewer is passed to every memory view call."""
    view = View(recalled=[("Tom", MEMORY["Tom"][0])])
    await surface(view, Renderer(FAITHFUL), Heard("Is Maria in?", "user-7"), recall=True)
    assert {kind for kind, _, _ in view.calls} == {"known_names", "phrases", "recall"}
    assert all(viewer == "user-7" for _, _, viewer in view.calls)


async def test_unknown_speaker_is_viewer_none() -> None:
    """Unknown speaker is viewer none."""
    view = View()
    await surface(view, Renderer(FAITHFUL), Heard("Is Maria in?"))
    assert view.calls
    assert all(viewer is None for _, _, viewer in view.calls)


async def test_a_name_another_viewer_owns_does_not_cue() -> None:
    """A name another viewer owns does not cue."""
    view = View(visible={"u1": ["Maria"], "u2": ["Tom"]})
    renderer = Renderer(FAITHFUL)
    assert (await surface(view, renderer, Heard("Is Maria in?", "u2"))).verdict == "nothing"
    assert renderer.calls == []
    assert (await surface(view, renderer, Heard("Is Maria in?", "u1"))).verdict == "surfaced"


async def test_recall_adds_to_the_fragment_only_when_on() -> None:
    """Recall adds to the fragment only when on."""
    view = View(recalled=[("Tom", MEMORY["Tom"][0])])
    renderer = Renderer("I remember Tom takes the bins out on Thursday night.")
    off = await surface(view, renderer, Heard("Are the bins going out?"))
    assert off.verdict == "nothing"
    assert renderer.calls == []
    assert "recall" not in {kind for kind, _, _ in view.calls}
    on = await surface(view, renderer, Heard("Are the bins going out?"), recall=True)
    assert on.verdict == "surfaced"
    assert on.source_ids == ["t1"]
    assert ("recall", ("Are the bins going out?", 4), None) in view.calls
    assert "Tom takes the bins out" in material(renderer.calls[0])


async def test_failing_recall_leaves_the_cued_path_working(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Failing recall leaves the cued path working."""
    with caplog.at_level(logging.WARNING, logger=LOGGER_NAME):
        outcome = await surface(
            View(fail="recall"), Renderer(FAITHFUL), Heard("Maria?"), recall=True
        )
    assert outcome.verdict == "surfaced"
    assert outcome.failure_modes == ["recall_error"]
    assert len([r for r in caplog.records if r.name == LOGGER_NAME]) == 1


async def test_a_view_without_recall_is_fine_with_recall_on() -> None:
    """A view without recall is fine with recall on."""

    class CuedOnly:
        async def known_names(self, viewer: str | None) -> list[str]:
            return ["Maria"]

        async def phrases(self, name: str, viewer: str | None) -> list[Phrase]:
            return MEMORY["Maria"]

    view = CuedOnly()
    assert isinstance(view, MemoryView)
    assert not isinstance(view, RecallView)
    outcome = await Surfacer(
        view, Renderer(FAITHFUL), SurfacerOptions(recall=True)
    ).surface_from_heard(Heard("Maria?"))
    assert outcome.verdict == "surfaced"


# --- the no-op ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("memory", "render"),
    [(None, Renderer(FAITHFUL)), (View(), None), (None, None)],
)
async def test_build_surfacer_is_the_noop_when_a_part_is_missing(
    memory: View | None, render: Callable | None
) -> None:
    """Build surfacer is the noop when a part is missing."""
    surfacer = build_surfacer(memory, render)
    assert isinstance(surfacer, NoopSurfacer)
    outcome = await surfacer.surface_from_heard(Heard("Maria?"))
    assert (outcome.verdict, outcome.thought, outcome.attempts) == ("nothing", None, 0)
    if isinstance(render, Renderer):
        assert render.calls == []


async def test_build_surfacer_with_both_parts_surfaces() -> None:
    """Build surfacer with both parts surfaces."""
    surfacer = build_surfacer(View(), Renderer(FAITHFUL), SurfacerOptions(max_cues=1))
    assert isinstance(surfacer, Surfacer)
    assert surfacer.options.max_cues == 1
    assert (await surfacer.surface_from_heard(Heard("Maria?"))).verdict == "surfaced"

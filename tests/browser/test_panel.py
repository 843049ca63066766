"""Two people use the Alto panel in Chromium, logged in through Home Assistant's own login page.

A real Home Assistant process (with its frontend) and the fake Ollama run on 127.0.0.1; the
system Chromium (Debian's `chromium`) is driven through Playwright's Python API, which downloads
no browser of its own. Ana (the owner, an administrator) and Bob (an ordinary user) each remember
something privately; each sees their own private memory and the household's, never the other's;
Bob forgets his after confirming, and it disappears from his page without a reload. Ana's turns
give her an inbox item (N+1) and a synthesis (`alto.synthesize`), shown on her page and not on
Bob's.

The memory list is one entry per thing said: Ana's statement about her sister is one entry, what
Alto understood from it inside it; her question and her command are not memories and show only
under "Everything said", where they can be forgotten too. Then Ana switches her Home Assistant
language to German: the same list in German, and forgetting her statement forgets its source and
everything understood from it. Screenshots go to `tests/browser/artifacts/` (not committed;
`docs/screenshots/` copies them).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from custom_components.alto.const import DOMAIN
from custom_components.alto.memory.qualification import record_qualification

from ..fake_ollama import CHAT_MODEL, digest_of
from ..live.ha_process import HomeAssistantProcess
from .scripted_ollama import ANCHOR, OBSERVED, SISTER, THEME, THOUGHT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).parent / "artifacts"
ANA_PASSWORD = "correct-horse-battery"  # the owner `HomeAssistantProcess.onboard` creates
BOB_PASSWORD = "bob-likes-long-passwords"
ANA_SECRET = "My pin for the bike lock is 4711."
BOB_SECRET = "I hide chocolate in the piano."
SHARED = "The bins go out on Tuesday evening."
ASK = "Please turn on the kitchen light."  # scripted: an action span the guard refuses
TOLD = f"My sister {SISTER} visits every Sunday."  # scripted: an assertion mentioning her
ASKED = f"Is {SISTER} coming round this weekend?"  # names her: the Surfacer's cue
SCRIPTED_OLLAMA = "tests.browser.scripted_ollama"
WAIT_MS = 30_000  # one live update or page load on a busy two-core machine

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (Debian packages chromium)"
)


@pytest.fixture
def home_assistant(socket_enabled: None, tmp_path: Path) -> Iterator[HomeAssistantProcess]:
    """Home Assistant with its frontend, onboarded, Alto added, and a second person, Bob.

    The model is qualified, so turns are interpreted and the Surfacer has names to cue.
    """
    process = HomeAssistantProcess(
        tmp_path / "config", components=("frontend",), ollama_module=SCRIPTED_OLLAMA
    )
    table = process.config_dir / ".storage" / DOMAIN / "qualified_pairs.json"
    table.parent.mkdir(parents=True, exist_ok=True)
    record_qualification(table, digest_of(CHAT_MODEL), CHAT_MODEL, [])
    try:
        process.start()
        process.onboard()
        process.add_alto()
        process.add_user("Bob", "bob", BOB_PASSWORD)
        # The frontend shows a "still starting" notice over every page until then.
        process.wait_until_running()
        yield process
    finally:
        process.close()


@pytest.fixture
def browser() -> Iterator[Browser]:
    """The system Chromium, headless."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


def log_in(browser: Browser, ha: HomeAssistantProcess, username: str, password: str) -> Page:
    """A fresh browser session that opens the Alto panel and logs in on HA's login page."""
    page = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US").new_page()
    page.goto(f"{ha.base}/alto")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    if username == "ana":
        page.screenshot(path=ARTIFACTS / "01-login.png")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("alto-panel section#memories h2")).to_have_text("Memories", timeout=WAIT_MS)
    return page


def reopen(page: Page, ha: HomeAssistantProcess, username: str, password: str) -> None:
    """Open the Alto panel again, logging in again if the session was not kept."""
    page.goto(f"{ha.base}/alto")
    login = page.locator("input[name=username]")
    expect(login.or_(page.locator("alto-panel section#memories h2"))).to_be_visible(timeout=WAIT_MS)
    if login.is_visible():
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", password)
        page.get_by_role("button", name="Log in").click()


def memory_item(page: Page, quote: str) -> Locator:
    """The panel's entry of one thing said (Playwright's CSS pierces the shadow DOM)."""
    entries = page.locator("alto-panel ul.memories > li.entry")
    return entries.filter(has=page.locator("p.quote", has_text=quote))


def entries(page: Page) -> Locator:
    """Every entry the panel lists."""
    return page.locator("alto-panel ul.memories > li.entry")


def show_tab(page: Page, name: str) -> None:
    """Switch the memory list to the tab `name` and wait until it is the selected one."""
    tab = page.locator("alto-panel .tabs button.tab", has_text=name)
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")


def remember(page: Page, text: str, *, household: bool = False) -> None:
    """Remember `text` through the panel's form and wait until the live view lists it."""
    page.fill("alto-panel form.remember input[name=text]", text)
    page.select_option("alto-panel form.remember select", "household" if household else "private")
    page.click("alto-panel form.remember button[type=submit]")
    expect(memory_item(page, text)).to_have_count(1, timeout=WAIT_MS)


def forget(page: Page, quote: str, question: str, shot: Path | None = None) -> None:
    """Forget the entry of `quote`: the panel asks `question` first; it leaves without a reload."""
    memory_item(page, quote).locator("button.forget").click()
    dialog = page.locator("alto-panel dialog#confirm")
    expect(dialog).to_be_visible()
    expect(dialog.locator("h2")).to_have_text(question)
    if shot is not None:
        page.screenshot(path=shot)
    dialog.locator("button.confirm-yes").click()
    expect(memory_item(page, quote)).to_have_count(0, timeout=WAIT_MS)


def test_two_people_see_their_own_memories_and_forget_one(
    home_assistant: HomeAssistantProcess, browser: Browser
) -> None:
    """The story of the panel, from the login page to a forgotten memory."""
    ha = home_assistant
    ARTIFACTS.mkdir(exist_ok=True)

    ana = log_in(browser, ha, "ana", ANA_PASSWORD)
    remember(ana, ANA_SECRET)
    remember(ana, SHARED, household=True)
    bob = log_in(browser, ha, "bob", BOB_PASSWORD)
    remember(bob, BOB_SECRET)

    # Ana asks Alto (REST, as the owner): her turn's intent and its verdict reach her page live.
    # Her words are kept, but a command is not a memory: her list does not show it.
    assert (
        ha.converse(ASK)["response"]["speech"]["plain"]["speech"] == "Turning on the kitchen light."
    )
    intent = ana.locator("alto-panel ul.intents li.intent", has_text="turn on the kitchen light")
    expect(intent.locator(".chip.verdict")).to_have_text("Refused", timeout=WAIT_MS)
    expect(bob.locator("alto-panel section#intents p.empty")).to_have_text(
        "No actions captured yet."
    )

    # Ana tells Alto about her sister; when she names her again, a verified thought surfaces.
    ha.converse(TOLD)
    told = memory_item(ana, TOLD)
    expect(told.locator("details.understood summary")).to_have_text(
        "What Alto understood (2)", timeout=WAIT_MS
    )
    ha.converse(ASKED)
    thought = ana.locator("alto-panel ul.thoughts li.thought", has_text=THOUGHT)
    expect(thought.locator(".chip")).to_have_text("Surfaced", timeout=WAIT_MS)
    expect(bob.locator("alto-panel ul.thoughts li.thought")).to_have_count(0)

    # One entry per thing said: her statement once, said in a conversation today, what Alto
    # understood from it folded inside; her question and her command are not listed.
    expect(entries(ana)).to_have_count(3)  # her secret, the household's bins, her sister
    expect(told).to_have_count(1)
    expect(told.locator(".source")).to_have_text("In a conversation today")
    expect(told.locator(".actor")).to_have_text("Said by Ana")
    understood = told.locator("ul.understood li")
    expect(understood.first).to_be_hidden()  # collapsed until asked for
    told.locator("details.understood summary").click()
    expect(understood).to_have_count(2)
    expect(understood.filter(has_text="Participant mention")).to_contain_text(SISTER)
    expect(understood.filter(has_text="Assertion")).to_contain_text(TOLD)
    for said in (ASK, ASKED):
        expect(memory_item(ana, said)).to_have_count(0)
    memories = ana.locator("alto-panel section#memories")
    assert not re.search(r"[0-9a-f]{12}|Conversation ", memories.inner_text())  # no source id
    expect(memory_item(bob, ASK)).to_have_count(0)

    # N+1 noted something about her kitchen-light request in her own inbox; she asks Alto to
    # synthesize her turns now. Both reach her page live, in her private scope; not Bob's page.
    noticed = ana.locator("alto-panel ul.inbox li.observation", has_text=OBSERVED)
    expect(noticed).to_have_count(1, timeout=WAIT_MS)
    expect(noticed.locator(".chip.scope")).to_have_text("Private")
    expect(noticed.locator(".chip.urgency")).to_have_text("Medium urgency")
    expect(noticed.locator(".chip.box")).to_have_text("Pending")
    # (REST, as the owner: Playwright's own event loop runs in this thread.)
    called = ha.call("POST", f"/api/services/{DOMAIN}/synthesize?return_response", {})
    assert called["service_response"]["synthesis"]["themes"][0]["text"] == THEME
    mine = ana.locator("alto-panel section#synthesis .synthesis.private")
    expect(mine.locator("h3")).to_have_text("Your conversations", timeout=WAIT_MS)
    expect(mine.locator("dt.themes")).to_have_text("Themes")
    expect(mine.locator("dd")).to_have_text([THEME, ANCHOR])
    expect(mine.locator(".chip.trigger")).to_have_text("On demand")
    expect(bob.locator("alto-panel section#inbox p.empty")).to_have_text(
        "Alto has noticed nothing for you yet."
    )
    expect(bob.locator("alto-panel ul.inbox li")).to_have_count(0)
    expect(bob.locator("alto-panel section#synthesis p.empty")).to_have_text("No synthesis yet.")
    expect(bob.locator("alto-panel .synthesis")).to_have_count(0)

    # Each sees the household's memory and their own private one, never the other's.
    people = ((ana, "Ana", ANA_SECRET, BOB_SECRET), (bob, "Bob", BOB_SECRET, ANA_SECRET))
    for page, name, mine, theirs in people:
        expect(memory_item(page, SHARED)).to_have_count(1, timeout=WAIT_MS)
        expect(memory_item(page, theirs)).to_have_count(0)
        own = memory_item(page, mine)
        expect(own.locator(".chip.scope")).to_have_text("Private")
        expect(own.locator(".actor")).to_have_text(f"Added by {name}")
        expect(own.locator(".source")).to_have_text("Asked to remember today")
        expect(memory_item(page, SHARED).locator(".actor")).to_have_text("Added by Ana")
        expect(memory_item(page, SHARED).locator(".chip.scope")).to_have_text("Household")
    # Only the administrator has the administration section.
    expect(ana.locator("alto-panel section#admin")).to_be_visible()
    expect(ana.locator("alto-panel section#admin dd.qualified")).to_have_text("Yes")
    expect(bob.locator("alto-panel section#admin")).to_be_hidden()
    # The list says what it holds (more than the household's to-do list); the administrator's
    # also says that other people's private memories are counted there, not listed.
    for page in (ana, bob):
        expect(page.locator("alto-panel section#memories p.caption")).to_contain_text(
            "yours and the household's"
        )
    expect(ana.locator("alto-panel p.caption")).to_contain_text("not even to administrators")
    expect(bob.locator("alto-panel p.caption")).not_to_contain_text("administrators")
    expect(memory_item(ana, TOLD).locator("ul.understood li").first).to_be_visible()  # still open
    ana.screenshot(path=ARTIFACTS / "02-ana.png", full_page=True)
    bob.screenshot(path=ARTIFACTS / "03-bob.png", full_page=True)

    # Everything said lists the question and the command too, marked as not memories; the
    # question is forgotten from there.
    show_tab(ana, "Everything said")
    expect(entries(ana)).to_have_count(5, timeout=WAIT_MS)
    for said in (ASK, ASKED):
        expect(memory_item(ana, said).locator(".chip.not-recalled")).to_have_text("Not a memory")
    expect(memory_item(ana, TOLD).locator(".chip.not-recalled")).to_have_count(0)
    ana.screenshot(path=ARTIFACTS / "02b-ana-everything.png", full_page=True)
    forget(ana, ASKED, "Forget this memory?")
    expect(entries(ana)).to_have_count(4)
    show_tab(ana, "Memories")
    expect(entries(ana)).to_have_count(3, timeout=WAIT_MS)

    # Search goes through recall: Bob's search never finds Ana's private memory.
    bob.fill("alto-panel form.search input[name=query]", "bike lock pin")
    bob.click("alto-panel form.search button[type=submit]")
    expect(bob.locator("alto-panel p.results")).to_contain_text("“bike lock pin”")
    expect(memory_item(bob, ANA_SECRET)).to_have_count(0)
    ana.fill("alto-panel form.search input[name=query]", "bike lock pin")
    ana.click("alto-panel form.search button[type=submit]")
    expect(ana.locator("alto-panel p.results")).to_contain_text("“bike lock pin”")
    expect(ana.locator("alto-panel ul.memories li.memory").first).to_contain_text(ANA_SECRET)
    ana.screenshot(path=ARTIFACTS / "03b-ana-search.png")
    ana.click("alto-panel button.clear-search")
    bob.click("alto-panel button.clear-search")
    expect(memory_item(bob, BOB_SECRET)).to_have_count(1)

    # Bob forgets his memory: the panel asks first, then it disappears without a reload.
    forget(bob, BOB_SECRET, "Forget this memory?", ARTIFACTS / "04-bob-confirm-forget.png")
    expect(memory_item(bob, SHARED)).to_have_count(1)
    bob.screenshot(path=ARTIFACTS / "05-bob-after-forget.png", full_page=True)

    # Ana's page follows live: Bob now has no private memory left to purge.
    bob_row = ana.locator("alto-panel section#admin tr[data-user=Bob]")
    expect(bob_row.locator("td.count")).to_have_text("0", timeout=WAIT_MS)
    ana.locator("alto-panel section#admin").screenshot(path=ARTIFACTS / "06-ana-admin.png")

    # Ana sets her Home Assistant language to German (her profile's setting): the same list in
    # German, the command only under "Alles Gesagte".
    locale = {"language": "de", "number_format": "language", "time_format": "language"}
    locale |= {"date_format": "language", "time_zone": "local", "first_weekday": "language"}
    ana.evaluate(  # as the profile page saves it (Playwright's loop forbids `ha.websocket` here)
        """(value) => document.querySelector("home-assistant").hass.callWS(
            {type: "frontend/set_user_data", key: "language", value})""",
        locale,
    )
    reopen(ana, ha, "ana", ANA_PASSWORD)
    expect(ana.locator("alto-panel section#memories h2")).to_have_text(
        "Erinnerungen", timeout=WAIT_MS
    )
    told = memory_item(ana, TOLD)
    expect(told.locator(".source")).to_have_text("In einem Gespräch heute")
    expect(memory_item(ana, SHARED).locator(".source")).to_have_text("Heute zum Merken gegeben")
    expect(told.locator(".actor")).to_have_text("Gesagt von Ana")
    expect(told.locator("details.understood summary")).to_have_text("Was Alto verstanden hat (2)")
    expect(entries(ana)).to_have_count(3)
    expect(memory_item(ana, ASK)).to_have_count(0)
    show_tab(ana, "Alles Gesagte")
    expect(memory_item(ana, ASK).locator(".chip.not-recalled")).to_have_text(
        "Keine Erinnerung", timeout=WAIT_MS
    )
    show_tab(ana, "Erinnerungen")
    expect(memory_item(ana, ASK)).to_have_count(0, timeout=WAIT_MS)
    told.locator("details.understood summary").click()
    ana.screenshot(path=ARTIFACTS / "07-ana-de.png", full_page=True)

    # Forgetting her statement forgets its source and all Alto understood from it: nothing of
    # it is recalled, and the thought that quoted it goes too.
    forget(ana, TOLD, "Diese Erinnerung vergessen?")
    expect(ana.locator("alto-panel ul.thoughts li.thought", has_text=THOUGHT)).to_have_count(
        0, timeout=WAIT_MS
    )
    show_tab(ana, "Alles Gesagte")
    expect(entries(ana)).to_have_count(3, timeout=WAIT_MS)  # the command, her secret, the bins
    recalled = ha.call(
        "POST",
        f"/api/services/{DOMAIN}/recall?return_response",
        {"query": f"My sister {SISTER} visits every Sunday", "limit": 48},
    )["service_response"]["memories"]
    assert not [m for m in recalled if SISTER in m["quote"]], recalled

    log = ha.log
    assert "Detected blocking call" not in log, log
    assert "ERROR (MainThread) [custom_components.alto" not in log, log

"""A real Assist pipeline: Wyoming STT -> Alto -> Wyoming TTS, all over 127.0.0.1.

Two in-process Wyoming servers (the `wyoming` library HA's integration pins) stand in for
speech-to-text and text-to-speech. HA's own `wyoming` integration talks to them, an Assist
pipeline wires them around `conversation.alto`, and the test checks that the TTS server is
asked to say the speech of Alto's reply and nothing else: no thought, no action span, no
marker characters.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from homeassistant.components import stt, tts
from homeassistant.components.assist_pipeline import (
    AudioSettings,
    PipelineEvent,
    PipelineEventType,
    PipelineStage,
    async_pipeline_from_audio_stream,
)
from homeassistant.components.assist_pipeline.pipeline import KEY_ASSIST_PIPELINE
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import entity_registry as er
from pytest_homeassistant_custom_component.common import MockConfigEntry
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.event import Event
from wyoming.info import (
    AsrModel,
    AsrProgram,
    Attribution,
    Describe,
    Info,
    TtsProgram,
    TtsVoice,
)
from wyoming.server import AsyncEventHandler, AsyncTcpServer
from wyoming.tts import Synthesize

from ..fake_ollama import FakeOllama, last_user_text
from .helpers import AGENT

TRANSCRIPT = "turn on the lamp please"
ATTRIBUTION = Attribution(name="Alto tests", url="https://example.invalid")

TTS_RATE = 22050
TTS_WIDTH = 2
TTS_CHANNELS = 1
SILENCE = bytes(TTS_RATE // 100 * TTS_WIDTH)  # 10 ms of 16-bit mono silence

STT_INFO = Info(
    asr=[
        AsrProgram(
            name="fake-asr",
            attribution=ATTRIBUTION,
            installed=True,
            description="Fake ASR",
            version="1.0",
            models=[
                AsrModel(
                    name="fake-asr-model",
                    attribution=ATTRIBUTION,
                    installed=True,
                    description="Fake ASR model",
                    version="1.0",
                    languages=["en"],
                )
            ],
        )
    ]
)
TTS_INFO = Info(
    tts=[
        TtsProgram(
            name="fake-tts",
            attribution=ATTRIBUTION,
            installed=True,
            description="Fake TTS",
            version="1.0",
            voices=[
                TtsVoice(
                    name="fake-voice",
                    attribution=ATTRIBUTION,
                    installed=True,
                    description="Fake voice",
                    version="1.0",
                    languages=["en"],
                )
            ],
        )
    ]
)


@dataclass
class Recorder:
    """What the two Wyoming servers were sent."""

    transcribe: list[Transcribe] = field(default_factory=list)
    audio_start: list[AudioStart] = field(default_factory=list)
    stt_audio: bytearray = field(default_factory=bytearray)
    audio_stops: int = 0
    synthesized: list[str] = field(default_factory=list)


class SttHandler(AsyncEventHandler):
    """Speech-to-text: answers every finished audio stream with TRANSCRIPT."""

    def __init__(self, recorder: Recorder, *args: Any) -> None:
        """Record into `recorder`."""
        super().__init__(*args)
        self.recorder = recorder

    async def handle_event(self, event: Event) -> bool:
        """Describe the program, record the audio, answer its end with TRANSCRIPT."""
        if Describe.is_type(event.type):
            await self.write_event(STT_INFO.event())
        elif Transcribe.is_type(event.type):
            self.recorder.transcribe.append(Transcribe.from_event(event))
        elif AudioStart.is_type(event.type):
            self.recorder.audio_start.append(AudioStart.from_event(event))
        elif AudioChunk.is_type(event.type):
            self.recorder.stt_audio += AudioChunk.from_event(event).audio
        elif AudioStop.is_type(event.type):
            self.recorder.audio_stops += 1
            await self.write_event(Transcript(text=TRANSCRIPT).event())
            return False
        return True


class TtsHandler(AsyncEventHandler):
    """Text-to-speech: records the text, answers with a few ms of silence."""

    def __init__(self, recorder: Recorder, *args: Any) -> None:
        """Record into `recorder`."""
        super().__init__(*args)
        self.recorder = recorder

    async def handle_event(self, event: Event) -> bool:
        """Describe the program; record the text to say, answer it with silence."""
        if Describe.is_type(event.type):
            await self.write_event(TTS_INFO.event())
        elif Synthesize.is_type(event.type):
            self.recorder.synthesized.append(Synthesize.from_event(event).text)
            fmt = {"rate": TTS_RATE, "width": TTS_WIDTH, "channels": TTS_CHANNELS}
            await self.write_event(AudioStart(**fmt).event())
            for _ in range(3):
                await self.write_event(AudioChunk(audio=SILENCE, **fmt).event())
            await self.write_event(AudioStop().event())
            return False
        return True


async def start_server(handler: type[AsyncEventHandler], recorder: Recorder) -> AsyncTcpServer:
    """A Wyoming server on a free 127.0.0.1 port, its handlers recording into `recorder`."""
    server = AsyncTcpServer("127.0.0.1", 0)
    await server.start(lambda reader, writer: handler(recorder, reader, writer))
    return server


def port_of(server: AsyncTcpServer) -> int:
    """The port a Wyoming server listens on."""
    assert server._server is not None
    return server._server.sockets[0].getsockname()[1]


@pytest.fixture
async def wyoming_servers(socket_enabled: None) -> AsyncGenerator[tuple[Recorder, int, int]]:
    """The STT and TTS servers, running; yields the recorder and the two ports."""
    recorder = Recorder()
    stt_server = await start_server(SttHandler, recorder)
    tts_server = await start_server(TtsHandler, recorder)
    try:
        yield recorder, port_of(stt_server), port_of(tts_server)
    finally:
        for server in (stt_server, tts_server):
            await server.stop()
            assert server._server is not None
            await server._server.wait_closed()


async def setup_wyoming(hass: HomeAssistant, port: int, domain: str) -> str:
    """Add a Wyoming config entry for the server on `port`; return its `domain` entity id."""
    entry = MockConfigEntry(domain="wyoming", data={"host": "127.0.0.1", "port": port})
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    entity_ids = [
        e.entity_id
        for e in er.async_entries_for_config_entry(er.async_get(hass), entry.entry_id)
        if e.domain == domain
    ]
    assert len(entity_ids) == 1, entity_ids
    return entity_ids[0]


async def audio_stream() -> AsyncIterator[bytes]:
    """A few chunks of 16 kHz 16-bit mono audio, then the end-of-stream marker."""
    for n in range(3):
        yield bytes([n + 1]) * 640
    yield b""


@pytest.mark.usefixtures("setup_alto")
async def test_tts_gets_only_the_speech_of_alto_reply(
    hass: HomeAssistant,
    fake_ollama: FakeOllama,
    wyoming_servers: tuple[Recorder, int, int],
) -> None:
    """Through a real pipeline, TTS is asked to say the speech of Alto's reply and nothing else."""
    recorder, stt_port, tts_port = wyoming_servers
    stt_entity = await setup_wyoming(hass, stt_port, "stt")
    tts_entity = await setup_wyoming(hass, tts_port, "tts")

    pipeline = await hass.data[KEY_ASSIST_PIPELINE].pipeline_store.async_create_item(
        {
            "name": "Alto voice",
            "language": "en",
            "conversation_engine": AGENT,
            "conversation_language": "en",
            "prefer_local_intents": False,
            "stt_engine": stt_entity,
            "stt_language": "en",
            "tts_engine": tts_entity,
            "tts_language": "en",
            "tts_voice": "fake-voice",
            "wake_word_entity": None,
            "wake_word_id": None,
        }
    )

    fake_ollama.reply("thinking ¦Hello there.¦ ¤turn on the lamp¤")
    events: list[PipelineEvent] = []
    async with asyncio.timeout(15):
        await async_pipeline_from_audio_stream(
            hass,
            context=Context(),
            event_callback=events.append,
            stt_metadata=stt.SpeechMetadata(
                language="en",
                format=stt.AudioFormats.WAV,
                codec=stt.AudioCodecs.PCM,
                bit_rate=stt.AudioBitRates.BITRATE_16,
                sample_rate=stt.AudioSampleRates.SAMPLERATE_16000,
                channel=stt.AudioChannels.CHANNEL_MONO,
            ),
            stt_stream=audio_stream(),
            pipeline_id=pipeline.id,
            # WAV is what the Wyoming TTS answers: no ffmpeg conversion is needed.
            tts_audio_output={tts.ATTR_PREFERRED_FORMAT: "wav"},
            audio_settings=AudioSettings(is_vad_enabled=False),
            start_stage=PipelineStage.STT,
            end_stage=PipelineStage.TTS,
        )

        by_type = {event.type: event for event in events}
        assert PipelineEventType.ERROR not in by_type, by_type[PipelineEventType.ERROR].data
        assert by_type[PipelineEventType.RUN_END]

        # Drain the synthesized audio, so the TTS request has certainly been made.
        tts_output = by_type[PipelineEventType.TTS_END].data["tts_output"]
        result = tts.async_get_stream(hass, tts_output["token"])
        assert result is not None
        audio = b"".join([chunk async for chunk in result.async_stream_result()])
        await hass.async_block_till_done()

    # Speech-to-text: the audio reached the server, its transcript reached Alto.
    assert [t.language for t in recorder.transcribe] == ["en"]
    assert len(recorder.audio_start) == 1
    assert recorder.audio_stops == 1
    assert bytes(recorder.stt_audio) == b"".join(bytes([n + 1]) * 640 for n in range(3))
    assert by_type[PipelineEventType.STT_END].data["stt_output"]["text"] == TRANSCRIPT
    # The first chat request is the conversational one (the action span is handed on after).
    chat = fake_ollama.chat_requests[0]
    assert chat["stream"] is True
    assert chat["messages"][0]["role"] == "system"
    assert chat["messages"][-1] == {"role": "user", "content": TRANSCRIPT}
    assert [last_user_text(c) for c in fake_ollama.chat_requests].count(TRANSCRIPT) == 1

    # Conversation: the pipeline speaks the speech span only.
    speech = by_type[PipelineEventType.INTENT_END].data["intent_output"]["response"]["speech"]
    assert speech["plain"]["speech"] == "Hello there."
    assert by_type[PipelineEventType.TTS_START].data["tts_input"] == "Hello there."

    # Text-to-speech: the server was asked to say exactly the speech, once.
    assert recorder.synthesized == ["Hello there."]
    spoken = recorder.synthesized[0]
    for leaked in ("thinking", "lamp", "¦", "¤"):
        assert leaked not in spoken
    assert tts_output["mime_type"] == "audio/x-wav"
    assert audio.startswith(b"RIFF")
    assert audio.endswith(SILENCE)

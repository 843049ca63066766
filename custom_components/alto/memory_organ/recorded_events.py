"""The recorder task that deletes the recorded events holding forgotten words.

Home Assistant's recorder purges events by age or by type (its `purge` service), never by what
their data says, so this task runs `recorded.RecordedEraser`'s deletion in the recorder's own
thread, with the recorder's session, as its purge tasks do, reusing its statements
(`queries.delete_event_rows`, `delete_event_data_rows`, `data_ids_exist_in_events`).

The events searched are those whose data carries what someone said: every `call_service` event
(their `service_data`: `alto.remember`'s text, `alto.recall`'s query, `todo.add_item`'s and
`todo.remove_item`'s item, `conversation.process`'s text) and Alto's own `alto_*` events (an
intent's span). An event goes when a string of its data holds a forgotten text
(`forgotten.Forgotten`); its `event_data` row goes with it once no other event refers to it,
and the recorder forgets that row's id (`evict_purged`), so no later event is written against it.

Imported only once the recorder is loaded: its package needs its own requirements (SQLAlchemy).
Events recorded before Home Assistant 2022.6 keep their data in the events table itself; the
recorder purges those by age and this task does not read them.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, override

from homeassistant.components.recorder.db_schema import EventData, Events, EventTypes
from homeassistant.components.recorder.queries import (
    data_ids_exist_in_events,
    delete_event_data_rows,
    delete_event_rows,
)
from homeassistant.components.recorder.tasks import RecorderTask
from homeassistant.components.recorder.util import retryable_database_job, session_scope
from homeassistant.const import EVENT_CALL_SERVICE
from homeassistant.util.collection import chunked_or_all
from homeassistant.util.json import json_loads

from ..const import DOMAIN, LOGGER
from .forgotten import Forgotten

if TYPE_CHECKING:
    from homeassistant.components.recorder import Recorder


@dataclass(slots=True)
class EraseEventsTask(RecorderTask):
    """Delete the recorded events whose data holds one of the forgotten texts."""

    forgotten: Forgotten

    @override
    def run(self, instance: Recorder) -> None:
        """Delete them; a database busy elsewhere runs the task again later."""
        if not erase_events(instance, self.forgotten):
            instance.queue_task(EraseEventsTask(self.forgotten))


@retryable_database_job("erase the events holding forgotten words")
def erase_events(instance: Recorder, forgotten: Forgotten) -> bool:
    """Delete the events holding `forgotten` texts, and their unshared data; True when done."""
    if not forgotten.needles:
        return True
    with session_scope(session=instance.get_session()) as session:
        types = (EventTypes.event_type == EVENT_CALL_SERVICE) | EventTypes.event_type.startswith(
            f"{DOMAIN}_", autoescape=True
        )
        query = (
            session.query(Events.event_id, Events.data_id, EventData.shared_data)
            .join(EventData, Events.data_id == EventData.data_id)
            .join(EventTypes, Events.event_type_id == EventTypes.event_type_id)
            .filter(types)
        )
        if all(forgotten.probes):  # a text without a word is looked for in every row
            query = query.filter(
                reduce(
                    operator.or_,
                    (EventData.shared_data.icontains(p, autoescape=True) for p in forgotten.probes),
                )
            )
        holding = [
            (event_id, data_id)
            for event_id, data_id, shared in query
            if shared and forgotten.held_in(json_loads(shared))
        ]
        if not holding:
            return True
        event_ids = {event_id for event_id, _data_id in holding}
        data_ids = {data_id for _event_id, data_id in holding}
        for chunk in chunked_or_all(event_ids, instance.max_bind_vars):
            session.execute(delete_event_rows(chunk))
        shared_ids: set[int] = set()
        for chunk in chunked_or_all(data_ids, instance.max_bind_vars):
            shared_ids.update(row[0] for row in session.execute(data_ids_exist_in_events(chunk)))
        unused = data_ids - shared_ids
        for chunk in chunked_or_all(unused, instance.max_bind_vars):
            session.execute(delete_event_data_rows(chunk))
    instance.event_data_manager.evict_purged(unused)
    LOGGER.debug("Deleted %d recorded events holding forgotten words", len(event_ids))
    return True

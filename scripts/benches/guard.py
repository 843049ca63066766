"""Guard latency against registry size: median µs per proposal for 50 and 2,000 entities.

Run: .venv/bin/python scripts/benches/guard.py
Each proposal is timed over a short inner loop (to rise above timer resolution) and repeated;
the table shows each proposal's median per-call time, averaged over the valid and the refused
mix separately.
Registry lookup is a dict probe, so the 2000/50 ratio should stay near 1.
"""

import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from custom_components.alto.act.guard import validate_state_query, validate_tool_call
from custom_components.alto.act.model import ExposedEntity, GuardRefusal, Proposal, Registry

SIZES = (50, 2000)
REPEATS = 200
INNER = 20
AREAS = ("Kitchen", "Hall", "Bedroom", "Office", "Garage", "Living room")
# (domain, service, data) templates for valid calls.
VALID_CALLS = (
    ("light", "turn_on", {"brightness_pct": 40, "color_temp_kelvin": 3000}),
    ("light", "toggle", {}),
    ("switch", "turn_off", {}),
    ("climate", "set_temperature", {"temperature": 21.5}),
    ("cover", "set_cover_position", {"position": 30}),
    ("media_player", "volume_set", {"volume_level": 0.4}),
    ("lock", "unlock", {}),
)

type Validate = Callable[[Registry, Proposal], Any]


def build_registry(size: int) -> Registry:
    domains = [domain for domain, _, _ in VALID_CALLS] + ["sensor"]
    entities = []
    for index in range(size):
        domain = domains[index % len(domains)]
        area = AREAS[index % len(AREAS)]
        entities.append(
            ExposedEntity(
                f"{domain}.device_{index}",
                f"{area} {domain.replace('_', ' ')} {index}",
                aliases=(f"thing {index}",),
                area=area,
            )
        )
    return Registry(entities)


def proposals(registry: Registry, rng: random.Random) -> tuple[list[Any], list[Any]]:
    """Twenty valid and twenty refused (validator, proposal) pairs over random entities."""
    by_domain: dict[str, list[str]] = {}
    for entity_id in registry.entity_ids:
        by_domain.setdefault(entity_id.partition(".")[0], []).append(entity_id)

    def some(domain: str) -> str:
        return rng.choice(by_domain[domain])

    def call(entity: str, service: str, data: dict[str, Any] | None = None) -> Proposal:
        return Proposal("call_ha_service", {"entity": entity, "service": service, "data": data})

    valid: list[tuple[Validate, Proposal]] = []
    refused: list[tuple[Validate, Proposal]] = []
    for index in range(20):
        domain, service, data = VALID_CALLS[index % len(VALID_CALLS)]
        entity_id = some(domain)
        entity = registry.get(entity_id)
        assert entity is not None
        text = (entity_id, entity.name.upper(), entity.aliases[0])[index % 3]
        if index % 5 == 4:
            valid.append((validate_state_query, Proposal("get_device_state", {"entity": text})))
        else:
            valid.append((validate_tool_call, call(text, service, data)))
        light, lock = some("light"), some("lock")
        refused.append(
            (
                validate_tool_call,
                (
                    call(light.replace("i", "l", 1), "turn_on"),  # lookalike: unknown
                    call(f"{light}, {lock}", "turn_on"),  # smuggled second entity
                    call(light, "lock.unlock"),  # another domain's service
                    call(light, "turn_on", {"brightness_pct": 150}),  # out of range
                    call(light, "turn_on", {"entity_id": lock}),  # smuggled in data
                )[index % 5],
            )
        )
    for validate, proposal in valid:
        assert not isinstance(validate(registry, proposal), GuardRefusal), proposal
    for validate, proposal in refused:
        assert isinstance(validate(registry, proposal), GuardRefusal), proposal
    return valid, refused


def median_us(registry: Registry, cases: list[tuple[Validate, Proposal]]) -> float:
    """Each proposal's median µs per call over the repeats, averaged over the mix (a median over
    the pooled mix would jump between proposal kinds from run to run)."""
    samples: list[list[float]] = [[] for _ in cases]
    for _ in range(REPEATS):
        for (validate, proposal), times in zip(cases, samples, strict=True):
            start = time.perf_counter_ns()
            for _ in range(INNER):
                validate(registry, proposal)
            times.append((time.perf_counter_ns() - start) / INNER / 1000)
    return statistics.fmean(statistics.median(times) for times in samples)


def main() -> None:
    rng = random.Random(7)
    results = {}
    for size in SIZES:
        registry = build_registry(size)
        valid, refused = proposals(registry, rng)
        results[size] = (median_us(registry, valid), median_us(registry, refused))
    small, large = results[SIZES[0]], results[SIZES[-1]]
    print(f"{'entities':>8}  {'valid µs':>9}  {'refused µs':>10}")
    for size, (valid_us, refused_us) in results.items():
        print(f"{size:>8}  {valid_us:>9.2f}  {refused_us:>10.2f}")
    print(f"{'2000/50':>8}  {large[0] / small[0]:>9.2f}  {large[1] / small[1]:>10.2f}")


if __name__ == "__main__":
    main()

"""Exact selection over the resident matrix equals the reference, for every scorer and form.

The reference is `memory.selection.top_k_batch` on the same rows (itself checked against a
pure-Python oracle in tests/gpu/test_selection_reference.py). Small blocks make every matrix
here span several of them. A fake onnxruntime session that multiplies the way x86 kernels
without VNNI do (two u8 * s8 products added into a saturating int16) shows why the offset form
is refused there and the split form is not.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest

from custom_components.alto.memory import scoring, selection
from custom_components.alto.memory.matrix import CodeMatrix, Snapshot


def has_vnni() -> bool:
    """Whether this x86 CPU has VNNI, whose u8 * s8 sums MLAS uses without saturating."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8").split()
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags


def onnx_scorer(form: str) -> scoring.OnnxScorer:
    """The form, which must prove exact where the CPU has VNNI; skipped where it may not."""
    try:
        return scoring.OnnxScorer(form)
    except RuntimeError:
        if has_vnni():
            raise
        pytest.skip(f"the {form} form is not exact on this CPU (no VNNI)")


@pytest.fixture(params=["numpy", "offset", "split"])
def scorer(request: pytest.FixtureRequest) -> scoring.Scorer:
    """Each scorer: numpy, and onnxruntime in both forms."""
    return scoring.NumpyScorer() if request.param == "numpy" else onnx_scorer(request.param)


def snapshot_of(codes: np.ndarray, ids: np.ndarray, block_rows: int = 7) -> Snapshot:
    """A snapshot of the rows, appended in three parts across small blocks."""
    matrix = CodeMatrix(codes.shape[1], block_rows)
    for part in np.array_split(np.arange(len(codes)), 3):
        matrix.append(codes[part], ids[part], np.zeros(len(part)))
    return matrix.snapshot()


def random_ids(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unique ids in random order, the int64 extremes among them."""
    pool = np.concatenate([rng.integers(-(2**62), 2**62, size=n + 8), [2**63 - 1, -(2**63)]])
    return rng.permutation(np.unique(pool))[:n].astype(np.int64)


def cases(seed: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(codes, queries): random, tie-heavy, duplicated rows, and saturating extremes."""
    rng = np.random.default_rng(seed)
    yield (
        rng.integers(-127, 128, size=(50, 40), dtype=np.int8),
        rng.integers(-127, 128, size=(5, 40), dtype=np.int8),
    )
    yield (  # codes in {-1, 0, 1}: most scores collide
        rng.integers(-1, 2, size=(60, 9), dtype=np.int8),
        rng.integers(-1, 2, size=(6, 9), dtype=np.int8),
    )
    row = rng.integers(-127, 128, size=(1, 33), dtype=np.int8)
    yield np.repeat(row, 30, axis=0), np.concatenate([row, -row])  # thirty equal rows
    extremes = np.array([[127] * 64, [-127] * 64, [127, -127] * 32, [-127, 127] * 32], np.int8)
    yield np.repeat(extremes, 6, axis=0), extremes  # every pair sum at its largest


@pytest.mark.parametrize("seed", range(3))
def test_top_k_equals_the_reference(scorer: scoring.Scorer, seed: int) -> None:
    """Top k equals the reference."""
    for codes, queries in cases(seed):
        ids = random_ids(np.random.default_rng(seed), len(codes))
        snapshot = snapshot_of(codes, ids)
        for k in (1, 2, 7, 16, len(codes) - 1, len(codes), len(codes) + 3):
            expected = selection.top_k_batch(codes, ids, queries, k)
            assert scoring.top_k_batch(snapshot, queries, k, scorer=scorer) == expected
            for query, hits in zip(queries, expected, strict=True):
                assert scoring.top_k(snapshot, query, k, scorer=scorer) == hits


@pytest.mark.parametrize("seed", range(3))
def test_allowed_rows_equal_the_reference_on_those_rows(scorer: scoring.Scorer, seed: int) -> None:
    """Allowed rows equal the reference on those rows."""
    rng = np.random.default_rng(seed)
    for codes, queries in cases(seed):
        ids = random_ids(rng, len(codes))
        snapshot = snapshot_of(codes, ids)
        for share in (0.0, 0.05, 0.5, 1.0):
            allowed = rng.random(len(codes)) < share
            for k in (1, 3, 16, len(codes)):
                expected = selection.top_k_batch(codes[allowed], ids[allowed], queries, k)
                got = scoring.top_k_batch(snapshot, queries, k, scorer=scorer, allowed=allowed)
                assert got == expected


def test_scores_are_exact_and_narrow(scorer: scoring.Scorer) -> None:
    """Scores are exact and narrow."""
    rng = np.random.default_rng(4)
    codes = rng.integers(-127, 128, size=(40, 769), dtype=np.int8)
    codes[:2] = [[127], [-127]]
    queries = np.concatenate([codes[:2], rng.integers(-127, 128, (3, 769), dtype=np.int8)])
    got = scoring.scores(snapshot_of(codes, np.arange(40)), queries, scorer)
    assert got.dtype == np.int32
    assert np.array_equal(got, queries.astype(np.int64) @ codes.T.astype(np.int64))


def test_a_batch_scored_in_groups_selects_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch scored in groups selects the same."""
    rng = np.random.default_rng(5)
    codes = rng.integers(-2, 3, size=(90, 12), dtype=np.int8)
    queries = rng.integers(-2, 3, size=(64, 12), dtype=np.int8)
    ids = random_ids(rng, 90)
    monkeypatch.setattr(scoring, "SCORE_BYTES", 3 * 90 * 4)  # three queries per group
    assert scoring.top_k_batch(snapshot_of(codes, ids), queries, 5) == selection.top_k_batch(
        codes, ids, queries, 5
    )


@pytest.mark.parametrize(
    ("form", "dim"),
    [
        ("numpy", scoring.INT32_DIM + 1),
        ("offset", 66_311),  # the largest d whose 255 * 127 * d fits int32
        ("offset", 66_312),
        ("split", scoring.INT32_DIM),
        ("split", scoring.INT32_DIM + 1),
    ],
)
def test_dimensions_at_and_past_int32_accumulation_stay_exact(form: str, dim: int) -> None:
    """Up to each form's int32 bound the library computes; past it, numpy in int64."""
    scorer = scoring.NumpyScorer() if form == "numpy" else onnx_scorer(form)
    codes = np.full((3, dim), 127, dtype=np.int8)
    codes[1] = -127
    query = np.full((1, dim), 127, dtype=np.int8)
    exact = dim * 127 * 127
    got = scoring.scores(snapshot_of(codes, np.arange(3), block_rows=2), query, scorer)
    assert got.tolist() == [[exact, -exact, exact]]


def test_empty_inputs_and_refusals() -> None:
    """Empty inputs and refusals."""
    rng = np.random.default_rng(6)
    codes = rng.integers(-127, 128, size=(10, 8), dtype=np.int8)
    snapshot = snapshot_of(codes, np.arange(10))
    query = codes[0]
    assert scoring.top_k(snapshot, query, 0) == []
    assert scoring.top_k(snapshot, query, -2) == []
    assert scoring.top_k(snapshot, query, 3, allowed=np.zeros(10, bool)) == []
    assert scoring.top_k(CodeMatrix(8).snapshot(), query, 3) == []
    for bad, refusal in (
        (np.full(8, -128, np.int8), r"query codes must lie in \[-127, 127\]"),
        (np.ones(9, np.int8), "query dimension 9 != matrix dimension 8"),
        (np.ones(8, np.int16), "a query is a one-dimensional int8 code vector"),
    ):
        with pytest.raises(ValueError, match=refusal):
            scoring.top_k(snapshot, bad, 3)
    with pytest.raises(ValueError, match="a query is a one-dimensional int8 code vector"):
        scoring.top_k(snapshot, codes[:2], 3)  # a batch is not one query
    with pytest.raises(ValueError, match="allowed must be a mask with one entry per row"):
        scoring.top_k(snapshot, query, 3, allowed=np.ones(9, bool))


# -- the library's forms on a kernel that saturates ------------------------------------------


def saturating_matmul(a: np.ndarray, c: np.ndarray) -> np.ndarray:
    """u8 [q, d] x s8 [d, n] as VPMADDUBSW does it.

    Adjacent products are added into a saturating int16, and those pair sums into int32.
    """
    a32, c32 = a.astype(np.int32), c.astype(np.int32)
    if a32.shape[1] % 2:
        a32, c32 = np.pad(a32, ((0, 0), (0, 1))), np.pad(c32, ((0, 1), (0, 0)))
    out = np.zeros((len(a32), c32.shape[1]), dtype=np.int32)
    for k in range(0, a32.shape[1], 2):
        pair = a32[:, k, None] * c32[None, k] + a32[:, k + 1, None] * c32[None, k + 1]
        out += np.clip(pair, -(2**15), 2**15 - 1)
    return out


class SaturatingSession:
    """Stands in for onnxruntime.InferenceSession: runs Alto's three graphs on that kernel."""

    def __init__(self, model: bytes, *args: Any, **kwargs: Any) -> None:
        """Recognize which of Alto's graphs `model` is."""
        self.kind = {
            scoring.offset_model(): "offset",
            scoring.zero_point_model(): "zero_point",
            scoring.split_model(): "split",
        }[model]

    def run(self, outputs: None, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The graph's output, computed with the saturating kernel."""
        c = feed["C"]
        if self.kind == "split":
            y = saturating_matmul(feed["P"], c) - saturating_matmul(feed["N"], c)
        elif self.kind == "offset":
            y = saturating_matmul(feed["A"], c) - feed["S"]
        else:  # MLAS subtracts A's zero point times C's column sums after the product
            y = saturating_matmul(feed["A"], c) - int(feed["Z"]) * c.sum(0, dtype=np.int32)
        return [y]


def test_without_vnni_the_offset_form_is_refused_and_the_split_form_is_exact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without vnni the offset form is refused and the split form is exact."""
    monkeypatch.setattr(onnxruntime, "InferenceSession", SaturatingSession)
    with pytest.raises(RuntimeError):
        scoring.OnnxScorer("offset")
    scorer = scoring.OnnxScorer()
    assert scorer.form == "split"
    for codes, queries in cases(7):
        ids = random_ids(np.random.default_rng(7), len(codes))
        expected = selection.top_k_batch(codes, ids, queries, 5)
        assert scoring.top_k_batch(snapshot_of(codes, ids), queries, 5, scorer=scorer) == expected


class WrongSession(SaturatingSession):
    """A session whose every score is off by one."""

    def run(self, outputs: None, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The saturating session's output plus one."""
        return [super().run(outputs, feed)[0] + 1]


def test_a_library_that_proves_no_form_is_not_used(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A library that proves no form is not used."""
    monkeypatch.setattr(onnxruntime, "InferenceSession", WrongSession)
    with caplog.at_level(logging.WARNING, scoring.__name__):
        scorer = scoring.default_scorer.__wrapped__()
    assert isinstance(scorer, scoring.NumpyScorer)
    [warning] = [r for r in caplog.records if r.name == scoring.__name__]
    assert "not exact" in warning.getMessage()


def test_without_onnxruntime_numpy_scores(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Without onnxruntime numpy scores."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import raises ImportError
    with caplog.at_level(logging.WARNING, scoring.__name__):
        scorer = scoring.default_scorer.__wrapped__()
    assert scorer.name == "numpy"
    assert len([r for r in caplog.records if r.name == scoring.__name__]) == 1


def test_the_process_shares_one_scorer() -> None:
    """The process shares one scorer."""
    scorer = scoring.default_scorer()
    assert scorer is scoring.default_scorer()
    assert isinstance(scorer, scoring.OnnxScorer)  # installed with chromadb
    if has_vnni():
        assert scorer.form == "offset"


def test_a_snapshot_scores_only_its_rows_while_the_matrix_grows(scorer: scoring.Scorer) -> None:
    """Rows appended into the snapshot's last block after it was taken are not its rows."""
    rng = np.random.default_rng(8)
    codes = rng.integers(-127, 128, size=(40, 24), dtype=np.int8)
    ids = random_ids(rng, 40)
    matrix = CodeMatrix(24, block_rows=32)
    matrix.append(codes[:21], ids[:21], np.zeros(21))
    older = matrix.snapshot()
    matrix.append(codes[21:], ids[21:], np.zeros(19))  # fills older's last block in place
    queries = codes[:3]
    assert older.blocks[-1].width == 21 < older.blocks[-1].codes.shape[1]
    expected = selection.top_k_batch(codes[:21], ids[:21], queries, 50)
    assert scoring.top_k_batch(older, queries, 50, scorer=scorer) == expected
    newer = matrix.snapshot()
    assert scoring.top_k_batch(newer, queries, 50, scorer=scorer) == selection.top_k_batch(
        codes, ids, queries, 50
    )

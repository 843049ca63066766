"""memory.selection against a brute-force pure-Python oracle: exact scores and a total order."""

from __future__ import annotations

import numpy as np
import pytest

from custom_components.alto.memory import selection


def dot(row: list[int], query: list[int]) -> int:
    """The integer dot product of two code vectors."""
    return sum(a * b for a, b in zip(row, query, strict=True))


def oracle(codes: np.ndarray, ids: np.ndarray, query: np.ndarray, k: int) -> list[tuple[int, int]]:
    """Python-int dot products, sorted by (-score, id): obviously correct, slow."""
    q = query.tolist()
    scored = [(i, dot(r, q)) for r, i in zip(codes.tolist(), ids.tolist(), strict=True)]
    scored.sort(key=lambda pair: (-pair[1], pair[0]))
    return scored[: max(k, 0)]


def random_codes(rng: np.random.Generator, n: int, d: int, alphabet: int = 127) -> np.ndarray:
    """Random codes over ``alphabet``."""
    return rng.integers(-alphabet, alphabet + 1, size=(n, d), dtype=np.int8)


def random_ids(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unique ids in random order; negative ones and the int64 extremes take part."""
    pool = np.concatenate([rng.integers(-(2**62), 2**62, size=n), [2**63 - 1, -(2**63)]])
    return rng.permutation(np.unique(pool))[:n].astype(np.int64)


@pytest.mark.parametrize("seed", range(6))
def test_top_k_matches_oracle_with_many_ties(seed: int) -> None:
    """Top k matches oracle with many ties."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 120)), int(rng.integers(1, 12))
    codes = random_codes(rng, n, d, alphabet=1)  # codes in {-1, 0, 1}: scores collide a lot
    ids = random_ids(rng, n)
    for query in random_codes(rng, 5, d, alphabet=1):
        for k in (1, 2, 3, 7, n - 1, n, n + 5):
            assert selection.top_k(codes, ids, query, k) == oracle(codes, ids, query, k)


def test_duplicate_vectors_tie_and_order_by_id() -> None:
    """Duplicate vectors tie and order by id."""
    rng = np.random.default_rng(1)
    row = random_codes(rng, 1, 16)
    codes = np.repeat(row, 9, axis=0)
    ids = np.array([40, -3, 17, 2**40, 5, 0, 99, -(2**50), 6], dtype=np.int64)
    hits = selection.top_k(codes, ids, row[0], 5)
    score = int(np.dot(row[0].astype(np.int64), row[0].astype(np.int64)))
    assert hits == [(i, score) for i in sorted(ids.tolist())[:5]]


def test_ties_at_the_cut_keep_the_lowest_ids() -> None:
    """Ties at the cut keep the lowest ids."""
    codes = np.array([[1], [2], [2], [2], [0]], dtype=np.int8)
    ids = np.array([10, 30, 20, 40, 1], dtype=np.int64)
    assert selection.top_k(codes, ids, np.array([1], np.int8), 2) == [(20, 2), (30, 2)]


def test_empty_and_degenerate_inputs() -> None:
    """No rows, one row, and k of zero or below give empty or exact answers."""
    empty = np.zeros((0, 8), dtype=np.int8)
    query = np.ones(8, dtype=np.int8)
    assert selection.top_k(empty, np.zeros(0, np.int64), query, 5) == []
    one = np.full((1, 8), 3, dtype=np.int8)
    assert selection.top_k(one, np.array([7]), query, 5) == [(7, 24)]
    assert selection.top_k(one, np.array([7]), query, 0) == []
    assert selection.top_k(one, np.array([7]), query, -1) == []
    assert selection.top_k_batch(empty, np.zeros(0, np.int64), np.ones((3, 8), np.int8), 4) == [
        [],
        [],
        [],
    ]


def test_k_larger_than_n_returns_everything_in_order() -> None:
    """K larger than n returns everything in order."""
    rng = np.random.default_rng(2)
    codes, ids = random_codes(rng, 13, 20), random_ids(rng, 13)
    query = random_codes(rng, 1, 20)[0]
    hits = selection.top_k(codes, ids, query, 1000)
    assert len(hits) == 13
    assert hits == oracle(codes, ids, query, 1000)


@pytest.mark.parametrize("batch", [1, 2, 3, 17, 63, 64])
def test_batch_equals_single_queries(batch: int) -> None:
    """A batch answers as its queries one at a time."""
    rng = np.random.default_rng(batch)
    codes, ids = random_codes(rng, 60, 24, alphabet=2), random_ids(rng, 60)
    queries = random_codes(rng, batch, 24, alphabet=2)
    got = selection.top_k_batch(codes, ids, queries, 9)
    assert got == [oracle(codes, ids, q, 9) for q in queries]


@pytest.mark.parametrize("d", [768, 1040, 1041, 1100])
def test_scores_are_exact_on_both_matmul_paths(d: int) -> None:
    """Scores are exact on both matmul paths."""
    rng = np.random.default_rng(d)
    codes = random_codes(rng, 300, d)
    codes[0] = 127
    codes[1] = -127
    queries = random_codes(rng, 3, d)
    queries[0] = 127
    expected = np.array([[dot(r, q) for r in codes.tolist()] for q in queries.tolist()])
    assert np.array_equal(selection.scores(codes, queries), expected)
    assert np.array_equal(selection.scores(codes, queries[1]), expected[1])


def test_int64_path_is_exact_where_float32_is_not() -> None:
    """Above 2**24 float32 has no odd integers; the int64 path must still get them right."""
    d = 1100
    codes = np.full((2, d), 127, dtype=np.int8)
    query = np.full(d, 127, dtype=np.int8)
    query[-1] = 126
    exact = (d - 1) * 127 * 127 + 127 * 126
    assert exact > 2**24
    assert exact % 2 == 1
    assert selection.scores(codes, query).tolist() == [exact, exact]


def test_scores_span_several_chunks() -> None:
    """Scores computed chunk by chunk equal one int64 matmul."""
    rng = np.random.default_rng(3)
    n = 2 * selection._CHUNK_ROWS + 5
    codes, query = random_codes(rng, n, 8), random_codes(rng, 1, 8)[0]
    expected = codes.astype(np.int64) @ query.astype(np.int64)
    assert np.array_equal(selection.scores(codes, query), expected)


def test_refuses_mismatched_or_wrong_inputs() -> None:
    """Refuses mismatched or wrong inputs."""
    codes = np.zeros((3, 4), dtype=np.int8)
    with pytest.raises(ValueError, match="query dimension 5 != matrix dimension 4"):
        selection.top_k(codes, np.arange(3), np.zeros(5, np.int8), 1)
    with pytest.raises(TypeError):
        selection.top_k(codes.astype(np.float32), np.arange(3), np.zeros(4, np.int8), 1)
    with pytest.raises(ValueError, match="one id per row"):
        selection.top_k(codes, np.arange(2), np.zeros(4, np.int8), 1)


# -- quantize ------------------------------------------------------------------------------


def test_quantize_shapes_range_and_zero() -> None:
    """Quantize shapes range and zero."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(50, 33)) * 10.0 ** rng.integers(-30, 30, size=(50, 1))
    codes = selection.quantize(x)
    assert codes.dtype == np.int8
    assert codes.shape == (50, 33)
    assert codes.min() >= -127
    assert codes.max() <= 127
    assert np.array_equal(selection.quantize(x[7]), codes[7])
    assert not selection.quantize(np.zeros(9)).any()
    assert selection.quantize([[0.0, 0.0], [0.0, -2.0]]).tolist() == [[0, 0], [0, -127]]


def test_quantize_is_the_rounded_unit_vector() -> None:
    """Quantize is the rounded unit vector."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(40, 64))
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    assert np.abs(selection.quantize(x) - unit * 127).max() <= 0.5 + 1e-9


def test_quantize_is_scale_invariant_for_exact_scalings() -> None:
    """Quantize is scale invariant for exact scalings."""
    rng = np.random.default_rng(6)
    x = rng.normal(size=(20, 48))
    assert np.array_equal(selection.quantize(x), selection.quantize(x * 4.0))
    assert np.array_equal(selection.quantize(-x), -selection.quantize(x))


def test_quantize_rounds_half_to_even() -> None:
    """Quantize rounds half to even."""
    # Norm 254 exactly, so the components scale to 0.5, 0.5, 33.5 and 122.5.
    x = np.array([1.0, 1.0, 67.0, 245.0])
    assert selection.quantize(x).tolist() == [0, 0, 34, 122]
    assert selection.quantize(-x).tolist() == [0, 0, -34, -122]


def test_quantize_refuses_non_finite() -> None:
    """Quantize refuses non finite."""
    with pytest.raises(ValueError, match="vectors must be finite"):
        selection.quantize([1.0, float("nan")])


def test_best_chooses_only_among_eligible_rows() -> None:
    """Rows set to the dtype's minimum are never chosen when `eligible` counts the others."""
    rng = np.random.default_rng(7)
    scores = rng.integers(-3, 4, size=40).astype(np.int32)
    ids = random_ids(rng, 40)
    hidden = rng.random(40) < 0.6
    masked = np.where(hidden, np.iinfo(np.int32).min, scores)
    eligible = int((~hidden).sum())
    for k in (1, 5, eligible, eligible + 3, 40):
        expected = sorted(
            zip(ids[~hidden].tolist(), scores[~hidden].tolist(), strict=True),
            key=lambda pair: (-pair[1], pair[0]),
        )[:k]
        assert selection.best(masked, ids, k, eligible=eligible) == expected

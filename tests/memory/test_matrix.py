"""The resident code matrix: column blocks, immutable snapshots, appends in place, refusals."""

from __future__ import annotations

import numpy as np
import pytest

from custom_components.alto.memory.matrix import CodeMatrix, Snapshot


def grow(
    matrix: CodeMatrix, rng: np.random.Generator, sizes: list[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Append random rows in steps of `sizes`; the row-major codes, ids and tags appended."""
    codes, ids, tags = [], [], []
    for size in sizes:
        part = rng.integers(-127, 128, size=(size, matrix.dim), dtype=np.int8)
        part_ids = rng.integers(-(2**62), 2**62, size=size)
        part_tags = rng.integers(0, 9, size=size)
        matrix.append(part, part_ids, part_tags)
        codes.append(part)
        ids.append(part_ids)
        tags.append(part_tags)
    return np.concatenate(codes), np.concatenate(ids), np.concatenate(tags)


def assert_holds(snapshot: Snapshot, codes: np.ndarray, ids: np.ndarray, tags: np.ndarray) -> None:
    """Assert the snapshot holds exactly these codes, ids and tags, block by block."""
    assert len(snapshot) == len(codes)
    assert np.array_equal(snapshot.take(np.arange(len(codes))), codes)
    assert np.array_equal(snapshot.ids, ids)
    assert np.array_equal(snapshot.tags, tags)
    first = 0
    for block, exact in zip(snapshot.blocks, snapshot.exact_blocks(), strict=True):
        rows = codes[first : first + block.width]
        assert block.first == first
        assert block.codes.flags.c_contiguous
        assert np.array_equal(block.codes[:, : block.width], rows.T)
        assert np.array_equal(block.sums[: block.width], rows.sum(axis=1))
        assert np.array_equal(exact, rows.T)
        assert exact.flags.c_contiguous
        first += block.width
    assert first == len(codes)


def test_blocks_grow_and_every_snapshot_keeps_its_rows() -> None:
    """Blocks grow and every snapshot keeps its rows."""
    rng = np.random.default_rng(1)
    matrix = CodeMatrix(6, block_rows=5)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    seen: list[tuple[Snapshot, int]] = []
    for sizes in ([0], [1], [3], [1], [12], [5], [2, 2]):
        parts.append(grow(matrix, rng, sizes))
        codes, ids, tags = (np.concatenate(column) for column in zip(*parts, strict=True))
        snapshot = matrix.snapshot()
        assert_holds(snapshot, codes, ids, tags)
        widths = [block.width for block in snapshot.blocks]
        assert all(w == 5 for w in widths[:-1])
        assert not widths or 0 < widths[-1] <= 5
        seen.append((snapshot, len(codes)))
    for snapshot, n in seen:  # later appends changed none of the earlier snapshots
        assert_holds(snapshot, codes[:n], ids[:n], tags[:n])
    assert len({snapshot.origin for snapshot, _ in seen}) == 1


def test_appends_write_in_place_past_every_snapshot() -> None:
    """Appends write in place past every snapshot.

    One row at a time, a matrix reallocates its last block a logarithmic number of times, and
    never moves a full block.
    """
    rng = np.random.default_rng(2)
    matrix = CodeMatrix(4, block_rows=256)
    grow(matrix, rng, [300])
    full = matrix.snapshot().blocks[0].codes
    arrays = set()
    for _ in range(200):
        grow(matrix, rng, [1])
        last = matrix.snapshot().blocks[-1].codes
        arrays.add(last.__array_interface__["data"][0])
        assert np.shares_memory(matrix.snapshot().blocks[0].codes, full)
    assert len(arrays) <= 3  # 64 -> 128 -> 256 columns


def test_retag_leaves_earlier_snapshots_alone() -> None:
    """Retag leaves earlier snapshots alone."""
    matrix = CodeMatrix(3)
    matrix.append(np.ones((4, 3), np.int8), np.arange(4), np.array([1, 1, 3, 3]))
    old = matrix.snapshot()
    matrix.retag(np.array([0, 2]), np.array([0, 2]))
    assert old.tags.tolist() == [1, 1, 3, 3]
    assert matrix.snapshot().tags.tolist() == [0, 1, 2, 3]


def test_snapshots_are_read_only() -> None:
    """Snapshots are read only."""
    matrix = CodeMatrix(3)
    matrix.append(np.ones((2, 3), np.int8), np.arange(2), np.zeros(2))
    snapshot = matrix.snapshot()
    block = snapshot.blocks[0]
    for array in (block.codes, block.sums, snapshot.ids, snapshot.tags):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 5


def test_refusals_change_nothing() -> None:
    """Refusals change nothing."""
    matrix = CodeMatrix(4)
    matrix.append(np.ones((2, 4), np.int8), np.array([1, 2]), np.zeros(2))
    refused = [
        (np.full((1, 4), -128, np.int8), [3], [0]),  # outside [-127, 127]
        (np.ones((1, 5), np.int8), [3], [0]),  # another dimension
        (np.ones((1, 4), np.int16), [3], [0]),  # not int8
        (np.ones((2, 4), np.int8), [3], [0]),  # one id for two rows
        (np.ones((1, 4), np.int8), [3], [0, 0]),  # two tags for one row
    ]
    for codes, ids, tags in refused:
        with pytest.raises((ValueError, TypeError)):
            matrix.append(codes, np.array(ids), np.array(tags))
    snapshot = matrix.snapshot()
    assert len(matrix) == 2
    assert snapshot.ids.tolist() == [1, 2]
    assert np.array_equal(snapshot.take(np.arange(2)), np.ones((2, 4), np.int8))
    with pytest.raises(ValueError, match="dim and block_rows must be positive"):
        CodeMatrix(0)


def test_from_blocks_adopts_a_snapshot_layout() -> None:
    """From blocks adopts a snapshot layout."""
    rng = np.random.default_rng(3)
    source = CodeMatrix(5, block_rows=4)
    codes, ids, tags = grow(source, rng, [10])
    blocks = source.snapshot().exact_blocks()
    adopted = CodeMatrix.from_blocks(blocks, ids, tags, block_rows=4)
    assert adopted.origin != source.origin
    assert_holds(adopted.snapshot(), codes, ids, tags)
    for block, given in zip(adopted.snapshot().blocks, blocks, strict=True):
        assert np.shares_memory(block.codes, given)  # adopted, not copied
    more, more_ids, more_tags = grow(adopted, rng, [3])
    assert_holds(
        adopted.snapshot(),
        np.concatenate([codes, more]),
        np.concatenate([ids, more_ids]),
        np.concatenate([tags, more_tags]),
    )


@pytest.mark.parametrize(
    ("blocks", "refusal"),
    [
        ([], "needs at least one block"),
        # a short block before the last
        ([np.ones((5, 3), np.int8), np.ones((5, 4), np.int8)], "every block but the last"),
        # an empty last block
        ([np.ones((5, 4), np.int8), np.ones((5, 0), np.int8)], "every block but the last"),
        # two dimensions
        ([np.ones((5, 4), np.int8), np.ones((6, 2), np.int8)], "arrays of one dimension"),
        ([np.full((5, 4), -128, np.int8)], r"codes must lie in \[-127, 127\]"),
        ([np.ones((5, 4), np.int16)], "blocks must be int8"),
    ],
)
def test_from_blocks_refuses_what_no_matrix_holds(blocks: list[np.ndarray], refusal: str) -> None:
    """From blocks refuses what no matrix holds."""
    n = sum(block.shape[1] for block in blocks)
    with pytest.raises(ValueError, match=refusal):
        CodeMatrix.from_blocks(blocks, np.arange(n), np.zeros(n), block_rows=4)


def test_from_blocks_needs_one_id_and_tag_per_row() -> None:
    """From blocks needs one id and tag per row."""
    with pytest.raises(ValueError, match="one id and one tag per row"):
        CodeMatrix.from_blocks([np.ones((5, 4), np.int8)], np.arange(3), np.zeros(3), 4)
    with pytest.raises(ValueError, match="one id and one tag per row"):
        CodeMatrix.from_blocks([np.ones((5, 4), np.int8)], np.arange(4), np.zeros(3), 4)

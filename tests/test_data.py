"""Sliding windows, the split, corpus decoding and the synthetic tasks."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from gptviz.data import (
    SlidingWindowDataset,
    induction_corpus,
    sorting_corpus,
    synthetic_corpus,
    train_val_split,
)


def test_windows_follow_the_seeds_definition():
    ds = SlidingWindowDataset(list(range(10)), context_length=4, stride=3)
    # i in range(0, len - N, stride) = 0, 3; x = ids[i:i+N], y = ids[i+1:i+N+1]
    assert len(ds) == 2
    assert [t.tolist() for t in ds[0]] == [[0, 1, 2, 3], [1, 2, 3, 4]]
    assert [t.tolist() for t in ds[1]] == [[3, 4, 5, 6], [4, 5, 6, 7]]


@given(st.integers(2, 60), st.integers(1, 8), st.integers(1, 5))
def test_window_count_and_shift(n, context_length, stride):
    if n < context_length + 1:
        with pytest.raises(ValueError, match="one window needs"):
            SlidingWindowDataset(list(range(n)), context_length, stride)
        return
    ds = SlidingWindowDataset(list(range(n)), context_length, stride)
    assert len(ds) == len(range(0, n - context_length, stride))
    x, y = ds.batch(torch.arange(len(ds)))  # (n_windows, N) each
    assert (y == x + 1).all()  # ids are their positions: the target is the next token


def test_random_batches_are_seeded():
    ds = SlidingWindowDataset(list(range(100)), 8)
    a = ds.random_batch(4, torch.Generator().manual_seed(1))
    b = ds.random_batch(4, torch.Generator().manual_seed(1))
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True)) and a[0].shape == (4, 8)


def test_fixed_batches_cover_the_set_evenly_and_repeat():
    ds = SlidingWindowDataset(list(range(50)), 4)
    batches = ds.fixed_batches(n_batches=3, batch_size=2)
    assert [b[0][:, 0].tolist() for b in batches] == [[0, 9], [18, 27], [36, 45]]
    again = ds.fixed_batches(3, 2)
    assert all(torch.equal(a[0], b[0]) for a, b in zip(batches, again, strict=True))


def test_split_keeps_order_and_checks_length():
    train, val = train_val_split(list(range(100)), 0.1, context_length=4)
    assert train.tolist() == list(range(90)) and val.tolist() == list(range(90, 100))
    with pytest.raises(ValueError, match="too short to hold one window"):
        train_val_split(list(range(20)), 0.1, context_length=4)


def test_induction_lines_repeat_their_first_half():
    lines = induction_corpus(n_lines=50, length=7, seed=3).splitlines()
    assert len(lines) == 50
    for line in lines:
        first, second = line.split("|")
        assert first == second and len(first) == 7
    assert induction_corpus(n_lines=5, seed=3) == induction_corpus(n_lines=5, seed=3)


def test_sorting_lines_are_sorted():
    for line in sorting_corpus(n_lines=50, length=5, seed=2).splitlines():
        source, target = line.split(">")
        assert target == "".join(sorted(source))


def test_synthetic_by_name_and_bad_arguments():
    assert synthetic_corpus("sorting", n_lines=3) == sorting_corpus(n_lines=3)
    with pytest.raises(ValueError, match="unknown synthetic corpus"):
        synthetic_corpus("parity")
    with pytest.raises(ValueError, match="separators"):
        induction_corpus(alphabet="ab|")


def test_induction_lines_of_varying_length_repeat_exactly():
    from gptviz.data import induction_corpus

    lines = induction_corpus(n_lines=200, length=4, max_length=9, seed=3).splitlines()
    halves = [line.split("|") for line in lines]
    assert all(a == b for a, b in halves)
    assert {len(a) for a, _ in halves} == set(range(4, 10))
    with pytest.raises(ValueError, match="max_length"):
        induction_corpus(n_lines=1, length=5, max_length=4)

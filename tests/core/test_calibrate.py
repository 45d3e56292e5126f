"""Calibration of the rebuilt token axis onto the provider's, against an independent model.

The independent computation: a thread is a list of messages, each with a local size and a
hidden provider size (the local one times a per-message ratio, plus tokens the log does
not show riding on it). The provider's inclusive input of call n is the sum of the hidden
sizes of what it sent. Calibration only sees local sizes and reported totals; where each
message starts on the provider's axis is then known exactly (a message's provider size is
the growth it caused), so every mapped block boundary can be checked.
"""

from __future__ import annotations

import random
from itertools import accumulate

import pytest

from cacheviz.money._simulate import material_shortfall
from cacheviz.prefix._calibrate import (
    CALIBRATED,
    ESTIMATED,
    EXACT,
    RESCALED,
    calibrate,
    map_position,
    unlogged_versions,
)


def _thread(seed: int, n: int = 12):
    rng = random.Random(seed)
    unlogged = rng.randint(5_000, 30_000)  # sized from call 0: local = provider
    local_sizes, provider_sizes = [], []
    for _ in range(n):
        size = rng.randint(20, 4_000)
        ratio = rng.uniform(0.9, 1.3)  # the local tokenizer counts short or long
        riding = rng.choice([0, 0, 0, rng.randint(50, 3_000)])  # a reminder, an attachment
        local_sizes.append(size)
        provider_sizes.append(round(size * ratio) + riding)
    return unlogged, local_sizes, provider_sizes


@pytest.mark.parametrize("seed", range(20))
def test_block_boundaries_land_where_the_provider_counted_them(seed):
    unlogged, local_sizes, provider_sizes = _thread(seed)
    # call 0: the unlogged prefix is sized as its reported input minus the visible
    # blocks, so it absorbs message 0's difference (the split is unknowable: message 0
    # keeps its local size); every later message's provider size is its growth
    first_provider = unlogged + provider_sizes[0]
    hidden = first_provider - local_sizes[0]
    sizes = [local_sizes[0], *provider_sizes[1:]]
    local = [[0, *accumulate([hidden, *local_sizes[: k + 1]])] for k in range(len(local_sizes))]
    truth = [[0, *accumulate([hidden, *sizes[: k + 1]])] for k in range(len(sizes))]
    reported = [t[-1] for t in truth]
    previous = [None, *range(len(local) - 1)]
    common = [None, *(local[k - 1][-1] for k in range(1, len(local)))]
    result = calibrate(local, reported, previous, common, threads=["main"] * len(local))
    assert result.offsets == truth  # every boundary, exactly
    assert all(b == CALIBRATED for b in result.basis)
    # and the local count is not the provider's
    assert any(lo[-1] != tr[-1] for lo, tr in zip(local, truth, strict=True))


def test_positions_inside_a_block_are_interpolated_and_never_exceed_the_request():
    local = [[0, 100, 200], [0, 100, 200, 300]]
    reported = [400, 700]
    calibration = calibrate(local, reported, [None, 0], [None, 200])
    assert calibration.offsets == [[0, 200, 400], [0, 200, 400, 700]]
    assert calibration.at(1, local[1], 150) == 300
    assert calibration.at(1, local[1], 250) == 550
    assert calibration.at(1, local[1], 10_000) == 700  # capped at the reported input


def test_a_request_smaller_than_its_shared_part_keeps_its_head_and_is_rescaled():
    # call 1 shares all of call 0 locally but the provider counted less (results cleared)
    local = [[0, 1000, 3000], [0, 1000, 3000, 3500]]
    reported = [3000, 2500]
    calibration = calibrate(local, reported, [None, 0], [None, 3000], heads=[1000, 1000])
    assert calibration.basis == [CALIBRATED, RESCALED]
    assert calibration.offsets[1][1] == 1000  # the unlogged prefix stays where it was
    assert calibration.offsets[1][-1] == 2500
    assert calibration.offsets[1] == sorted(calibration.offsets[1])


def test_calls_without_usage_are_estimated_at_the_thread_rate_or_exact():
    local = [[0, 100], [0, 100, 200], [0, 100, 200, 300]]
    reported = [150, 300, None]
    estimated = calibrate(local, reported, [None, 0, 1], [None, 100, 200])
    assert estimated.basis == [CALIBRATED, CALIBRATED, ESTIMATED]
    assert estimated.offsets[2] == [0, 150, 300, 450]  # the growth rate of call 1 (1.5)
    exact = calibrate(local, [None] * 3, [None, 0, 1], [None, 100, 200], exact=[True] * 3)
    assert exact.basis == [EXACT] * 3
    assert exact.offsets == local


def test_map_position_is_monotone():
    local, mapped = [0, 10, 10, 30], [0, 5, 5, 50]
    values = [map_position(local, mapped, x) for x in range(0, 35)]
    assert values == sorted(values)
    assert values[10] == 5 and values[30] == 50


def test_an_unlogged_prefix_version_starts_where_the_read_stops_inside_it():
    threads = ["main"] * 4
    unlogged = [20_000] * 4
    offered = [0, 30_000, 31_000, 32_000]
    read = [0, 29_990, 11_000, 30_990]  # call 2 reads only the shared static part
    gaps = [None, 5.0, 6.0, 7.0]
    versions = unlogged_versions(
        threads, unlogged, offered, read, gaps, [3600] * 4, material_shortfall
    )
    assert versions == [0, 0, 1, 1]
    # after an idle gap beyond the TTL the same read is an expiry, not a change
    late = [None, 5.0, 4_000.0, 7.0]
    versions = unlogged_versions(
        threads, unlogged, offered, read, late, [3600] * 4, material_shortfall
    )
    assert versions == [0] * 4

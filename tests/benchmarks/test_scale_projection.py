"""benchmarks/scale.py's model: the projection for the worker counts it measured stands next to
the measurement, and its limit as workers grow is bounded by the longest chunk, never the
uncapped 1 / serial share."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import scale  # noqa: E402

# 1 worker: wall 100 s = writing 20 + stateless 60 (four steps, the longest 30) + orchestration 20
ONE = {"workers": 1, "wall_s": 100.0, "writing_s": 20.0, "stateless_s": 60.0, "stateless_step_s": [30.0, 10.0, 10.0, 10.0]}
TWO = {"workers": 2, "wall_s": 80.0}


def test_the_projection_for_one_worker_is_the_measurement_and_more_workers_stop_at_the_longest_chunk():
    projection = scale.project(ONE, (1, 2, 4, 64))
    assert projection == {1: 100.0, 2: 70.0, 4: 70.0, 64: 70.0}  # 40 serial + max(30, 30) ...
    assert scale.limit_seconds(ONE) == 70.0  # ... the longest chunk: 1.43x, not 1 / 0.4 = 2.5x


def test_measured_and_projected_figures_stand_side_by_side():
    rows = scale.compared([ONE, TWO], scale.project(ONE, (1, 2, 4)))
    assert [(r["workers"], r["measured_s"], r["projected_s"]) for r in rows] == [
        (1, 100.0, 100.0),
        (2, 80.0, 70.0),
        (4, None, 70.0),
    ]
    assert rows[1]["measured_speedup"] == 1.25 and rows[2]["measured_speedup"] is None

"""What a search does with the time a question names (``mind_core.search.time_window`` reads it):
a soft boost for frames near it (``SearchConfig.time_weight``), the frames of that time when the
question is only a date, and the mind's "now" that relative dates ("last week") are read from.

A frame's match is multiplied by ``1 - time_weight * (1 - time)``, ``time`` being 1 inside the
asked window and decaying outside it, so frames far from the asked time drop and none is
filtered; only ``since``/``until`` filter.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import datetime, timedelta

from mind_core.search.lanes import Scope, VectorLane
from mind_core.search.results import LaneHit
from mind_core.search.scoring import borrowed_time, borrowed_time_sql
from mind_core.search.time_window import TimeWindow, question_window
from mind_core.search.until_changed import UntilChanged
from mind_core.store.db import IN_LIST, Database, in_list
from mind_core.store.frames import Frame, FrameStore, time_bound
from mind_core.timestamps import format_utc, parse_instant, utc_now

# The time boost: a frame outside the question's window scores exp(-distance / scale), the scale
# being the window's own length (at least ``SearchConfig.time_scale_days``; a month for a window
# open on one side).
OPEN_WINDOW_SCALE_DAYS = 31.0


def decay_scale_days(window: TimeWindow, shortest_days: float) -> float:
    """The days over which nearness to ``window`` decays by ``1/e`` (``OPEN_WINDOW_SCALE_DAYS``)."""
    return max(window.length_days or OPEN_WINDOW_SCALE_DAYS, shortest_days)


def own_time_inside(frame: Frame, window: TimeWindow) -> bool:
    """Whether the frame's event time is its own (not ``borrowed_time``) and inside the window."""
    if borrowed_time(frame):
        return False
    try:
        return window.distance_days(parse_instant(frame.created_at)) == 0.0
    except ValueError:
        return False


class TimeLane:
    """The time parts of a search over one mind."""

    def __init__(self, db: Database, frames: FrameStore, kept: UntilChanged) -> None:
        self.db = db
        self.frames = frames
        self.kept = kept

    def window(self, query: str, asked_from: datetime | None = None) -> TimeWindow | None:
        """The time the query names, relative dates read from ``asked_from`` (else the mind's
        latest event time); None when it names none."""
        return question_window(query, asked_from or self.latest_event_time())

    def memory_near(self, window: TimeWindow, shortest_days: float) -> bool:
        """Whether any frame's event time is inside the window or within one decay scale of it
        (as ``time_scores`` asks of the candidates)."""
        scale = timedelta(days=decay_scale_days(window, shortest_days))
        clauses, params = ["1"], []
        if window.start is not None:
            clauses.append("created_at >= ?")
            params.append(format_utc(window.start - scale))
        if window.end is not None:
            clauses.append("created_at < ?")
            params.append(format_utc(window.end + scale))
        sql = f"SELECT EXISTS(SELECT 1 FROM memory_frames WHERE {' AND '.join(clauses)})"
        return bool(self.db.scalar(sql, params))

    def time_scores(
        self, frame_ids: list[int], window: TimeWindow, shortest_days: float, keep_far: bool = False
    ) -> tuple[TimeWindow | None, dict[int, float]]:
        """The window if it is used and, per frame, 0..1: how near its event time is to it (1
        inside, ``exp(-distance / scale)`` outside). A window that none of the frames is inside or
        within one scale of names a time the candidates do not share (LoCoMo's "last year" is
        before the conversation began) and is not used, unless ``keep_far``."""
        if not frame_ids:
            return None, {}
        rows = self.db.query(
            f"SELECT id, created_at FROM memory_frames WHERE id IN ({IN_LIST})", (in_list(frame_ids),)
        )
        distances = {}
        for row in rows:
            try:
                distances[row[0]] = window.distance_days(parse_instant(row[1]))
            except ValueError:
                continue
        scale = decay_scale_days(window, shortest_days)
        if distances and (keep_far or min(distances.values()) <= scale):
            return window, {frame_id: math.exp(-days / scale) for frame_id, days in distances.items()}
        return None, {}

    def window_hits(
        self, query: str, window: TimeWindow, limit: int, scope: Scope, vectors: VectorLane
    ) -> list[LaneHit]:
        """The frames inside the window, for a question that is only a date and filler ("what
        happened in June 2010"): every lane word was the date, so the keyword lane holds the
        window's frames instead, each scoring 1; the nearest in meaning first (the vector lane
        within the window), else the latest."""
        first = format_utc(window.start) if window.start is not None else None
        last = format_utc(window.end - timedelta(milliseconds=1)) if window.end is not None else None
        if scope.since is not None and (first is None or time_bound(scope.since, end=False) > first):
            first = time_bound(scope.since, end=False)
        if scope.until is not None and (last is None or time_bound(scope.until, end=True) < last):
            last = time_bound(scope.until, end=True)
        if first is not None and last is not None and first > last:
            return []
        inside = replace(scope, since=first, until=last)
        hits = vectors.hits(query, limit, inside)
        if not hits:
            clauses, params = inside.clauses("")
            where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
            rows = self.db.query(
                f"SELECT id FROM memory_frames {where} ORDER BY created_at DESC, id LIMIT ?", [*params, limit]
            )
            hits = [LaneHit(row[0], 1.0) for row in rows]
        return [LaneHit(hit.frame_id, 1.0) for hit in hits]

    def latest_event_time(self) -> datetime:
        """The "now" of relative dates in a question: the mind's latest event time, never later
        than the clock. Frames whose time is not their own (``borrowed_time``: a file's or the
        harvest's) count only when no other frame has a time: a vault of undated notes copied
        today, or undated prompts harvested today, would make "last week" the week before today,
        not before the latest dated memory."""
        now = utc_now()
        latest = self.kept.get("latest_own_event_time", self._latest_own_event_time)
        try:
            return min(parse_instant(latest), now) if latest else now
        except ValueError:
            return now

    def _latest_own_event_time(self) -> str | None:
        """The latest event time of a frame with a time of its own (else the latest of all). It
        may read every frame's metadata (about 120 ms at 50,000 frames, when the newest frame's
        time is borrowed), so the caller keeps it until the mind changes."""
        rows = self.db.query("SELECT id FROM memory_frames ORDER BY created_at DESC, id LIMIT 1")
        newest = self.frames.get_many([rows[0][0]]).get(rows[0][0]) if rows else None
        latest = newest.created_at if newest is not None else None
        if newest is not None and borrowed_time(newest):  # only then read every frame's metadata
            latest = self.db.scalar(
                f"SELECT COALESCE(MAX(CASE WHEN {borrowed_time_sql()} THEN NULL ELSE created_at END),"
                " MAX(created_at)) FROM memory_frames"
            )
        return latest

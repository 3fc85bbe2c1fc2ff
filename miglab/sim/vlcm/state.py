"""The simulated vLCM's persistent state: ``<state_dir>/state.json`` (written atomically) and the
imported depots' zips under ``<state_dir>/depots/``.

Layout (``format`` 1)::

    {"format": 1,
     "counters": {"depot": 2, "draft": 3},
     "depots": {"depot-1": {"description", "source_type", "location", "create_time",
                            "file": "depots/depot-1/<name>.zip",
                            "component": {<manifest component>}, "release_date": ISO}},
     "clusters": {"domain-c7": {
         "image": {"base_image": {...}, "components": {name: version}},
         "commit": "2", "commits": {"1": {"author", "message", "creation_time"}},
         "drafts": {"3": {"owner", "creation_time", "modified_time",
                          "base_image": {...}, "components": {name: version}}},
         "compliance": ClusterCompliance | null,
         "last_apply": ApplyResult | null}}}
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path

FORMAT = 1


class StateError(RuntimeError):
    """state.json cannot be read (not JSON, or another format)."""


class Store:
    """The state in memory plus its file; hold ``lock`` while reading or changing ``data`` and call
    :meth:`save` after each change."""

    def __init__(self, state_dir: Path):
        self.dir = Path(state_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "state.json"
        self.lock = threading.RLock()
        self.data: dict = {"format": FORMAT, "counters": {}, "depots": {}, "clusters": {}}
        if self.path.exists():
            try:
                data = json.loads(self.path.read_text())
            except (OSError, ValueError) as exc:
                raise StateError(f"{self.path}: not readable as JSON: {exc}") from exc
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise StateError(f"{self.path}: not a format {FORMAT} vLCM simulator state")
            self.data.update(data)

    def next_id(self, kind: str) -> int:
        with self.lock:
            n = int(self.data["counters"].get(kind, 0)) + 1
            self.data["counters"][kind] = n
            return n

    def save(self) -> None:
        with self.lock:
            text = json.dumps(self.data, indent=1, sort_keys=True) + "\n"
            fd, tmp = tempfile.mkstemp(prefix=".state.", suffix=".tmp", dir=self.dir)
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise

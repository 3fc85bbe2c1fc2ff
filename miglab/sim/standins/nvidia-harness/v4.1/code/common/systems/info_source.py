# STAND-IN (miglab's simulated lab), not NVIDIA software. Follows closed/NVIDIA/code/common/
# systems/info_source.py of github.com/mlcommons/inference_results_v4.1
# @ 198fc46799b3328b36ee4bcbdebfa2db5a8e6183: a buffer filled once by a function (a command's
# parsed output) and read item by item by the detect() methods. Written anew.
"""Buffered detection data (stand-in)."""

from __future__ import annotations


class InfoSource:
    def __init__(self, fn):
        self.fn = fn
        self.buffer = None
        self.index = 0
        self.reset(hard=True)

    def reset(self, hard=False):
        self.index = 0
        if hard:
            self.buffer = self.fn()

    def has_next(self) -> bool:
        return self.index < len(self.buffer)

    def __next__(self):
        if not self.has_next():
            raise StopIteration
        if isinstance(self.buffer, dict):
            key = list(self.buffer)[self.index]
            item = (key, self.buffer[key])
        else:
            item = list(self.buffer)[self.index]
        self.index += 1
        return item

    def __iter__(self):
        self.reset()
        return self

"""The last bytes of a stream, in memory only: chunks in a deque, the oldest dropped past the cap."""

from __future__ import annotations

from collections import deque

DEFAULT_CAP = 4 * 2**20  # the failure's text is at the end of stderr; a traceback is a few KiB


class Ring:
    def __init__(self, cap: int = DEFAULT_CAP):
        self.cap, self.size, self.total = cap, 0, 0
        self._chunks: deque[bytes] = deque()

    def append(self, data: bytes) -> None:
        if not data:
            return
        self.total += len(data)
        if len(data) >= self.cap:
            self._chunks.clear()
            self._chunks.append(data[-self.cap :])
            self.size = self.cap
            return
        self._chunks.append(data)
        self.size += len(data)
        while self.size - len(self._chunks[0]) >= self.cap:
            self.size -= len(self._chunks.popleft())

    def tail(self) -> bytes:
        """At most `cap` bytes, from the start of the first whole line kept when some were dropped."""
        data = b"".join(self._chunks)[-self.cap :]
        if self.total > len(data):
            data = data[data.find(b"\n") + 1 :] if b"\n" in data else data
        return data

    @property
    def dropped(self) -> int:
        return self.total - len(self.tail())

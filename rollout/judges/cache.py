"""Judge replies on disk, so a rerun, or a re-score with a changed pool, asks only what is new.

A reply's key is the SHA-256 of the canonical JSON of the judge's identity (provider, model,
sampling settings), the rubric's purpose and version, the SHA-256 of the canonical payload, and the
attempt number.
Replies are appended to ``replies.jsonl`` in the cache folder, one JSON line each, with one
``write`` of an ``O_APPEND`` descriptor, so concurrent runs can share the folder; a line cut short
by a killed process is ignored on load, and a later line wins over an earlier one with the same key.
"""

from __future__ import annotations

from pathlib import Path

from engine.contract import JsonMapping, JsonObject, append_line, digest, read_keyed_lines
from engine.judging import Rubric

REPLIES = "replies.jsonl"


def reply_key(identity: JsonMapping, rubric: Rubric, payload_digest: str, attempt: int) -> str:
    """The cache key of one attempt of one judge on one payload (given by its digest)."""
    return digest({"judge": identity, "purpose": rubric.purpose, "version": rubric.version,
                   "payload": payload_digest, "attempt": attempt})


class ReplyCache:
    """The replies of a cache folder (None: kept in memory for this run only)."""

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = Path(directory) if directory else None
        self._entries: dict[str, JsonObject] = {}
        if self.directory is None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        self._entries = read_keyed_lines(self.directory / REPLIES)

    def get(self, key: str) -> JsonObject | None:
        """The cached entry ({key, judge, reply, usage, ...}) of a key."""
        return self._entries.get(key)

    def put(self, entry: JsonObject) -> None:
        """Keep an entry (it has its "key") and append it to the folder's file."""
        self._entries[str(entry["key"])] = entry
        if self.directory is None:
            return
        append_line(self.directory / REPLIES, entry)

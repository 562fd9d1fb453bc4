"""Looking for key material in text: a keytab's or a ticket cache's bytes, raw or encoded, in any output or log.

A keytab holds the principal's keys; a ticket cache holds tickets and their session keys. Neither may appear in
anything the project writes. The files are cut into aligned 16-byte pieces: any leak of 32 contiguous bytes (an
AES-256 key, a ticket) contains at least one whole piece, which is looked for raw (latin-1), as hex (both cases)
and as base64 (each of the three byte alignments).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from pathlib import Path

PIECE = 16


class Secrets:
    def __init__(self, files: Iterable[Path]) -> None:
        self.files = list(files)

    def needles(self) -> set[str]:
        """Read now: a ticket cache grows as service tickets are added."""
        found: set[str] = set()
        for path in self.files:
            try:
                data = path.read_bytes()
            except OSError:
                continue
            for start in range(0, len(data) - PIECE + 1, PIECE):
                piece = data[start:start + PIECE]
                if len(set(piece)) < 6:  # headers, zero padding, principal names: not key material
                    continue
                found |= {piece.decode("latin-1"), piece.hex(), piece.hex().upper()}
            for shift in range(3):
                encoded = base64.b64encode(data[shift:]).decode()
                found |= {encoded[i:i + 24] for i in range(0, len(encoded) - 24, 24)}
        return found

    def leaks(self, text: str) -> list[str]:
        return [n for n in self.needles() if n in text]

    def assert_absent(self, text: str, where: str) -> None:
        leaked = self.leaks(text)
        assert not leaked, f"key material from a keytab or ticket cache in {where}: {leaked[:3]!r}"

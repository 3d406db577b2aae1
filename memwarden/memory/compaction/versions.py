"""Which chromadb releases memwarden may edit the files of.

The surgery (and the log edits that keep Chroma's numbering ahead, see
:mod:`memwarden.memory.compaction.wal`) reads and writes Chroma's private on-disk formats: the
``embeddings_queue`` and ``segments`` tables and hnswlib's persisted index. Those formats are
not a public interface and may change in any release, so the edits run only on the releases
the test suite has run them against (tests/test_erasure_physical.py,
tests/test_erasure_interrupts.py, tests/test_compaction_gate.py). On any other release a purge
uses only Chroma's public API (the rebuild), and says why in its report.

:data:`PINNED` is the chromadb requirement of pyproject.toml; tests/test_compaction_gate.py
fails when the two differ, or when the installed chromadb is outside either.
"""

from __future__ import annotations

#: Releases the surgery and the log edits are tested on. Add one only after the erasure tests
#: pass on it.
SURGERY_TESTED = frozenset({"1.5.9"})

#: The chromadb requirement in pyproject.toml: from the tested release, within its series.
PINNED = "chromadb>=1.5.9,<1.6"


def installed() -> str:
    """The installed chromadb version."""
    import chromadb

    return str(getattr(chromadb, "__version__", "unknown"))


def files_editable() -> str | None:
    """None when memwarden may edit the files of the installed chromadb; otherwise why not."""
    version = installed()
    if version not in SURGERY_TESTED:
        tested = ", ".join(sorted(SURGERY_TESTED))
        return (f"chromadb {version} is not a release the file edits are tested on ({tested}); "
                "only Chroma's public API is used")
    return None

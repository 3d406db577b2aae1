"""Physical erasure for Chroma: after a purge no byte of an erased row is left in the data directory.

Stock Chroma (1.5, Rust core) deletes logically. After ``collection.delete`` the text,
metadata and vector of a row survive in the data directory (measured in docs/erasure.md):

* ``embeddings_queue`` (Chroma's write-ahead log) keeps every operation, with its text,
  metadata and vector, until *both* segments have persisted past it. The HNSW segment persists
  only every ``hnsw:sync_threshold`` (default 1000) operations, so up to 999 recent writes stay
  there as live rows, deleted or not;
* SQLite free pages and the free space of live pages hold whatever was deleted from the log,
  ``embedding_metadata``, the FTS content table and the metadata indexes (Chroma does not
  enable ``secure_delete``);
* the FTS5 trigram index (``embedding_fulltext_search_data``): a delete adds a tombstone, the
  postings of the old text (trigrams with positions, enough to rebuild it) stay until a merge;
* the HNSW segment directory: ``data_level0.bin`` keeps every deleted vector (unit-normalised for
  cosine) flagged as deleted and still linked into the graph, ``length.bin`` its norm, and
  ``delete_collection`` leaves the whole directory behind;
* uninitialised memory: hnswlib writes its freshly malloc'd buffers into the HNSW files when it
  creates them, which Chroma does again at every load of an index it never persisted, so the
  files can hold anything the process had in memory, erased rows included.

:func:`purge_collection` erases from every copy, with one of two mechanisms: the surgery
(:mod:`.surgery`: edit the closed store's files, O(erased rows + file size)) on the chromadb
releases it is tested on (:mod:`.versions`), and the rebuild (:mod:`.rebuild`: copy the
survivors through Chroma's public API, O(collection size)) otherwise. Against a Chroma server
only the logical delete is possible (mechanism ``logical``); see :func:`compact_directory` for
cleaning a stopped server's directory. Both mechanisms are crash-safe: a marker file
(:mod:`.marker`) records the phase, and :func:`recover` (run before a client opens the
directory), or simply the next purge, finishes an interrupted purge. Neither clears its
marker before the survivors are checked (:mod:`.verify`).

Modules: :mod:`.purge` (the entry points), :mod:`.surgery`, :mod:`.rebuild`, :mod:`.hnsw`
(hnswlib's file format), :mod:`.repair` (the graph edit), :mod:`.wal` (Chroma's write-ahead
log), :mod:`.scrub` (folders, FTS, free pages, file tails), :mod:`.marker`, :mod:`.verify`,
:mod:`.versions`, :mod:`.config` (a collection's HNSW settings), :mod:`.files` (shredding,
durable renames), :mod:`.report` and :mod:`.remnants` (the byte scans behind the evidence).
"""

from memwarden.memory.compaction.config import hnsw_config
from memwarden.memory.compaction.marker import pending
from memwarden.memory.compaction.purge import compact_directory, persist_dir, purge_collection, recover
from memwarden.memory.compaction.remnants import Remnants, find_remnants, fts_is_clean
from memwarden.memory.compaction.report import PurgeError, PurgeReport
from memwarden.memory.compaction.scrub import scrub_directory, trim_segment_tails
from memwarden.memory.compaction.wal import keep_log_ahead

__all__ = ["PurgeError", "PurgeReport", "Remnants", "compact_directory", "find_remnants", "fts_is_clean",
           "hnsw_config", "keep_log_ahead", "pending", "persist_dir", "purge_collection", "recover",
           "scrub_directory", "trim_segment_tails"]

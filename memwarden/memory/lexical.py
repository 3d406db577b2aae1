"""The lexical leg of hybrid search: a memwarden-owned BM25 index in SQLite, beside Chroma.

Why not Chroma's: chromadb 1.5.9 refuses a sparse (BM25) vector index and ``collection.search``
with ``Rrf``, both in a local PersistentClient and behind ``chroma run`` ("Sparse vector
indexing is not enabled in local"; "Search operation is not implemented for local
executor"). Its FTS5 trigram index answers ``$contains`` but does not rank.

Why not SQLite's FTS5 ``bm25()`` either: it weighs words by statistics of the *whole* index.
A caller who can write a record with a word and search for it would learn, from the score or
from the order of its own records, how many records it may not read contain that word. Here
BM25 is computed from in-scope records only: the postings of the query's words are read
through the caller's filter, and document frequencies, average length and the document count
come from what passed it (the in-scope records that share a word with the query). Nothing
outside the scope influences a score. See docs/retrieval.md.

The index file (``lexical.sqlite3`` next to the Chroma directory) holds, per record, its id,
its flat metadata as JSON (exactly what Chroma holds, merged the way Chroma merges it) and its
length, and a postings table (stemmed word, record, frequency). It does not hold the text. A
search compiles the same ``where`` filter the dense leg sends to Chroma into SQL
(:mod:`memwarden.policies.sqlfilter`), so a record outside the caller's scope, quarantined,
superseded, forgotten or expired never enters the lexical candidate list.

:class:`IndexedBackend` keeps the index in step with Chroma. Every mutation writes the index
first, in one transaction together with a ``pending`` mark for the ids it touches, then
Chroma; the marks are cleared in a later transaction. After a crash between the two writes,
opening the memory re-reads the marked ids from Chroma (the authority) and repairs the index;
a whole-index rebuild runs when the counts differ. The index never decides what is returned:
its candidates are re-read from Chroma through the same filter before they are used. Deletes
are physical: ``secure_delete`` zeroes what they free, and a VACUUM leaves no free page.

Why over 500 lines: the index and the backend that keeps it in step with Chroma change
together (every query of the index has its counterpart there); apart, each would expose the
other's internals.
"""

from __future__ import annotations

import heapq
import json
import math
import sqlite3
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import Stemmer

from memwarden.core.errors import ReadOnlyError
from memwarden.core.fields import Meta, ns_label
from memwarden.memory.backends import Backend, DelegatingBackend, StoredRow, newest_per_writer
from memwarden.core.namespace import MAX_DEPTH
from memwarden.guards.folding import index_words
from memwarden.guards.values import procedure_values
from memwarden.policies.sqlfilter import compile_where, scalar_column

Where = dict[str, Any]
T = TypeVar("T")

#: The index file's name inside a memory directory.
INDEX_FILE = "lexical.sqlite3"
#: Most distinct query words a lexical search uses (a longer query is cut, not refused).
MAX_TERMS = 64
#: Okapi BM25 parameters.
K1, B = 1.2, 0.75
# The layout's version. The procedures table holds what memwarden.guards.values reads in each
# text (Values.held): a change to those categories must bump it too, so the index is rebuilt.
_SCHEMA_VERSION = "6"
# Keys every read filter compares (policy scope, visibility, kind, time, and who wrote it:
# the windows of the write checks go writer by writer), kept as generated columns so a filter
# reads them without parsing the JSON (memwarden.policies.sqlfilter).
_HOT_KEYS = (*(k.value for k in (Meta.STATUS, Meta.EXPIRES_AT, Meta.KIND, Meta.NS_DEPTH)),
             *(ns_label(i) for i in range(MAX_DEPTH)),
             *(k.value for k in (Meta.CREATED_AT, Meta.T_FROM, Meta.T_TO, Meta.WRITER, Meta.SOURCE)))
_SCALARS = {key: f"d.k_{key}" for key in _HOT_KEYS}
_HOT_COLUMNS = ", ".join(f"k_{key} GENERATED ALWAYS AS ({scalar_column(key)}) STORED" for key in _HOT_KEYS)
_REBUILD_BATCH = 1000
_VOICE = f", d.k_{Meta.WRITER.value}, d.k_{Meta.SOURCE.value}"
_ABOUT = (f"SELECT d.id, d.k_{Meta.NS_DEPTH.value}, {', '.join(f'd.k_{ns_label(i)}' for i in range(MAX_DEPTH))} "
          "FROM subjects AS s JOIN docs AS d ON d.rowid = s.doc WHERE s.subject = ? LIMIT ?")
# The subject index's load: each writer's (principal and source) newest active rows of the
# given kinds, ranked in SQL, so that rows of other writers, kinds or states take no place.
_NEWEST_ABOUT = (
    f"SELECT * FROM (SELECT d.id, d.k_{Meta.NS_DEPTH.value}, {', '.join(f'd.k_{ns_label(i)}' for i in range(MAX_DEPTH))}, "
    f"ROW_NUMBER() OVER (PARTITION BY d.k_{Meta.WRITER.value}, d.k_{Meta.SOURCE.value} "
    f"ORDER BY d.k_{Meta.CREATED_AT.value} DESC) AS turn "
    "FROM subjects AS s JOIN docs AS d ON d.rowid = s.doc "
    f"WHERE s.subject = ? AND d.k_{Meta.STATUS.value} = 'active' "
    f"AND d.k_{Meta.KIND.value} IN (SELECT value FROM json_each(?))) WHERE turn <= ?")
_SQL_CHUNK = 500
# Records holding a category beyond which a holders' query is never chosen (the count of them
# stops here): a term query's cost is bounded by its terms' postings, a holders' one is not.
_HOLDERS_AT_MOST = 4096

STOPWORDS = frozenset(
    """a an the and or but if of to in on at by for with from as is are was were be been being
    do does did has have had it its this that these those there here what which who whom whose
    when where why how can could should would will shall may might must not no any all each
    every some our we us you your he she his her him they them their i my me am so than then
    too very just yet up down out over under about into after before again off per s t""".split()
)


# PyStemmer: the Snowball C library, 12x the pure-Python port's speed with the same stems (17k
# words of the corpora compared, S31); the contradiction check stems every new word of a write.
_STEMMER = Stemmer.Stemmer("english")


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    # Numbers and codes ("2024", "p12", "inv0042") are matched as written.
    return word if any(c.isdigit() for c in word) else _STEMMER.stemWord(word)


def terms(text: str) -> list[str]:
    """The index terms of ``text``, in order: its words as
    :func:`~memwarden.guards.folding.index_words` reads them (NFKC, case folded, Latin accents
    removed, letters and digits), stop words dropped, English words stemmed (Snowball), so "allergies" finds
    "allergic" and "INV-2024-0042" finds itself (as inv, 2024, 0042)."""
    return list(_word_terms(text) if len(text) <= _WORD_LENGTH else _terms(text))


def _read_terms(text: str) -> tuple[str, ...]:
    return tuple(_stem(w) for w in index_words(text) if w not in STOPWORDS)


# A write's text is read by the contradiction check's windows, then by its own upsert; its
# words one by one too (memwarden/memory/nearby.py), which would evict the texts from one cache.
_terms = lru_cache(maxsize=256)(_read_terms)
_WORD_LENGTH = 40
_word_terms = lru_cache(maxsize=65_536)(_read_terms)


def bm25(postings: Iterable[tuple[str, str, int, int]], k: int | None = None) -> list[tuple[str, float]]:
    """Okapi BM25 over the records in ``postings`` alone, best first (the ``k`` best, or all).

    ``postings`` are (term, record id, term frequency, record length) rows for the query's
    terms, already restricted to what the caller may read. The collection statistics (record
    count, document frequency of each term, average length) are those of the records that
    appear, so nothing else can change a score. Ties are broken by id.
    """
    tf: dict[str, dict[str, int]] = defaultdict(dict)
    length: dict[str, int] = {}
    for term, rid, freq, size in postings:
        tf[term][rid] = freq
        length[rid] = size
    if not length:
        return []
    n = len(length)
    average = max(sum(length.values()) / n, 1.0)
    scores: dict[str, float] = defaultdict(float)
    # Term by term in one order, whatever order the rows came in: a score is the same float
    # whichever query plan read the postings.
    for _, docs in sorted(tf.items()):
        idf = math.log(1.0 + (n - len(docs) + 0.5) / (len(docs) + 0.5))
        for rid, freq in docs.items():
            norm = K1 * (1.0 - B + B * length[rid] / average)
            scores[rid] += idf * freq * (K1 + 1.0) / (freq + norm)
    if k is None:
        return sorted(scores.items(), key=lambda p: (-p[1], p[0]))
    return heapq.nsmallest(k, scores.items(), key=lambda p: (-p[1], p[0]))


class LexicalIndex:
    """Postings and metadata of every record in one SQLite file (no text is stored)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()
        # Ids whose Chroma change is under way (counted: threads may overlap) or finished.
        self._inflight: Counter[str] = Counter()
        self._done: set[str] = set()
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode = WAL")
        # FULL: a committed pending mark survives a power cut, which is what repair relies on.
        self._db.execute("PRAGMA synchronous = FULL")
        # Whatever a delete frees is zeroed, not merely unlinked from its b-tree.
        self._db.execute("PRAGMA secure_delete = ON")
        self._db.execute("CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        version = self._db.execute("SELECT value FROM info WHERE key = 'schema'").fetchone()
        stale = version is not None and version[0] != _SCHEMA_VERSION
        # executescript runs its own transaction: the whole layout is created, or none of it.
        # A layout from another version is dropped; open() then rebuilds it from Chroma.
        self._db.executescript(("DROP TABLE IF EXISTS postings; DROP TABLE IF EXISTS docs; "
                                "DROP TABLE IF EXISTS pending; DROP TABLE IF EXISTS subjects; "
                                "DROP TABLE IF EXISTS procedures;"
                                if stale else "") + f"""
            BEGIN;
            CREATE TABLE IF NOT EXISTS docs (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
                                             meta TEXT NOT NULL, len INTEGER NOT NULL,
                                             {_HOT_COLUMNS});
            CREATE TABLE IF NOT EXISTS postings (term TEXT NOT NULL, doc INTEGER NOT NULL, tf INTEGER NOT NULL,
                                                 PRIMARY KEY (term, doc)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS postings_doc ON postings(doc);
            CREATE TABLE IF NOT EXISTS pending (id TEXT PRIMARY KEY);
            CREATE TABLE IF NOT EXISTS subjects (subject TEXT NOT NULL, doc INTEGER NOT NULL,
                                                 PRIMARY KEY (subject, doc)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS subjects_doc ON subjects(doc);
            CREATE TABLE IF NOT EXISTS procedures (category TEXT NOT NULL, doc INTEGER NOT NULL,
                                                   PRIMARY KEY (category, doc)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS procedures_doc ON procedures(doc);
            INSERT OR REPLACE INTO info(key, value) VALUES ('schema', '{_SCHEMA_VERSION}');
            COMMIT;
        """)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- writes ---------------------------------------------------------------------------

    def upsert(self, ids: Sequence[str], documents: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Insert rows, or replace the text of existing ones and merge their metadata (as
        Chroma's upsert does); the ids stay pending until :meth:`done`."""
        with self._transaction() as db:
            self._settle(db)
            self._write(db, ids, documents, metadatas, merge=True)
            self._mark(db, ids)

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Merge metadata into existing rows (keys absent from a dict stay, as in Chroma); the
        ids stay pending until :meth:`done`."""
        with self._transaction() as db:
            self._settle(db)
            for rid, metadata in zip(ids, metadatas):
                row = db.execute("UPDATE docs SET meta = json_patch(meta, ?) WHERE id = ? RETURNING rowid",
                                 (json.dumps(metadata), rid)).fetchone()
                if row is not None and Meta.SUBJECTS in metadata:
                    self._set_subjects(db, row[0], metadata[Meta.SUBJECTS])
            self._mark(db, ids)

    def mark(self, ids: Sequence[str]) -> None:
        """Record ``ids`` as pending: a Chroma change to them is about to happen."""
        with self._transaction() as db:
            self._settle(db)
            self._mark(db, ids)

    def done(self, ids: Sequence[str]) -> None:
        """The Chroma change announced for ``ids`` has happened. Their marks are cleared in
        the next write's transaction, so a write costs one commit; a crash before that only
        makes repair re-read them."""
        with self._lock:
            for i in ids:
                self._inflight[i] -= 1
                if self._inflight[i] <= 0:
                    del self._inflight[i]
                    self._done.add(i)

    def replace_rows(self, rows: Sequence[StoredRow], gone: Sequence[str]) -> None:
        """Make ``rows`` exactly the authority's (text and metadata, no merge), delete the ids
        ``gone`` physically, and clear the marks of both."""
        with self._lock:
            with self._transaction() as db:
                self._settle(db)
                self._write(db, [r.id for r in rows], [r.document for r in rows], [r.metadata for r in rows],
                            merge=False)
                self._delete(db, gone)
                db.executemany("DELETE FROM pending WHERE id = ?", [(r.id,) for r in rows] + [(i,) for i in gone])
            if gone:
                self._scrub()

    def purge(self, ids: Sequence[str]) -> None:
        """Delete rows and every trace of them from the file (see :meth:`replace_rows`)."""
        self.replace_rows([], ids)

    def replace_all(self, rows: Iterable[StoredRow]) -> None:
        """Rebuild the whole index from ``rows`` (the authority's), then scrub the file."""
        with self._lock:
            with self._transaction() as db:
                db.execute("DELETE FROM postings")
                db.execute("DELETE FROM subjects")
                db.execute("DELETE FROM procedures")
                db.execute("DELETE FROM docs")
                db.execute("DELETE FROM pending")
                self._inflight.clear()
                self._done.clear()
                batch: list[StoredRow] = []
                for row in rows:
                    batch.append(row)
                    if len(batch) >= _REBUILD_BATCH:
                        self._write(db, [r.id for r in batch], [r.document for r in batch],
                                    [r.metadata for r in batch], merge=False)
                        batch = []
                self._write(db, [r.id for r in batch], [r.document for r in batch], [r.metadata for r in batch],
                            merge=False)
            self._scrub()

    def _write(self, db: sqlite3.Connection, ids: Sequence[str], documents: Sequence[str],
               metadatas: Sequence[dict[str, Any]], *, merge: bool) -> None:
        # A None value removes the key, as in Chroma: json_patch drops null members, from a new
        # row as from a merged one.
        meta = "json_patch(docs.meta, :meta)" if merge else "json_patch('{}', :meta)"
        for rid, text, metadata in zip(ids, documents, metadatas):
            counts = Counter(terms(text))
            rowid = db.execute(
                f"INSERT INTO docs(id, meta, len) VALUES (:id, json_patch('{{}}', :meta), :len) ON CONFLICT(id) "
                f"DO UPDATE SET meta = {meta}, len = excluded.len RETURNING rowid",
                {"id": rid, "meta": json.dumps(metadata), "len": sum(counts.values())}).fetchone()[0]
            db.execute("DELETE FROM postings WHERE doc = ?", (rowid,))
            db.executemany("INSERT INTO postings(term, doc, tf) VALUES (?, ?, ?)",
                           [(t, rowid, n) for t, n in counts.items()])
            db.execute("DELETE FROM procedures WHERE doc = ?", (rowid,))
            db.executemany("INSERT INTO procedures(category, doc) VALUES (?, ?)",
                           [(c, rowid) for c in sorted(procedure_values(text).held())])
            if not merge or Meta.SUBJECTS in metadata:  # a merge without the key keeps them
                self._set_subjects(db, rowid, metadata.get(Meta.SUBJECTS))

    @staticmethod
    def _set_subjects(db: sqlite3.Connection, rowid: int, subjects: Any) -> None:
        db.execute("DELETE FROM subjects WHERE doc = ?", (rowid,))
        if isinstance(subjects, list):
            db.executemany("INSERT OR IGNORE INTO subjects(subject, doc) VALUES (?, ?)",
                           [(s, rowid) for s in subjects if isinstance(s, str)])

    def _delete(self, db: sqlite3.Connection, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), _SQL_CHUNK):
            chunk = list(ids[start:start + _SQL_CHUNK])
            marks = ",".join("?" * len(chunk))
            db.execute(f"DELETE FROM postings WHERE doc IN (SELECT rowid FROM docs WHERE id IN ({marks}))", chunk)
            for table in ("subjects", "procedures"):
                db.execute(f"DELETE FROM {table} WHERE doc IN (SELECT rowid FROM docs WHERE id IN ({marks}))", chunk)
            db.execute(f"DELETE FROM docs WHERE id IN ({marks})", chunk)

    def _mark(self, db: sqlite3.Connection, ids: Sequence[str]) -> None:
        db.executemany("INSERT OR IGNORE INTO pending(id) VALUES (?)", [(i,) for i in ids])
        for i in ids:
            self._inflight[i] += 1
            self._done.discard(i)

    def _settle(self, db: sqlite3.Connection) -> None:
        # Marks of changes still in flight (another thread's) are never cleared early.
        if self._done:
            db.executemany("DELETE FROM pending WHERE id = ?", [(i,) for i in self._done if i not in self._inflight])
            self._done.clear()

    def _scrub(self) -> None:
        # secure_delete has zeroed the freed cells; VACUUM drops the free pages and the WAL
        # checkpoint empties the log, whose frames held the pages before the delete.
        self._db.execute("VACUUM")
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- reads ----------------------------------------------------------------------------

    def search(self, text: str, k: int, where: Where | None) -> list[tuple[str, float]]:
        """Up to ``k`` ids that pass ``where``, ranked by BM25 over in-scope records only
        (see :func:`bm25`), with their scores."""
        return bm25(self._postings(text, where), k)

    def voices(self, text: str, where: Where | None, holding: Collection[str] = (),
               only_holding: bool = False) -> list[tuple[str, float, Any, Any, bool]]:
        """Every id that passes ``where`` ranked as :meth:`search` ranks them, all of them, with
        its writer, its source and whether its text holds one of the procedure categories
        ``holding`` (:meth:`~memwarden.guards.values.Values.held`): one query, so the ranking,
        who wrote what and what it holds come together. ``only_holding``: only those that do
        (the statistics are then those of the holders)."""
        categories = sorted(holding)
        if only_holding and not categories:
            return []
        # EXISTS, not "d.rowid IN (SELECT doc ...)": the planner turned that into a look-up of
        # every query term for every record holding a category (terms x holders: 170 ms for
        # 3,000 terms over 300 records), instead of a check of each matching posting's record.
        held = (f"EXISTS (SELECT 1 FROM procedures AS pr WHERE pr.doc = d.rowid AND pr.category IN "
                f"({','.join('?' * len(categories))}))")
        if only_holding:
            rows = self._postings(text, where, _VOICE + ", 1", (), held, categories, holders=categories)
        else:
            rows = self._postings(text, where, _VOICE + (f", {held}" if categories else ", 0"), categories)
        voice = {row[1]: (row[4], row[5], bool(row[6])) for row in rows}
        return [(rid, score, *voice[rid]) for rid, score in bm25((row[:4] for row in rows), None)]

    def _postings(self, text: str, where: Where | None, columns: str = "", column_params: Sequence[Any] = (),
                  also: str = "", also_params: Sequence[Any] = (), holders: Sequence[str] = ()) -> list[tuple[Any, ...]]:
        """(term, id, tf, length, *``columns``) of the query's terms, for the rows that pass
        ``where`` (and the SQL condition ``also``). ``holders``: ``also`` keeps only records
        holding one of these procedure categories, so the query may start from them."""
        words = list(dict.fromkeys(terms(text)))[:MAX_TERMS]
        if not words:
            return []
        condition, params = compile_where(where, "d.meta", _SCALARS)
        marks = ",".join("?" * len(words))
        with self._lock:
            if holders and self._fewer_holders(words, holders):
                # From the holders: each of their postings of the query's terms (an index probe
                # a term), not every posting of the terms checked for a holder. A long change's
                # terms share thousands of postings; the records holding what it changes are
                # a few (2.3 ms -> 0.12 ms for 61 terms over 1,500 records).
                cats = ",".join("?" * len(holders))
                source = (f"(SELECT DISTINCT doc FROM procedures WHERE category IN ({cats})) AS h "
                          "JOIN docs AS d ON d.rowid = h.doc JOIN postings AS p ON p.doc = h.doc")
                sql = f"SELECT p.term, d.id, p.tf, d.len{columns} FROM {source} WHERE p.term IN ({marks}) AND {condition}"
                return self._db.execute(sql, [*column_params, *holders, *words, *params]).fetchall()
            sql = (f"SELECT p.term, d.id, p.tf, d.len{columns} FROM postings AS p JOIN docs AS d ON d.rowid = p.doc "
                   f"WHERE p.term IN ({marks}) AND {condition}{f' AND {also}' if also else ''}")
            return self._db.execute(sql, [*column_params, *words, *params, *also_params]).fetchall()

    def _fewer_holders(self, words: Sequence[str], categories: Sequence[str]) -> bool:
        """True when the records holding ``categories`` are fewer than half the postings of
        ``words``: then a query is cheaper from them. Both counts stop early, so the choice
        costs at most what the cheaper query reads (an attacker who makes either side large
        makes the other the one read)."""
        found = self._db.execute(f"SELECT count(*) FROM (SELECT 1 FROM procedures WHERE category IN "
                                 f"({','.join('?' * len(categories))}) LIMIT ?)",
                                 [*categories, _HOLDERS_AT_MOST + 1]).fetchone()[0]
        if found > _HOLDERS_AT_MOST:
            return False
        bound = 2 * found
        postings = self._db.execute(f"SELECT count(*) FROM (SELECT 1 FROM postings WHERE term IN "
                                    f"({','.join('?' * len(words))}) LIMIT ?)", [*words, bound + 1]).fetchone()[0]
        return postings > bound

    def about(self, subject: str, limit: int) -> list[tuple[str, tuple[Any, ...]]]:
        """Up to ``limit`` (id, namespace) pairs of the records about ``subject``, as indexed."""
        # The namespace from its generated columns: parsing each row's metadata JSON instead
        # cost every write's subject look-up 15.6 us a record, against 6.0 (measured at 100k).
        with self._lock:
            rows = self._db.execute(_ABOUT, (subject, limit)).fetchall()
        return [(row[0], tuple(row[2:2 + int(row[1] or 0)])) for row in rows]

    def newest_about(self, subject: str, kinds: Collection[str], per_writer: int) -> list[tuple[str, tuple[Any, ...]]]:
        """(id, namespace) pairs of each writer's ``per_writer`` newest active records of
        ``kinds`` about ``subject``, as indexed."""
        with self._lock:
            rows = self._db.execute(_NEWEST_ABOUT, (subject, json.dumps(sorted(kinds)), per_writer)).fetchall()
        return [(row[0], tuple(row[2:2 + int(row[1] or 0)])) for row in rows]

    def pending(self) -> list[str]:
        """Ids whose last change may not have reached Chroma (or the index)."""
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT id FROM pending ORDER BY id")]

    def count(self) -> int:
        """Number of records indexed."""
        with self._lock:
            return self._db.execute("SELECT count(*) FROM docs").fetchone()[0]

    def close(self) -> None:
        """Clear the marks of finished changes and close the file."""
        with self._lock:
            if self._db is not None:
                with self._transaction() as db:
                    self._settle(db)
                self._db.close()
                self._db = None  # type: ignore[assignment]


class IndexedBackend(DelegatingBackend):
    """A Chroma backend with a :class:`LexicalIndex` kept in step with it (see the module doc).

    Implements the :class:`~memwarden.memory.backends.Backend` protocol by delegation, with
    :meth:`text_query` as the lexical leg of a search.
    """

    has_text_index = True

    def __init__(self, inner: Backend, index: LexicalIndex) -> None:
        super().__init__(inner)
        self._index = index
        self._worker: ThreadPoolExecutor | None = None  # see upsert_after

    @classmethod
    def open(cls, inner: Backend, path: str | Path, *, repair: bool = True) -> IndexedBackend:
        """Wrap ``inner`` with the index at ``path``, repairing the index first: ids a crash
        left pending are re-read from Chroma, and a count mismatch rebuilds the whole index.
        ``repair=False`` (a read-only open) refuses an index that needs repair instead."""
        backend = cls(inner, LexicalIndex(path))
        if repair:
            backend.repair()
        elif backend.needs_repair():
            backend.close()
            raise ReadOnlyError(f"the lexical index {str(path)!r} is out of step with Chroma (a crash?) and a "
                                "read-only open cannot repair it: open the memory read-write once")
        return backend

    def needs_repair(self) -> bool:
        """True when :meth:`repair` would change the index."""
        return bool(self._index.pending()) or self._index.count() != self._inner.count()

    def repair(self) -> None:
        """Make the index agree with Chroma (see :meth:`open`)."""
        self._maintenance: list[str] = []
        pending = self._index.pending()
        if pending:
            self._reconcile(pending)
            self._maintenance.append(f"lexical index: {len(pending)} row(s) a crash left pending re-read from Chroma")
        if self._index.count() != self._inner.count():
            self._index.replace_all(self._all_rows())
            self._maintenance.append("lexical index rebuilt from Chroma (its row count did not match)")

    def _all_rows(self) -> Iterator[StoredRow]:
        offset = 0
        while True:
            rows = self._inner.fetch(limit=_REBUILD_BATCH, offset=offset)
            yield from rows
            if len(rows) < _REBUILD_BATCH:
                return
            offset += len(rows)

    def _reconcile(self, ids: Sequence[str]) -> None:
        """Copy the authority's current state of ``ids`` into the index."""
        ids = list(dict.fromkeys(ids))
        rows = [row for start in range(0, len(ids), _SQL_CHUNK)
                for row in self._inner.fetch(ids=ids[start:start + _SQL_CHUNK])]
        present = {r.id for r in rows}
        self._index.replace_rows(rows, [i for i in ids if i not in present])

    def _then(self, ids: Sequence[str], call: Callable[[], T]) -> T:
        """Run the Chroma side of a change the index already holds (marked pending)."""
        try:
            return call()
        except BaseException:
            # Chroma may or may not have applied it: take whatever it holds now.
            self._reconcile(ids)
            raise
        finally:
            self._index.done(ids)

    # -- Backend --------------------------------------------------------------------------

    def upsert(self, ids, embeddings, documents, metadatas) -> None:  # see Backend
        self._index.upsert(ids, documents, metadatas)
        self._then(ids, lambda: self._inner.upsert(ids, embeddings, documents, metadatas))

    def upsert_after(self, gate: Callable[[], None], ids: Sequence[str], embeddings: Callable[[], Any],
                     documents: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """See :func:`~memwarden.memory.backends.upsert_after`: the index's transaction (its
        rows and pending marks, synced) runs in the index's thread while ``gate`` (the audit
        commit) runs in this one, and Chroma is called only once both are done. The order
        that matters holds: the audit entries and the pending marks are on disk before
        Chroma has the rows. If the gate fails, the index takes back what Chroma holds of
        ``ids`` (none of the new rows), as after a failed Chroma call; a crash in between
        leaves marks that the next open re-reads from Chroma the same way."""
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="memwarden-lexical")
        indexed = self._worker.submit(self._index.upsert, ids, documents, metadatas)
        try:
            gate()
            indexed.result()  # the index's own failure stops the write before Chroma, as in upsert
        except BaseException:
            # Whatever stopped it (the gate, an interrupt while waiting), rows the index has
            # committed will never reach Chroma: it takes back what Chroma holds of them.
            if not indexed.cancel() and indexed.exception() is None:
                try:
                    self._reconcile(ids)
                except Exception:  # noqa: BLE001 - the marks stay (never done): the next open re-reads them
                    pass
                else:
                    self._index.done(ids)
            raise
        self._then(ids, lambda: self._inner.upsert(ids, embeddings(), documents, metadatas))

    def update_metadata(self, ids, metadatas) -> None:
        self._index.update_metadata(ids, metadatas)
        self._then(ids, lambda: self._inner.update_metadata(ids, metadatas))

    def text_query(self, text: str, k: int, where: Where | None) -> list[tuple[str, float]]:
        """The lexical leg: up to ``k`` ids that pass ``where``, best BM25 first, with their
        scores. Only ids: the caller reads the rows it keeps from Chroma (the authority) and
        re-checks them, so a stale index entry can never surface what Chroma holds otherwise."""
        return self._index.search(text, k, where)

    def text_voices(self, text: str, where: Where | None, holding: Collection[str] = (),
                    only_holding: bool = False) -> list[tuple[str, float, Any, Any, bool]]:
        """See :meth:`Backend.text_voices`; ids only, as :meth:`text_query` (and writers,
        sources as indexed: the caller reads the rows from Chroma and checks them again)."""
        return self._index.voices(text, where, holding, only_holding)

    def about(self, subject: str, limit: int) -> list[StoredRow]:
        """Rows about ``subject``: which ones, and in which partitions, from the index (one
        SQL query instead of a filtered read of every partition); the rows themselves from
        Chroma, the authority, by id, checked again for the subject."""
        groups: dict[Any, list[str]] = {}
        for rid, namespace in self._index.about(subject, limit):
            groups.setdefault(self._inner.partition_of(namespace), []).append(rid)
        rows = [row for part, ids in groups.items() for row in self._inner.fetch(ids=ids, partitions=[part])]
        return [row for row in rows if subject in (row.metadata.get(Meta.SUBJECTS) or ())]

    def newest_about(self, subject: str, kinds: Collection[str], per_writer: int) -> list[StoredRow]:
        """See :meth:`Backend.newest_about`: which rows from the index, the rows themselves
        from Chroma, checked again."""
        groups: dict[Any, list[str]] = {}
        for rid, namespace in self._index.newest_about(subject, kinds, per_writer):
            groups.setdefault(self._inner.partition_of(namespace), []).append(rid)
        rows = [row for part, ids in groups.items() for row in self._inner.fetch(ids=ids, partitions=[part])]
        return newest_per_writer(rows, per_writer, kinds, subject)

    def delete(self, ids) -> None:
        self._index.mark(ids)
        try:
            self._inner.delete(ids)
        finally:
            self._index.done(ids)
            self._reconcile(ids)

    def purge(self, ids, **kwargs: Any) -> Any:
        self._index.mark(ids)
        try:
            return self._inner.purge(ids, **kwargs)
        finally:
            # Whatever Chroma did, the index now mirrors it: rows it still holds (a purge that
            # failed before its delete) stay indexed, and every deleted row is scrubbed.
            self._index.done(ids)
            self._reconcile(ids)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.shutdown()
        try:
            self._inner.close()
        finally:
            self._index.close()

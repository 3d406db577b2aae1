"""hnswlib's persisted index as Chroma writes it: header.bin, data_level0.bin, length.bin,
link_lists.bin and Chroma's id map (index_metadata.pickle).

:meth:`HnswIndex.load` accepts only files whose every size and cross-reference is consistent
with the layout below, so that a format change makes a purge fall back to the rebuild
instead of editing what it does not understand (on top of the release gate of
:mod:`memwarden.memory.compaction.versions`). The graph edit itself is in
:mod:`memwarden.memory.compaction.repair`.
"""

from __future__ import annotations

import os
import pickle
import struct
from pathlib import Path
from typing import Any

import numpy as np

from memwarden.memory.compaction.files import fsync_dir

#: Chroma's segment type of a local persisted HNSW index.
HNSW_SEGMENT = "urn:chroma:segment/vector/hnsw-local-persisted"
#: header.bin, field by field.
HEADER = struct.Struct("<iQQQQQQiiQQQdQ")
HEADER_FIELDS = ("version", "offset_level0", "max_elements", "count", "size_per_element", "label_offset",
                 "offset_data", "max_level", "entry_point", "max_m", "max_m0", "m", "mult", "ef_construction")
#: The flag of a tombstoned element in its level-0 link list header.
DELETED = 0x01


class Unsupported(Exception):
    """The store is not in a shape the surgery is proven on."""


def read_header(folder: Path) -> dict[str, Any] | None:
    """The header of the HNSW files in ``folder``; None when there is none or it is not the
    expected size."""
    try:
        return dict(zip(HEADER_FIELDS, HEADER.unpack((folder / "header.bin").read_bytes())))
    except (OSError, struct.error):
        return None


class HnswIndex:
    """A persisted hnswlib index, loaded only if every size and cross-reference is consistent,
    so a format change in a future Chroma makes the purge fall back to a rebuild."""

    def __init__(self, header: dict[str, Any], level0: np.ndarray, lengths: np.ndarray,
                 upper: list[np.ndarray], id_map: dict[str, Any], dim: int) -> None:
        self.header, self.level0, self.lengths, self.upper, self.id_map, self.dim = \
            header, level0, lengths, upper, id_map, dim

    # - loading and checking -

    @classmethod
    def load(cls, folder: Path, dim: int) -> HnswIndex | EmptyHnsw:
        """The index in ``folder`` (vectors of ``dim`` floats); raises Unsupported when its
        files are not exactly in the layout this module knows."""
        try:
            raw = (folder / "header.bin").read_bytes()
            level0_raw = (folder / "data_level0.bin").read_bytes()
            lengths = np.frombuffer((folder / "length.bin").read_bytes(), dtype="<f4").copy()
            links_raw = (folder / "link_lists.bin").read_bytes()
            if (folder / "index_metadata.pickle").exists():
                with open(folder / "index_metadata.pickle", "rb") as fh:
                    id_map = pickle.load(fh)  # Chroma's own file in the user's data dir
            else:
                id_map = None
        except (OSError, pickle.UnpicklingError, EOFError) as exc:
            raise Unsupported(f"cannot read the HNSW segment: {exc}") from exc
        if len(raw) != HEADER.size:
            raise Unsupported(f"HNSW header is {len(raw)} bytes, expected {HEADER.size}")
        h = dict(zip(HEADER_FIELDS, HEADER.unpack(raw)))
        if id_map is None:
            # Never persisted: every vector is still in the log (see EmptyHnsw).
            if h["count"] != 0 or links_raw:
                raise Unsupported("an HNSW segment with elements but no id map")
            return EmptyHnsw(h)
        n, size = h["count"], h["size_per_element"]
        expect = {"version": 1, "offset_level0": 0, "offset_data": 4 + 4 * h["max_m0"],
                  "label_offset": 4 + 4 * h["max_m0"] + 4 * dim, "size_per_element": 4 + 4 * h["max_m0"] + 4 * dim + 8}
        bad = {k: (h[k], v) for k, v in expect.items() if h[k] != v}
        if bad or h["max_m0"] > 0xFFFF or h["max_m"] > 0xFFFF or n > h["max_elements"]:
            raise Unsupported(f"unexpected HNSW header {bad or h}")
        # hnswlib writes the files at their preallocated size when it creates them and then
        # only the elements it changes, so they can be longer than ``count`` elements; the
        # rest is uninitialised memory and is dropped here.
        if len(level0_raw) < n * size or len(lengths) < n:
            raise Unsupported("HNSW files are shorter than the element count")
        level0 = np.frombuffer(level0_raw, dtype=np.uint8, count=n * size).reshape(n, size).copy()
        lengths = lengths[:n].copy()
        upper, off, per_level = [], 0, 4 + 4 * h["max_m"]
        for _ in range(n):
            if off + 4 > len(links_raw):
                raise Unsupported("link_lists.bin is truncated")
            (nbytes,) = struct.unpack_from("<I", links_raw, off)
            off += 4
            if nbytes % per_level or off + nbytes > len(links_raw):
                raise Unsupported("link_lists.bin has an unexpected record")
            upper.append(np.frombuffer(links_raw, dtype="<u4", count=nbytes // 4, offset=off)
                         .reshape(nbytes // per_level, per_level // 4).copy())
            off += nbytes
        if off != len(links_raw):
            raise Unsupported("link_lists.bin has trailing bytes")
        keys = {"id_to_label", "label_to_id", "total_elements_added"}
        if not isinstance(id_map, dict) or not keys <= set(id_map):
            raise Unsupported("unexpected index_metadata.pickle")
        index = cls(h, level0, lengths, upper, id_map, dim)
        index._check()
        return index

    def _check(self) -> None:
        n, h = self.header["count"], self.header
        counts, flags, links = self.level0_lists()
        if np.any(counts > h["max_m0"]) or np.any(flags & (0xFF ^ DELETED)):
            raise Unsupported("unexpected level-0 link list header")
        mask = np.arange(h["max_m0"])[None, :] < counts[:, None]
        if n and np.any(links[mask] >= n):
            raise Unsupported("level-0 link out of range")
        for lists in self.upper:
            if len(lists) and (np.any((lists[:, 0] & 0xFFFF) > h["max_m"]) or np.any(lists[:, 1:] >= max(n, 1))):
                raise Unsupported("upper-level link out of range")
        live = set(self.labels[(flags & DELETED) == 0].tolist())
        if set(self.id_map["label_to_id"]) != live or len(self.id_map["id_to_label"]) != len(live):
            raise Unsupported("the id map does not match the live HNSW elements")
        if n and not (0 <= h["entry_point"] < n and len(self.upper[h["entry_point"]]) == h["max_level"]):
            raise Unsupported("unexpected HNSW entry point")

    # - views -

    @property
    def labels(self) -> np.ndarray:
        """Each element's label (Chroma's id map turns labels into record ids)."""
        off = self.header["label_offset"]
        return self.level0[:, off:off + 8].copy().view("<u8")[:, 0]

    @property
    def vectors(self) -> np.ndarray:
        """Each element's vector, as stored (unit length for cosine)."""
        off = self.header["offset_data"]
        return self.level0[:, off:off + 4 * self.dim].copy().view("<f4")

    def level0_lists(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Level 0 as arrays: each element's link count, flags, and links."""
        head = self.level0[:, :4].copy().view("<u4")[:, 0]
        links = self.level0[:, 4:self.header["offset_data"]].copy().view("<u4")
        return (head & 0xFFFF).astype(np.int64), (head >> 16) & 0xFF, links.astype(np.int64)

    # - writing -

    def save(self, folder: Path) -> None:
        """Write the index into the new folder ``folder``, durably."""
        h = self.header
        parts = {
            "header.bin": HEADER.pack(*(h[f] for f in HEADER_FIELDS)),
            "data_level0.bin": self.level0.tobytes(),
            "length.bin": self.lengths.astype("<f4").tobytes(),
            "link_lists.bin": b"".join(struct.pack("<I", u.nbytes) + u.astype("<u4").tobytes() for u in self.upper),
            # Chroma reads this with serde_pickle, which handles protocols up to 5; 3 is what it writes.
            "index_metadata.pickle": pickle.dumps(self.id_map, protocol=3),
        }
        _write_files(folder, parts)


class EmptyHnsw:
    """A segment Chroma has never persisted: its vectors are only in the log, which Chroma
    replays into a new index every time it loads the segment, and each time it re-creates the
    files from uninitialised memory (see :func:`memwarden.memory.compaction.scrub.trim_segment_tails`).
    Saved as the same empty index without the garbage; or, with ``persisted`` (nothing left to
    index), as a persisted empty index with an empty id map, which Chroma loads instead of
    re-creating."""

    def __init__(self, header: dict[str, Any]) -> None:
        self.header = header
        self.persisted = False

    def save(self, folder: Path) -> None:
        """Write the empty index into the new folder ``folder``, durably."""
        h = dict(self.header, count=0, entry_point=-1, max_level=-1)
        parts = {"header.bin": HEADER.pack(*(h[f] for f in HEADER_FIELDS)), "data_level0.bin": b"",
                 "length.bin": b"", "link_lists.bin": b""}
        if self.persisted:
            parts["index_metadata.pickle"] = pickle.dumps(
                {"dimensionality": None, "total_elements_added": 0, "max_seq_id": None, "id_to_label": {},
                 "label_to_id": {}, "id_to_seq_id": {}}, protocol=3)
        _write_files(folder, parts)


def _write_files(folder: Path, parts: dict[str, bytes]) -> None:
    folder.mkdir(parents=True)
    for name, data in parts.items():
        with open(folder / name, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    fsync_dir(folder)

"""The graph edit of the surgery: an HNSW index without some of its elements, the links
around them repaired so that every kept element stays reachable."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memwarden.memory.compaction.hnsw import DELETED, EmptyHnsw, HnswIndex


def remove_elements(index: HnswIndex | EmptyHnsw, ids: Sequence[str], space: str) -> tuple[int, int]:
    """Remove the elements of ``ids`` and every tombstoned element from ``index``, in place;
    repair the links that pointed to them. Returns (elements removed, link lists repaired).
    An index Chroma never persisted has no elements to remove."""
    if isinstance(index, EmptyHnsw):
        return 0, 0
    h, n = index.header, index.header["count"]
    counts, flags, links0 = index.level0_lists()
    drop_labels = {index.id_map["id_to_label"][i] for i in ids if i in index.id_map["id_to_label"]}
    keep = ((flags & DELETED) == 0) & ~np.isin(index.labels, np.fromiter(drop_labels, dtype=np.uint64,
                                                                          count=len(drop_labels)))
    removed = int(n - keep.sum())
    for i in ids:
        label = index.id_map["id_to_label"].pop(i, None)
        if label is not None:
            index.id_map["label_to_id"].pop(label, None)
        if isinstance(index.id_map.get("id_to_seq_id"), dict):
            index.id_map["id_to_seq_id"].pop(i, None)
    if removed == 0:
        return 0, 0
    vectors = index.vectors
    dist = _distance(space)
    levels = np.array([len(u) for u in index.upper], dtype=np.int64)
    repaired = 0
    # Level 0, then every upper level: each kept node drops its links to removed nodes and
    # replaces them with the nearest kept nodes reachable through those removed ones.
    graphs = [(links0, counts)]
    for level in range(1, int(levels.max(initial=0)) + 1):
        lv = np.zeros((n, h["max_m"]), dtype=np.int64)
        cn = np.zeros(n, dtype=np.int64)
        for node in np.nonzero(levels >= level)[0]:
            row = index.upper[node][level - 1]
            cn[node] = row[0] & 0xFFFF
            lv[node] = row[1:]
        graphs.append((lv, cn))
    new_graphs = []
    entry = int(h["entry_point"])
    for level, (lv, cn) in enumerate(graphs):
        member = keep & (levels >= level)
        lv, cn, fixed = _repair(lv, cn, member, keep, vectors, dist)
        repaired += fixed
        if level == 0:
            start = entry if keep[entry] else int(np.argmax(np.where(keep, levels, -1)))
            _ensure_reachable(lv, cn, member, start, vectors, dist)
        new_graphs.append((lv, cn))
    # Compact: kept elements get new internal ids 0..k-1 in their old order.
    order = np.nonzero(keep)[0]
    remap = np.full(n, -1, dtype=np.int64)
    remap[order] = np.arange(len(order))
    k = len(order)
    level0 = np.zeros((k, h["size_per_element"]), dtype=np.uint8)
    level0[:, h["offset_data"]:] = index.level0[order, h["offset_data"]:]
    heads = np.zeros(k, dtype="<u4")
    table = np.zeros((k, h["max_m0"]), dtype="<u4")
    l0, c0 = new_graphs[0]
    for new, old in enumerate(order):
        nbrs = remap[l0[old, :c0[old]]]
        heads[new] = len(nbrs)
        table[new, :len(nbrs)] = nbrs
    level0[:, :4] = heads.view(np.uint8).reshape(k, 4)
    level0[:, 4:h["offset_data"]] = table.view(np.uint8).reshape(k, 4 * h["max_m0"])
    upper = []
    for old in order:
        lists = np.zeros((levels[old], 1 + h["max_m"]), dtype="<u4")
        for level in range(1, levels[old] + 1):
            ll, cc = new_graphs[level]
            nbrs = remap[ll[old, :cc[old]]]
            lists[level - 1, 0] = len(nbrs)
            lists[level - 1, 1:1 + len(nbrs)] = nbrs
        upper.append(lists)
    index.level0, index.lengths, index.upper = level0, index.lengths[order].copy(), upper
    if k:
        top = levels[order]
        entry = int(remap[h["entry_point"]]) if keep[h["entry_point"]] else int(np.argmax(top))
        h.update(count=k, entry_point=entry, max_level=int(top[entry]))
    else:
        h.update(count=0, entry_point=-1, max_level=-1)
    return removed, repaired


def _distance(space: str):
    """hnswlib's distance for ``space``: rows of ``a`` against one vector ``b``."""
    # Rows of ``a`` against ``b``: one vector, or as many rows as ``a``.
    if space == "l2":
        return lambda a, b: np.einsum("ij,ij->i", a - b, a - b)
    # "ip" and "cosine" (hnswlib stores cosine vectors unit-length and uses inner product)
    return lambda a, b: 1.0 - (a @ b if b.ndim == 1 else np.einsum("ij,ij->i", a, b))


def _repair(links: np.ndarray, counts: np.ndarray, member: np.ndarray, keep: np.ndarray,
            vectors: np.ndarray, dist) -> tuple[np.ndarray, np.ndarray, int]:
    """One level's link lists without removed nodes. A kept node keeps its kept links (the ones
    hnswlib chose) and replaces each lost one with the nearest candidate among the kept
    neighbours of its removed neighbours (further through chains of removed nodes only when
    that gives too few). The work is proportional to the links into removed nodes."""
    cap = links.shape[1]
    valid = np.arange(cap)[None, :] < counts[:, None]
    lost = valid & ~keep[links]
    affected = np.nonzero(member & lost.any(axis=1))[0]
    links, counts = links.copy(), counts.copy()
    seen = np.zeros(len(keep), dtype=bool)
    for node in affected.tolist():
        row = links[node, :counts[node]]
        ok = keep[row]
        good, gone = row[ok], row[~ok]
        need = min(len(gone), cap - len(good))
        seen[good] = True
        seen[node] = True
        cand = np.empty(0, dtype=links.dtype)
        frontier = gone
        for _ in range(4):
            hop = links[frontier][valid[frontier]]
            fresh = np.unique(hop[member[hop] & ~seen[hop]])
            seen[fresh] = True
            cand = np.concatenate([cand, fresh])
            if len(cand) >= need or not len(hop):
                break
            frontier = np.unique(hop[~keep[hop]])[:256]
        seen[good] = False
        seen[node] = False
        seen[cand] = False
        if need > 0 and len(cand):
            if len(cand) > need:
                d = dist(vectors[cand], vectors[node])
                cand = cand[np.argpartition(d, need - 1)[:need]]
            good = np.concatenate([good, cand])
        links[node, :len(good)] = good
        links[node, len(good):] = 0
        counts[node] = len(good)
    return links, counts, len(affected)


def _ensure_reachable(links: np.ndarray, counts: np.ndarray, member: np.ndarray, start: int,
                      vectors: np.ndarray, dist) -> None:
    """Make every kept level-0 node reachable from ``start`` (where searches enter level 0 in the
    worst case): an unreachable node gets a link from its nearest reachable neighbour, in a free
    slot or in place of that neighbour's farthest link to a node with other incoming links."""
    cap = links.shape[1]
    for _ in range(8):
        reached = _reachable(links, counts, start)
        missing = np.nonzero(member & ~reached)[0]
        if not len(missing):
            return
        valid = np.arange(cap)[None, :] < counts[:, None]
        indegree = np.bincount(links[valid & member[:, None]], minlength=len(member))
        progress = False
        for node in missing.tolist():
            row = links[node, :counts[node]]
            hosts = row[reached[row]]
            if not len(hosts):
                hosts = np.nonzero(reached & member)[0]
            d = dist(vectors[hosts], vectors[node])
            for host in hosts[np.argsort(d, kind="stable")][:8].tolist():
                if counts[host] < cap:
                    links[host, counts[host]] = node
                    counts[host] += 1
                else:
                    lst = links[host, :counts[host]]
                    far = lst[np.argsort(-dist(vectors[lst], vectors[host]), kind="stable")]
                    victim = next((v for v in far.tolist() if indegree[v] > 1), None)
                    if victim is None:
                        continue
                    links[host, :counts[host]] = np.where(lst == victim, node, lst)
                    indegree[victim] -= 1
                indegree[node] += 1
                progress = True
                break
        if not progress:
            return


def _reachable(links: np.ndarray, counts: np.ndarray, start: int) -> np.ndarray:
    reached = np.zeros(len(counts), dtype=bool)
    if not 0 <= start < len(counts):
        return reached
    valid = np.arange(links.shape[1])[None, :] < counts[:, None]
    reached[start] = True
    frontier = np.array([start])
    while len(frontier):
        nxt = links[frontier][valid[frontier]]
        nxt = np.unique(nxt[~reached[nxt]])
        reached[nxt] = True
        frontier = nxt
    return reached



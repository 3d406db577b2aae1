"""Signed erasure receipts: made by the erase handler, checked offline by anyone with the
store's public key (``memwarden receipt verify receipt.json --public-key key.pub``).

A receipt never holds content. It commits to the erased records with hashes: each record's
leaf is ``sha256(id + "\\n" + sha256(content))`` (lowercase hex of UTF-8 text), the leaves are
listed sorted, and ``records_digest`` is ``sha256("\\n".join(leaves))``. Someone who holds a
copy of a record (its id and content) recomputes its leaf and finds it in the list; anyone
recomputes the digest from the list. A leaf can confirm a guessed content for a known id, as
the id itself already can (ids are hashes of writer, namespace and content).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from memwarden.core.errors import ProofError, SignatureInvalid
from memwarden.core.records import ErasureReceipt, MemoryRecord
from memwarden.memory.signing import PublicKeys, SigningKeys

RECEIPT_FORMAT = "memwarden-erasure-receipt-v1"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_leaf(record_id: str, content: str) -> str:
    """The receipt's commitment to one record: ``sha256(id + "\\n" + sha256(content))``."""
    return _sha256(record_id + "\n" + _sha256(content))


def records_digest(leaves: Iterable[str]) -> str:
    """The digest of a set of leaves: ``sha256`` of the sorted leaves joined by newlines."""
    return _sha256("\n".join(sorted(leaves)))


def sign_receipt(keys: SigningKeys, fields: Mapping[str, Any], records: Iterable[MemoryRecord]) -> ErasureReceipt:
    """The signed receipt of an erasure: ``fields`` (every ErasureReceipt field but the
    digest, the leaves and the signature) plus the commitment to ``records``, the erased
    records as they stood before deletion."""
    leaves = sorted(record_leaf(r.id, r.content) for r in records)
    unsigned = ErasureReceipt.model_construct(**{  # validated below, once signed
        "format": RECEIPT_FORMAT, **fields, "records_digest": records_digest(leaves), "record_leaves": tuple(leaves),
        "key_id": "", "signature": ""})
    signed = keys.sign(unsigned.model_dump(mode="json"))
    return ErasureReceipt.model_validate(signed)


def verify_receipt(doc: object, public: PublicKeys, where: str = "the receipt") -> ErasureReceipt:
    """Check a receipt document (the parsed JSON): its shape, its signature over exactly
    these bytes' values, and that its digest, leaves and count agree. ProofError if not."""
    if not isinstance(doc, dict) or doc.get("format") != RECEIPT_FORMAT:
        raise ProofError(f"{where} is not a memwarden erasure receipt (format {RECEIPT_FORMAT!r})")
    try:
        receipt = ErasureReceipt.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ProofError(f"{where}: field {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    if set(doc) != set(ErasureReceipt.model_fields) or receipt.model_dump(mode="json") != doc:
        raise ProofError(f"{where}: its fields are not exactly those of a receipt in canonical form")
    public.verify(doc, where)
    if records_digest(receipt.record_leaves) != receipt.records_digest or list(receipt.record_leaves) != sorted(
            receipt.record_leaves):
        raise SignatureInvalid(f"{where}: records_digest is not the digest of its sorted record_leaves")
    if not (receipt.count == len(receipt.record_leaves) == len(receipt.erased_ids_sha256)):
        raise SignatureInvalid(f"{where}: count, record_leaves and erased_ids_sha256 disagree")
    return receipt


def load_receipt(path: str | Path, public: PublicKeys) -> ErasureReceipt:
    """Read and verify a receipt file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ProofError(f"cannot read the receipt {path}: {exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProofError(f"the receipt {path} is not JSON ({exc})") from None
    return verify_receipt(doc, public, f"the receipt {path}")

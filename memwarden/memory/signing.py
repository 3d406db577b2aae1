"""A store's Ed25519 signing keys: what lets someone without the store's secrets check its
erasure receipts and its audit head.

The audit log's HMAC key proves nothing to an outsider: whoever can check an HMAC can forge
one. So every store also has an Ed25519 key pair (RFC 8032, from the ``cryptography``
package). Its file, ``<audit key stem>.signing.key`` beside the audit key (``audit.signing.key``
beside ``audit.key``; mode 0600, created with the audit key), holds the private half of the
current key and the public half of every key the store ever had:

    {"format": "memwarden-signing-keys-v1", "private_key": "<base64 32-byte seed>",
     "keys": [{"key_id", "public_key", "created_at", "retired_at", "endorsement"}, ...]}

Its public part, ``{"format": "memwarden-public-keys-v1", "keys": [...]}``, is what
``memwarden keys export-public`` writes and what an auditor verifies with.

* ``public_key``: the 32-byte raw public key, standard base64; ``key_id``: the first 32 hex
  digits of its SHA-256. Every signature names the ``key_id`` that made it, so documents a
  retired key signed stay verifiable after a rotation.
* Rotation (:meth:`SigningKeys.rotate`, ``memwarden keys rotate``) makes a new key, marks the
  old one retired and has the old key endorse the new one: ``endorsement`` is
  ``{"key_id": <previous key>, "signature": <its signature over {"format":
  "memwarden-key-endorsement-v1", "key_id", "public_key", "created_at"} of the new key>}``.
  The first key has none. A list of keys verifies only as an unbroken chain of endorsements
  from its first key, so an auditor who trusts the first key id (the store's fingerprint)
  can trust every later key. The old private key is gone after a rotation.

A signed document is a JSON object with ``key_id`` and ``signature`` (standard base64 of the
64-byte Ed25519 signature) over :func:`canonical` of the object without ``signature``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from memwarden.core.errors import ProofError, SignatureInvalid
from memwarden.memory.files import atomic_write, read_text_if_present

SIGNING_SUFFIX = ".signing.key"
KEYS_FORMAT = "memwarden-signing-keys-v1"
PUBLIC_FORMAT = "memwarden-public-keys-v1"
ENDORSEMENT_FORMAT = "memwarden-key-endorsement-v1"
_KEY_FIELDS = {"key_id", "public_key", "created_at", "retired_at", "endorsement"}


def canonical(doc: Mapping[str, Any]) -> bytes:
    """The bytes a signature covers: JSON with keys sorted, no whitespace, UTF-8, no NaN.

    For memwarden's documents (ASCII keys, no floats) this is RFC 8785 (JCS); in Python it
    is ``json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def signing_key_path(audit_key: Path) -> Path:
    """The signing key file that belongs with the audit key ``audit_key``."""
    return audit_key.with_name(audit_key.stem + SIGNING_SUFFIX)


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public_raw: bytes) -> str:
    """The id of a public key: the first 32 hex digits of SHA-256 of its 32 raw bytes."""
    return hashlib.sha256(public_raw).hexdigest()[:32]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: object, length: int, what: str) -> bytes:
    try:
        data = base64.b64decode(text, validate=True) if isinstance(text, str) else b""
    except (binascii.Error, ValueError):
        data = b""
    # Only the canonical spelling: base64 leaves spare bits in its last digit, and another
    # spelling of the same bytes would be a changed document that still verifies.
    if len(data) != length or _b64(data) != text:
        raise ProofError(f"{what} is not {length} bytes in canonical base64")
    return data


def _endorsed(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {"format": ENDORSEMENT_FORMAT, "key_id": entry["key_id"], "public_key": entry["public_key"],
            "created_at": entry["created_at"]}


class PublicKeys:
    """Every public key of one store, checked to be one chain of endorsed rotations."""

    def __init__(self, keys: Sequence[Mapping[str, Any]], where: str = "the public keys") -> None:
        if not isinstance(keys, Sequence) or isinstance(keys, (str, bytes)) or not keys:
            raise ProofError(f"{where}: 'keys' must be a non-empty list")
        self.where = where
        self.keys: list[dict[str, Any]] = []
        self._public: dict[str, Ed25519PublicKey] = {}
        for n, entry in enumerate(keys, 1):
            if not isinstance(entry, Mapping) or set(entry) != _KEY_FIELDS:
                raise ProofError(f"{where}: key {n} must have exactly the fields {sorted(_KEY_FIELDS)}")
            raw = _unb64(entry["public_key"], 32, f"{where}: key {n}'s public_key")
            if entry["key_id"] != key_id(raw):
                raise ProofError(f"{where}: key {n}'s key_id is not the id of its public key")
            if entry["key_id"] in self._public:
                raise ProofError(f"{where}: key {entry['key_id']} is listed twice")
            for name in ("created_at", "retired_at"):
                if not isinstance(entry[name], str) and not (name == "retired_at" and entry[name] is None):
                    raise ProofError(f"{where}: key {n}'s {name} must be a timestamp")
            endorsement = entry["endorsement"]
            if n == 1:
                if endorsement is not None:
                    raise ProofError(f"{where}: the first key is the store's own and has no endorsement")
            else:
                previous = self.keys[-1]["key_id"]
                if not isinstance(endorsement, Mapping) or endorsement.get("key_id") != previous:
                    raise ProofError(f"{where}: key {n} ({entry['key_id']}) is not endorsed by key {n - 1} "
                                     f"({previous}): it is not a rotation of this store's key")
                signature = _unb64(endorsement.get("signature"), 64, f"{where}: key {n}'s endorsement signature")
                try:
                    self._public[previous].verify(signature, canonical(_endorsed(entry)))
                except InvalidSignature:
                    raise ProofError(f"{where}: key {n}'s endorsement by key {n - 1} does not verify") from None
            self._public[entry["key_id"]] = Ed25519PublicKey.from_public_bytes(raw)
            self.keys.append(dict(entry))

    @property
    def first_id(self) -> str:
        """The id of the store's first key: its fingerprint, to pin when you first get it."""
        return self.keys[0]["key_id"]

    @property
    def current_id(self) -> str:
        """The id of the key that signs now."""
        return self.keys[-1]["key_id"]

    @classmethod
    def from_json(cls, text: str, where: str) -> PublicKeys:
        """Parse a public key file's text; ProofError says what is wrong with it."""
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ProofError(f"{where} is not JSON ({exc})") from None
        if not isinstance(doc, dict) or doc.get("format") != PUBLIC_FORMAT:
            raise ProofError(f"{where} is not a memwarden public key file (format {PUBLIC_FORMAT!r})")
        return cls(doc.get("keys"), where)

    @classmethod
    def load(cls, path: str | Path) -> PublicKeys:
        """Read a public key file, as ``memwarden keys export-public`` writes it."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ProofError(f"cannot read the public key file {path}: {exc}") from None
        return cls.from_json(text, str(path))

    def to_json(self) -> str:
        """The public key file's text."""
        return json.dumps({"format": PUBLIC_FORMAT, "keys": self.keys}, indent=1) + "\n"

    def verify(self, doc: Mapping[str, Any], what: str) -> str:
        """Check the signature of the signed document ``doc`` (called ``what`` in errors);
        returns the id of the key that made it."""
        kid = doc.get("key_id")
        public = self._public.get(kid) if isinstance(kid, str) else None
        if public is None:
            raise SignatureInvalid(f"{what} is signed by key {kid!r}, which is not among the keys in {self.where} "
                             "(signed by another store?)")
        signature = _unb64(doc.get("signature"), 64, f"{what}'s signature")
        try:
            public.verify(signature, canonical({k: v for k, v in doc.items() if k != "signature"}))
        except InvalidSignature:
            raise SignatureInvalid(f"{what}: the signature does not verify with key {kid} "
                             "(the document was changed after it was signed)") from None
        return kid


class SigningKeys:
    """The store's current private key and all its public keys, kept in one 0600 file."""

    def __init__(self, path: Path, private: Ed25519PrivateKey, public: PublicKeys) -> None:
        self.path = path
        self._private = private
        self.public = public
        self.key_id = public.current_id
        if key_id(_raw(private.public_key())) != self.key_id:
            raise ProofError(f"{path}: the private key is not the current (last) key of its list")

    @classmethod
    def load(cls, path: Path) -> SigningKeys | None:
        """The keys in ``path``; None when there is no such file."""
        text = read_text_if_present(path, what="signing key", error=ProofError)
        if text is None:
            return None
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            doc = None
        if not isinstance(doc, dict) or doc.get("format") != KEYS_FORMAT:
            raise ProofError(f"the signing key {path} is not a memwarden signing key file")
        seed = _unb64(doc.get("private_key"), 32, f"the signing key {path}'s private_key")
        return cls(path, Ed25519PrivateKey.from_private_bytes(seed), PublicKeys(doc.get("keys"), str(path)))

    @classmethod
    def create(cls, path: Path) -> SigningKeys:
        """A fresh key written atomically (mode 0600) to ``path``; if another process made one
        first, that one (an existing key is never overwritten)."""
        private = Ed25519PrivateKey.generate()
        entry = {"key_id": key_id(_raw(private.public_key())), "public_key": _b64(_raw(private.public_key())),
                 "created_at": _now(), "retired_at": None, "endorsement": None}
        cls._write(path, private, [entry], replace=False)
        keys = cls.load(path)
        assert keys is not None
        return keys

    @staticmethod
    def _write(path: Path, private: Ed25519PrivateKey, keys: list[dict[str, Any]], *, replace: bool) -> None:
        seed = private.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                     serialization.NoEncryption())
        text = json.dumps({"format": KEYS_FORMAT, "private_key": _b64(seed), "keys": keys}, indent=1) + "\n"
        atomic_write(path, text, replace=replace)

    def sign(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """``doc`` with ``key_id`` and ``signature`` added (any ``key_id``/``signature`` in it
        are replaced)."""
        unsigned = {k: v for k, v in doc.items() if k not in ("key_id", "signature")}
        unsigned["key_id"] = self.key_id
        return {**unsigned, "signature": _b64(self._private.sign(canonical(unsigned)))}

    def rotate(self) -> SigningKeys:
        """Replace the current key with a new one that it endorses; the old one is retired
        (its public half stays, for what it signed). Returns the keys now in the file."""
        new = Ed25519PrivateKey.generate()
        raw = _raw(new.public_key())
        now = _now()
        entry = {"key_id": key_id(raw), "public_key": _b64(raw), "created_at": now, "retired_at": None}
        entry["endorsement"] = {"key_id": self.key_id,
                                "signature": _b64(self._private.sign(canonical(_endorsed(entry))))}
        keys = [dict(k) for k in self.public.keys]
        keys[-1]["retired_at"] = now
        self._write(self.path, new, keys + [entry], replace=True)
        rotated = self.load(self.path)
        assert rotated is not None
        return rotated

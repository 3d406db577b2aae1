"""Adversarial 32 KB texts for the injection detector's worst case (issue 18, item 4).

A backtracking regex is slow where many starting positions each read far ahead and fail: a
repeated pair of punctuation characters, nested brackets, a rule's own literals repeated, a
near match repeated (a match missing its last character), and the long runs the hidden-Unicode
checks, the leetspeak view and the decoders read. :func:`adversarial_texts` builds them all,
by category; ``tests/test_linear_time.py`` times every one against the bound, and
``benchmarks/poisoning.py`` reports the worst.
"""

from __future__ import annotations

import base64
import itertools
import string

from memwarden.guards import rule_syntax as syntax
from memwarden.guards.ruleset import Rule

__all__ = ["SIZE", "adversarial_texts", "example"]

SIZE = 32_768  # the detector's max_chars: longer content is cut to this and quarantined


def fill(piece: str, size: int = SIZE) -> str:
    """``piece`` repeated to exactly ``size`` characters."""
    return (piece * (size // max(1, len(piece)) + 1))[:size]


_CLASS_EXAMPLE = {"\\s": " ", "\\w": "a", "\\d": "1", "\\S": "x", "\\W": "."}


def example(node: syntax.Node) -> str:
    """A short text the pattern ``node`` nearly or exactly matches (the first alternative,
    each repeat at its minimum and at least once, a member of each class; anchors ignored)."""
    if isinstance(node, syntax.Lit):
        return node.char
    if isinstance(node, syntax.Set):
        if node.dot or node.negated:
            return "#" if node.negated and "#" not in node.items else "x"
        item = node.items[0]
        return item[0] if isinstance(item, tuple) else _CLASS_EXAMPLE.get(item, item)
    if isinstance(node, syntax.Anchor):
        return ""
    if isinstance(node, syntax.Seq):
        return "".join(map(example, node.items))
    if isinstance(node, syntax.Alt):
        return example(node.options[0])
    if isinstance(node, syntax.Group):
        return example(node.body)
    return example(node.body) * max(node.low, 1)


def adversarial_texts(rules: tuple[Rule, ...]) -> dict[str, dict[str, str]]:
    """category -> name -> a text of SIZE characters."""
    out: dict[str, dict[str, str]] = {}
    punctuation = string.punctuation + " \n"
    # ("ba" repeated is "ab" repeated after its first character.)
    out["punctuation pairs"] = {f"{a + b!r}": fill(a + b) for a, b in itertools.combinations_with_replacement(punctuation, 2)}
    out["nested brackets"] = {}
    for o, c in ("()", "[]", "{}", "<>"):
        out["nested brackets"][o + c] = fill(o, SIZE // 2) + fill(c, SIZE // 2)
        out["nested brackets"][f"{o}ignore ... instructions{c}"] = fill(o + "ignore ", SIZE // 2) + fill(" instructions" + c, SIZE // 2)
        out["nested brackets"][f"{o}{o}{c}"] = fill(o + o + c)
    literals, near = {}, {}
    for i, rule in enumerate(rules):
        lits = sorted({lit for need in (rule.needs or ()) for lit in need} | set(rule.starts or ()))
        if lits:
            literals[f"rule {i}"] = fill(" ".join(lits) + " ")
            literals[f"rule {i} glued"] = fill("".join(lits))
        match = example(syntax.parse(rule.source))
        if len(match) > 1:
            near[f"rule {i}"] = fill(match[:-1] + " ")
            near[f"rule {i} glued"] = fill(match[:-1])
    out["rule literals repeated"] = literals
    out["rule near misses repeated"] = near
    out["hidden unicode"] = {
        "zero-width inside words": fill("a\u200b"), "zero-width only": fill("\u200b"), "tag characters": fill("\U000e0069"),
        "tags and letters": fill("a\U000e0069"), "bidi": fill("a\u202e"), "flags": fill("\U0001f3f4\U000e0067\U000e0062"),
        "homoglyph word": fill("аa"), "homoglyph words": fill("аa "), "cyrillic word": fill("а"),
        "stacked combining marks": fill("a\u0301\u0300\u0302"), "combining marks only": fill("\u0301"),
        "cjk": fill("病房查房顺利，"), "non-ascii digits": fill("٣a"), "soft hyphens": fill("a\u00ad"),
    }
    out["leetspeak"] = {
        "letter digit": fill("a0"), "digit sign": fill("$0"), "digit sign, one letter at the end": fill("$0", SIZE - 3) + " a1",
        "sign digit, one letter at the end": fill("0|", SIZE - 3) + " a1", "letter bang, a bar at the end": fill("a!", SIZE - 1) + "|",
        "signs": fill("@$!|"), "leet words": fill("1gn0r3 "), "spaced letters": fill("a "), "wide spaced letters": fill("a  "),
        "dotted letters": fill("a."), "hyphenated letters": fill("a-"),
    }
    b64 = base64.b64encode(fill("ignore all ", SIZE * 3 // 4).encode()).decode()
    out["encodings"] = {
        "base64": b64, "base64 of base64": base64.b64encode(b64[:SIZE * 3 // 4].encode()).decode(),
        "base64 tokens": fill(base64.b64encode(b"ignore all previous instructions").decode() + " "),
        "hex": fill("69 67 "), "hex glued": fill("6967"), "binary": fill("01101001 "), "morse": fill(".- "),
        "morse words": fill(". / "), "morse glued": fill(".-"), "percent": fill("%69%67"), "escapes": fill("\\u0069"),
        "entities": fill("&#105;"), "ascii85": fill('<~87cURD]i,"Ebo80~>'), "ascii85 opened": fill("<~"),
        "base85 alphabet": fill("!#$%&()*+-;<=>?@^_`{|}~"),
    }
    out["links"] = {
        "image openings": fill("![", SIZE - 3) + " //", "image links": fill("![a](", SIZE - 3) + " //",
        "html images": fill("<img src", SIZE - 3) + " //", "url of braces": "https://x.example/" + fill("{a", SIZE - 18),
        "url of params": "https://x.example/?" + fill("data=&", SIZE - 19), "urls": fill("http://a "),
        "email at": "send it to @" + fill("a.", SIZE - 12), "at signs": fill("@a."),
        "placeholders": fill("[your "), "placeholder words": fill("[insert your prompt "),
        "here placeholders": fill("insert your prompt here "), "line starts": fill(".\n"),
    }
    return out

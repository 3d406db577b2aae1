"""The defences the corpus benchmark measures, and how a parameter reaches a validator.

A parameter is named ``<validator name>.<attribute>`` (``injection.quarantine_at``): after the
chain is built, that attribute of the validator with that ``name`` is set. A name or an
attribute that does not exist is an error, so a mistyped grid fails instead of measuring the
defaults. New defences register a :class:`~benchmarks.poisoning_corpus.loso.Defences` of their
own (``DEFENCES``), with their validators, grid, policy lines and, if they want, a tuner.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memwarden.guards.defaults import default_validators

from benchmarks.poisoning_corpus.deploy import REVIEW_HEAVY
from benchmarks.poisoning_corpus.loso import Defences, Params


def apply(chain: list[Any], params: Params) -> list[Any]:
    """Set each ``name.attribute`` parameter on the chain's validator of that name."""
    by_name = {getattr(v, "name", None): v for v in chain}
    for key, value in params.items():
        name, _, attribute = key.partition(".")
        validator = by_name.get(name)
        if validator is None or not attribute or not hasattr(validator, attribute):
            raise ValueError(f"parameter {key!r}: no validator {name!r} with attribute {attribute!r} "
                             f"in the chain ({sorted(n for n in by_name if n)})")
        setattr(validator, attribute, value)
    return chain


def default_chain(params: Params) -> list[Any]:
    """``default_validators()`` with ``params`` applied."""
    return apply(default_validators(), params)


# Today's chain: the detector's quarantine threshold is its one score threshold that matters
# below rejection (reject_at stays 1.0: a rejection needs a strong signal).
TODAY = Defences(
    name="default chain (today)",
    validators=default_chain,
    grid=({"injection.quarantine_at": 0.4}, {"injection.quarantine_at": 0.3}, {"injection.quarantine_at": 0.5}),
)

# Issue 18: the typed-content guard and the content=directive review lines of the deployment
# policy (deploy.py), and the contradiction check's provenance trust, all in the default
# chain. Tuned: the detector's quarantine threshold, and how many content words a related
# record must share for a procedure change to count.
DIRECTIVES = Defences(
    name="typed directives, provenance trust (issue 18)",
    validators=default_chain,
    grid=({"injection.quarantine_at": 0.4, "contradiction.min_shared": 2},
          {"injection.quarantine_at": 0.3, "contradiction.min_shared": 2},
          {"injection.quarantine_at": 0.4, "contradiction.min_shared": 3}),
)

# The review-heavy policy arm: the same chain and grid, and the deployment policy with
# deploy.REVIEW_HEAVY appended (every agent-, tool- or externally-written record into a shared
# knowledge namespace waits for review). Tuned afresh, leave-one-source-out, like the others.
REVIEW_HEAVY_ARM = replace(DIRECTIVES, name="typed directives, provenance trust, review-heavy policy",
                           policy=lambda params: REVIEW_HEAVY)

DEFENCES = {"today": TODAY, "directives": DIRECTIVES, "review-heavy": REVIEW_HEAVY_ARM}

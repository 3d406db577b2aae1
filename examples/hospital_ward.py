"""Hospital ward: a physician, a nurse, a billing clerk and a privacy officer share one memory.

The scenario ships inside memwarden as ``memwarden.demo`` (it is what ``memwarden demo`` and
``make demo`` run); this file runs it as an example, with the same options:

    python examples/hospital_ward.py                             # offline, scripted models
    python examples/hospital_ward.py --model openai:gpt-4o-mini  # a real model
    python examples/hospital_ward.py --hashing                   # the fast test embedding
"""

from memwarden.demo import main, run_hospital

__all__ = ["main", "run_hospital"]

if __name__ == "__main__":
    raise SystemExit(main())

"""The memory-poisoning corpus (issue 18): records, the deployment they are written into, the
builders that convert public attack research into memory writes, and the leave-one-source-out
measurement of ``benchmarks/poisoning.py --corpus``.

The corpus lives in ``benchmarks/data/poisoning/<source>.jsonl``, one file per source, with
``SOURCES.md`` beside it (where each source comes from, its license, how it was converted).
"""

"""What the tests and the benchmarks share (never the product; benchmarks import this, never
``tests/``, so they run from a clone without the test suite's helpers):

- ``fakes``: deterministic embedders (a hashing bag of words that records what it embedded).
- ``exports``: writers of every built-in source format (ChatGPT, Claude, Gemini Takeout and AI
  Studio, mbox, maildir, .eml, an Obsidian vault), deterministic by seed, so every plugin runs
  without ../shared; the mail and vault builders say what a correct reader must find.
- ``dump``: a canonical dump of a mind, to compare minds built by different histories.
- ``crash``: SIGKILL a harvest in each stage, rerun it, compare with a clean run.
- ``faults``: a read-only mind or folder, a full disk, a missing model package.
- ``concurrency``: two harvesting processes and a recalling one on one mind.
- ``load``: the query service under mixed, partly hostile load from concurrent clients.
- ``hostile``: a corpus of broken inputs (truncated, invalid UTF-8, deep, unsafe archives) and
  the harness that harvests it and checks nothing was lost or escaped.
- ``sizes``: single enormous records, each harvested in a fresh process that reports its memory.
- ``redaction_corpus``: chat messages with planted secrets and personal data, and decoys, for
  the redaction tests and benchmark.
- ``properties``: Hypothesis properties of the parsers and of search, run small in CI and large
  in the benchmark.
"""

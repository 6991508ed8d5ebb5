"""What the tests and the benchmarks share: a deterministic fake embedder, writers of real export
formats, and the drivers of fault, crash, load and hostile-input trials. Not used by the product."""

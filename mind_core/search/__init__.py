"""Finding frames: the keyword and vector lanes, their fusion and scoring, time windows, snippets, filters and the linker."""

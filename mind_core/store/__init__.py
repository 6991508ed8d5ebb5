"""Where a mind's rows live: the SQLite connection, schema and migrations, frames, sessions, identity, awareness, the write lock and the home folder of minds."""

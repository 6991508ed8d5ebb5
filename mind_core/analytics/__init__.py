"""Parquet snapshots of minds, the DuckDB views over them and the reports drawn from them."""

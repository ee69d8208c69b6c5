"""Recording sessions to SQLite, reading them back, and exporting reports."""

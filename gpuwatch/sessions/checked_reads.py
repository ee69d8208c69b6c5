"""Reading a session's tables with every cell checked against what it may hold.

A session file may be damaged or crafted, so each value read is checked and a bad one
is refused naming its table, column and row, never half-read into a crash further on.
Text columns take any value as text (bytes that are not UTF-8 are decoded with
U+FFFD); numbers must be numbers, finite and in range; "!" marks a column that may not
be NULL.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import numpy as np

from gpuwatch.sessions import read_only
from gpuwatch.sessions.errors import SessionFileError

TIME_LIMIT_S = 1e11              # about 3000 years: a bigger time is a damaged cell
INT_LIMIT = 2**63
# columns added to a table after files of the same version were written: read as NULL
# from a file without them
LATER_COLUMNS = frozenset({"measured_bandwidth_bytes_per_s"})


class CheckedReads:
    """A session opened read-only (:func:`read_only.open_read_only`), read through
    queries whose database errors become :class:`SessionFileError` and whose cells are
    checked as they are read."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._conn = read_only.open_read_only(self.path)
        try:
            self.version = int(self._conn.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.Error as exc:
            self._conn.close()
            raise SessionFileError(str(self.path), read_only.describe_database_error(exc)) \
                from None
        self._table_columns: dict[str, frozenset[str]] = {}

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def damaged(self, reason: str) -> SessionFileError:
        return SessionFileError(str(self.path), f"is damaged: {reason}")

    @contextmanager
    def _query(self) -> Iterator[sqlite3.Connection]:
        try:
            yield self._conn
        except sqlite3.DatabaseError as exc:
            exc = read_only.translate_error(self._conn, exc)
            raise SessionFileError(str(self.path), read_only.describe_database_error(exc)) \
                from None
        except sqlite3.Error as exc:
            raise SessionFileError(str(self.path), f"cannot be read ({exc})") from None
        except RecursionError:
            raise self.damaged("a value is nested too deeply to read") from None
        except UnicodeDecodeError:      # SQLite's own message quotes damaged schema text
            raise self.damaged(read_only.UNREADABLE_DEFINITIONS) from None

    def _rows(self, table: str, columns: str, tail: str = "",
              params: tuple = (), computed: dict[str, str] | None = None) -> list[tuple]:
        """``SELECT columns FROM table tail``, each cell checked against its kind.

        ``columns`` is ``"name:kind, ..."``; kinds are text, int, real, bytes, time, each
        with ``!`` when the column is required. ``computed`` reads a column through an
        SQL expression instead (a damaged cell is still named by the column)."""
        spec = [c.strip().split(":") for c in columns.split(",")]
        computed = computed or {}
        sql = (f"SELECT rowid, {', '.join(computed.get(n, n) for n, _ in spec)} "
               f"FROM {table} {tail}")
        with self._query() as c:
            rows = c.execute(sql, params).fetchall()
        out = []
        for row in rows:
            out.append(tuple(self._cell(v, kind, table, name, row[0])
                             for v, (name, kind) in zip(row[1:], spec, strict=True)))
        return out

    def _cell(self, value: Any, kind: str, table: str, column: str, rowid: Any) -> Any:
        required = kind.endswith("!")
        kind = kind.rstrip("!")
        where = f"{table}.{column} in row {rowid}"
        if value is None:
            if required:
                raise self.damaged(f"{where} is empty but must hold a value")
            return None
        if kind == "text":
            if isinstance(value, bytes):
                return read_only.decode_text(value)
            return value if isinstance(value, str) else str(value)
        if isinstance(value, bool) or not isinstance(value, int | float):
            shown = repr(value if not isinstance(value, str | bytes) else value[:24])
            raise self.damaged(f"{where} holds {type(value).__name__} {shown} where a number "
                               "belongs")
        limit = TIME_LIMIT_S if kind == "time" else INT_LIMIT
        if not math.isfinite(value) or abs(value) >= limit:
            raise self.damaged(f"{where} holds an impossible number ({value!r})")
        if kind in ("int", "bytes") and isinstance(value, float):
            if not value.is_integer():
                raise self.damaged(f"{where} holds {value!r} where a whole number belongs")
            return int(value)
        if kind == "time":
            return float(value)
        return value

    def _series(self, table: str, columns: tuple[str, ...], kinds: tuple[str, ...],
                where: str, params: tuple, state: bool = False,
                order: str = "t_s, rowid") -> tuple[np.ndarray, list[str]]:
        """Numeric columns as one float array (NULL -> NaN), and with ``state`` the
        ``state`` text column too, read in one query; a damaged cell is refused."""
        select = self._selectable(table, ("state", *columns) if state else columns)
        with self._query() as c:
            rows = c.execute(f"SELECT {', '.join(select)} FROM {table} {where} "
                             f"ORDER BY {order}", params).fetchall()
        return self._checked(rows, table, columns, kinds, where, params, state, order)

    def _checked(self, rows: list, table: str, columns: tuple[str, ...],
                 kinds: tuple[str, ...], where: str, params: tuple, state: bool,
                 order: str) -> tuple[np.ndarray, list[str]]:
        """Rows of numbers (after a ``state`` text column with ``state``) as a float
        array, checked in numpy; a damaged cell is found (by reading the table again
        through :meth:`_rows`) and named."""
        states: list[str] = []
        if state:
            states = [r[0] if isinstance(r[0], str) else self._text(r[0]) for r in rows]
            rows = [r[1:] for r in rows]
        try:
            data = np.array(rows, dtype=np.float64).reshape(-1, len(columns))
        except (ValueError, TypeError, OverflowError):
            data = None
        if data is not None and None not in states:
            known = data[~np.isnan(data)]
            limits = np.array([TIME_LIMIT_S if k.startswith("time") else INT_LIMIT
                               for k in kinds])
            required = np.array([k.endswith("!") for k in kinds])
            with np.errstate(invalid="ignore"):
                in_range = bool(np.all(np.isfinite(known))) and \
                    not np.any(np.abs(data) >= limits)
            if in_range and not np.isnan(data[:, required]).any():
                return data, states
        # something is wrong: find the cell to name it
        spec = [f"{c}:{k}" for c, k in zip(columns, kinds, strict=True)]
        self._rows(table, ", ".join((["state:text!"] if state else []) + spec),
                   f"{where} ORDER BY {order}", params, self._absent(table, columns))
        if data is not None and None not in states:
            return data, states      # every cell is right: 2**63 - 1 is 2.0**63 as a float
        raise self.damaged(f"{table} holds a value that is not a number")

    def _absent(self, table: str, columns: tuple[str, ...]) -> dict[str, str]:
        """The later columns of ``columns`` this file lacks, each read as NULL."""
        if not LATER_COLUMNS.intersection(columns):
            return {}
        present = self._columns(table)
        return {c: "NULL" for c in columns if c in LATER_COLUMNS and c not in present}

    def _selectable(self, table: str, columns: tuple[str, ...]) -> tuple[str, ...]:
        """``columns`` for a SELECT, a later column this file lacks read as NULL."""
        absent = self._absent(table, columns)
        return tuple(f"NULL AS {c}" if c in absent else c for c in columns)

    def _columns(self, table: str) -> frozenset[str]:
        """The columns ``table`` has in this file (asked once per reader and table)."""
        known = self._table_columns.get(table)
        if known is None:
            with self._query() as c:
                known = frozenset(row[1] for row in c.execute(
                    "SELECT * FROM pragma_table_info(?)", (table,)).fetchall())
            self._table_columns[table] = known
        return known

    @staticmethod
    def _text(value: Any) -> str | None:
        if value is None or isinstance(value, str):
            return value
        return read_only.decode_text(value) if isinstance(value, bytes) else str(value)

"""What a service needs from the database to read (or write): a Session or a Connection, either.

Reading commands (`mlcost report`, `gate`, `audit`, `review show`) open a Core Connection and
query the tables of bot/db/tables.py, so they never load SQLAlchemy's ORM (about 0.12 s of a
process, issue 24); Slack and the scheduler call the same services with their Session. Both are a
`Reader`. `mlcost ingest` writes the same way, on a Connection in a transaction: a `Writer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

if TYPE_CHECKING:
    from sqlalchemy import Connection, Executable, Result, ScalarResult
    from sqlalchemy.sql.selectable import TypedReturnsRows
    from typing_extensions import TypeVarTuple

    _Ts = TypeVarTuple("_Ts")

_T = TypeVar("_T")


class Reader(Protocol):
    """The statements a read runs: `Session` and `Connection` both have these three."""

    @overload
    def execute(self, statement: TypedReturnsRows[*_Ts], /) -> Result[*_Ts]: ...

    @overload
    def execute(self, statement: Executable, /) -> Result[*tuple[Any, ...]]: ...

    def execute(self, statement: Executable, /) -> Result[*tuple[Any, ...]]: ...

    @overload
    def scalar(self, statement: TypedReturnsRows[_T], /) -> _T | None: ...

    @overload
    def scalar(self, statement: Executable, /) -> Any: ...

    def scalar(self, statement: Executable, /) -> Any: ...

    @overload
    def scalars(self, statement: TypedReturnsRows[_T], /) -> ScalarResult[_T]: ...

    @overload
    def scalars(self, statement: Executable, /) -> ScalarResult[Any]: ...

    def scalars(self, statement: Executable, /) -> ScalarResult[Any]: ...


class Writer(Reader, Protocol):
    """What a service that writes runs: a Reader's methods, `execute` with parameters too.

    A Session, or a Connection inside a transaction (`mlcost ingest` writes the ledger on one:
    it never loads the ORM either).
    """

    def execute(  # type: ignore[override]
        self, statement: Executable, parameters: Any = None, /
    ) -> Result[*tuple[Any, ...]]: ...


def connection_of(reader: Reader) -> Connection:
    """Return the Connection a Session (its transaction's) or a Connection runs statements on."""
    from sqlalchemy import Connection

    if isinstance(reader, Connection):
        return reader
    return reader.connection()  # type: ignore[attr-defined,no-any-return]


def dialect_name(reader: Reader) -> str:
    """Return the dialect name (`sqlite`, `postgresql`) behind a Session or a Connection."""
    dialect = getattr(reader, "dialect", None)  # a Connection
    if dialect is None:  # a Session
        dialect = reader.get_bind().dialect  # type: ignore[attr-defined]
    return str(dialect.name)

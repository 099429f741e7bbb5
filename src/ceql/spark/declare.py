"""What ``find`` needs from a user's DataFrame: the declaration (given, or derived from the
DataFrame's schema) and a check of its columns whose errors name the user's columns only."""

from __future__ import annotations

from ceql.errors import CeqlError
from ceql.lang import ast
from ceql.lang.schema import TIME_UNITS, Attribute, EventTypeDecl, Schema
from ceql.lang.visit import walk

#: Spark type names (``DataType.typeName()``) -> declared attribute types.
_SPARK_TYPES = {
    "long": "int",
    "integer": "int",
    "short": "int",
    "byte": "int",
    "double": "double",
    "float": "double",
    "decimal": "double",
    "string": "string",
    "boolean": "boolean",
}
_TIME_TYPES = ("long", "integer", "timestamp", "timestamp_ntz", "string")


def declare(schema_or_declaration) -> Schema:
    """A Schema from a Schema or declaration text."""
    import ceql

    if isinstance(schema_or_declaration, Schema):
        return schema_or_declaration
    return ceql.declare(schema_or_declaration)


def check_event_type_column(df, event_type: str) -> None:
    """The event-type column must exist and hold strings."""
    kinds = dict(df.dtypes)
    if event_type not in kinds:
        raise CeqlError(
            f"the DataFrame has no event-type column {event_type!r} (columns: {', '.join(df.columns)}); "
            "name it with event_type=..."
        )
    if kinds[event_type] != "string":
        raise CeqlError(f"the event-type column {event_type!r} must hold strings, not {kinds[event_type]}")


def query_event_types(query_text: str) -> tuple[list[str], tuple[str, ...]]:
    """The event type names a query mentions (in order of appearance) and its FROM streams."""
    from ceql.lang import parse_query

    parsed = parse_query(query_text)
    names: list[str] = []
    for node in walk(parsed):
        if isinstance(node, ast.EventType) and node.name not in names:
            names.append(node.name)
    return names, parsed.streams


def schema_from_dataframe(
    df,
    query_text: str,
    *,
    event_type: str = "event_type",
    time_column: str | None = None,
    time_unit: str | None = None,
) -> Schema:
    """A declaration derived from ``df.schema``: every event type the query names has every
    column of the DataFrame (but the event-type column) as an attribute, typed from its Spark
    type; ``time_column`` is the primary_time (integers in ``time_unit``, default ns, or
    timestamps, or ISO-8601 strings). Columns of other types are left out (a query that reads
    one gets an error naming it)."""
    check_event_type_column(df, event_type)
    if time_column is not None and time_column not in df.columns:
        raise CeqlError(
            f"time_column={time_column!r} is not a column of the DataFrame ({', '.join(df.columns)})"
        )
    if time_unit is not None and time_unit not in TIME_UNITS:
        raise CeqlError(f"time_unit must be one of {', '.join(TIME_UNITS)}, not {time_unit!r}")
    attributes: list[Attribute] = []
    skipped: dict[str, str] = {}
    for field in df.schema.fields:
        kind = field.dataType.typeName()
        if field.name == event_type:
            continue
        if field.name == time_column:
            if kind not in _TIME_TYPES:
                raise CeqlError(
                    f"time_column {time_column!r} has type {kind}: use integers, timestamps or ISO-8601 text"
                )
            unit = time_unit if kind in ("long", "integer") else None
            attributes.append(Attribute(field.name, "primary_time", unit))
        elif kind in _SPARK_TYPES:
            attributes.append(Attribute(field.name, _SPARK_TYPES[kind]))
        else:
            skipped[field.name] = kind
    names, streams = query_event_types(query_text)
    _check_reads(query_text, skipped)
    if not names:
        raise CeqlError("the query names no event type")
    types = {name: EventTypeDecl(name, tuple(attributes)) for name in names}
    return Schema(types, {stream: tuple(names) for stream in (streams or ("events",))}, [])


def _check_reads(query_text: str, skipped: dict[str, str]) -> None:
    from ceql.lang import parse_query

    for node in walk(parse_query(query_text)):
        name = getattr(node, "attr", None) if isinstance(node, ast.Aggregate | ast.Prev) else None
        if isinstance(node, ast.Attr):
            name = node.name
        if name in skipped:
            raise CeqlError(
                f"the query reads column {name!r}, whose Spark type {skipped[name]} has no CEQL type "
                "(cast it to a number, string or boolean, or name it as time_column=)"
            )


def check_columns(df, catalog, event_type: str) -> None:
    """Every column the query reads must be in the DataFrame: a misspelt column would otherwise
    match nothing, silently."""
    check_event_type_column(df, event_type)
    present = set(df.columns) | {"event_type"}
    missing = sorted(catalog.required - present)
    if missing:
        raise CeqlError(catalog.missing_message(missing))

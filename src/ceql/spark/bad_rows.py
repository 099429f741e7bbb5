"""``find``'s bad-row policy (``on_error="skip"`` or ``"dead-letter"``): the rows of a DataFrame
that the local engine would reject, set apart before the events are ordered, by the same rule
(``BatchBuilder.type_rows``: every declared column the DataFrame has is typed and checked; a row
with no time, an unknown event type or a bad value is bad) and with the same reasons.

The rows are typed on the workers, in one ``mapInArrow`` pass that marks each row good or bad;
the good rows go on to ``find`` with their columns as they were, the bad ones become dead-letter
records (``reason``, and ``input``: the row as JSON text, as the local API writes it). Both are
lazy DataFrames: nothing runs until an action.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ceql.errors import CeqlError

_BAD = "__ceql_bad"
_REASON = "__ceql_reason"
POLICIES = ("fail", "skip", "dead-letter")


def split_bad_rows(df, compiled, on_error: str, dead_letter: Callable[[Any], Any] | None):
    """``df`` without the rows the local engine rejects; with ``"dead-letter"``, ``dead_letter``
    is called once with the lazy DataFrame of their records (columns ``source``, ``reason``,
    ``input``), e.g. ``lambda bad: bad.write.json(path)``."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, StringType, StructField, StructType

    if on_error not in POLICIES:
        raise CeqlError(f"on_error must be one of {', '.join(POLICIES)}, not {on_error!r}")
    if on_error == "dead-letter" and not callable(dead_letter):
        raise CeqlError(
            "on_error='dead-letter' needs dead_letter=, a function of the DataFrame of rejected rows "
            "(e.g. lambda bad: bad.write.json('dead'))"
        )
    if on_error == "fail":
        return df
    declaration = compiled.checked.schema.text()
    required = sorted(compiled.facts.catalog.required)
    marked_schema = StructType(
        [*df.schema.fields, StructField(_BAD, BooleanType(), False), StructField(_REASON, StringType(), True)]
    )

    def mark(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        builder = _builder(declaration, required)
        for batch in batches:
            yield _marked(batch, builder)

    marked = df.mapInArrow(mark, marked_schema)
    good = marked.where(~F.col(_BAD)).drop(_BAD, _REASON)
    if on_error == "dead-letter":
        columns = [F.col(f"`{name}`") for name in df.columns]
        bad = marked.where(F.col(_BAD)).select(
            F.lit("<dataframe>").alias("source"),
            F.col(_REASON).alias("reason"),
            F.to_json(F.struct(*columns), {"ignoreNullFields": "true"}).alias("input"),
        )
        dead_letter(bad)
    return good


def _builder(declaration: str, required: list[str]):
    """The local engine's typing (every declared column checked) for a worker."""
    from ceql import declare
    from ceql.compile.catalog import Catalog
    from ceql.runtime.batches import BatchBuilder, Notices

    builder = BatchBuilder(Catalog.of_schema(declare(declaration), required))
    builder.notices = Notices()  # (warnings are the driver's business, not every task's)
    return builder


def _marked(batch: pa.RecordBatch, builder) -> pa.RecordBatch:
    """The batch with whether each row is bad, and why."""
    table = pa.Table.from_batches([batch])
    columns = {name: table.column(name) for name in table.column_names if name != "event_type"}
    typed = builder.type_rows(table.column("event_type"), columns)
    bad = np.asarray(typed.bad, dtype=bool)
    reasons = [typed.reasons.get(i) for i in range(table.num_rows)] if bad.any() else [None] * table.num_rows
    arrays = [*batch.columns, pa.array(bad, pa.bool_()), pa.array(reasons, pa.string())]
    return pa.RecordBatch.from_arrays(arrays, names=[*batch.schema.names, _BAD, _REASON])


__all__ = ["POLICIES", "split_bad_rows"]

"""A streaming job run as its own process by tests/test_spark_streaming.py (which kills it and
starts it again): JSON Lines files in SOURCE, matches to OUT, late events to LATE, checkpoint in
CHECKPOINT, one file per micro-batch until the input is exhausted.

    python -m tests.support.spark_stream_job SOURCE OUT LATE CHECKPOINT QUERY
"""

from __future__ import annotations

import sys

from ceql.spark import session, write_stream
from tests.test_spark_streaming import SCHEMA, input_schema


def main(source: str, out: str, late: str, checkpoint: str, query: str) -> None:
    spark = session("local[2]", **{"spark.sql.shuffle.partitions": "2"})
    stream = spark.readStream.schema(input_schema()).option("maxFilesPerTrigger", 1).json(source)
    running = write_stream(
        stream, query, SCHEMA, tie_break="seq", id_columns=["seq"], path=out, late_path=late, checkpoint=checkpoint
    )
    running.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:6])

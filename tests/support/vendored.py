"""The conformance material of the CORE engines vendored under tests/data (see PROVENANCE.md there).

- ``core-cpp/<dataset>/``: CORE++'s declarations and benchmark queries.
- ``core-java/TestN/``: the engine tests of the Java CORE: declarations, one query, the input
  streams in the Java engine's CSV dialect, and the expected output.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import ceql

DATA = Path(__file__).resolve().parents[1] / "data"
CORE_CPP = DATA / "core-cpp"
CORE_JAVA = DATA / "core-java"


def core_cpp_datasets() -> list[Path]:
    """The CORE++ data set folders (each has declaration.core and queries/)."""
    return sorted(p for p in CORE_CPP.iterdir() if (p / "declaration.core").is_file())


def core_cpp_queries() -> list[tuple[Path, Path]]:
    """(declaration, query) for every CORE++ benchmark query."""
    return [
        (d / "declaration.core", q)
        for d in core_cpp_datasets()
        for q in sorted((d / "queries").glob("*.txt"))
    ]


@dataclass(frozen=True)
class JavaTest:
    """One engine test of the Java CORE (``src/test/.../engine/test_files/TestN``)."""

    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def declaration(self) -> str:
        return (self.path / "query" / "StreamDescription.txt").read_text()

    @property
    def query(self) -> str:
        return (self.path / "query" / "queries").read_text()

    @property
    def stream_files(self) -> list[Path]:
        """The input streams in the order stream_test.data lists them (``NAME:CSV:path``)."""
        files = []
        for line in (self.path / "stream_test.data").read_text().splitlines():
            if line.strip():
                _name, _kind, source = line.split(":", 2)
                files.append(self.path / "stream" / Path(source).name)
        return files

    @property
    def expected(self) -> tuple[int, list[str]]:
        """(number of events the engine reads, the ``value=<v>`` lines of the reported events)."""
        first, *values = (self.path / "output.txt").read_text().split()
        return int(first), values

    def events(self, schema: ceql.Schema, stream: Path) -> list[dict]:
        """Read one stream file as the Java engine does (``edu.puc.core.util.CSVParser``).

        Lines are ``;``-separated: event type, timestamp, then the attribute values by position in
        the declaration. The header line is skipped; events of undeclared types are dropped.
        """
        events = []
        lines = stream.read_text().splitlines()[1:]
        for line in lines:
            fields = line.split(";")
            declared = schema.event_types.get(fields[0])
            if declared is None:
                continue
            event: dict = {"event_type": fields[0]}
            for attribute, raw in zip(declared.attributes, fields[2:], strict=False):
                event[attribute.name] = _java_value(raw, attribute.type)
            events.append(event)
        return events


def _java_value(raw: str, kind: str):
    if kind == "int":
        return int(raw)
    if kind == "double":
        return float(raw.replace(",", "."))
    if kind == "boolean":
        return raw.lower() == "true"
    return raw


def core_java_tests() -> list[JavaTest]:
    """The Java CORE engine tests, in numeric order."""
    tests = [JavaTest(p) for p in CORE_JAVA.glob("Test*") if p.is_dir()]
    return sorted(tests, key=lambda t: int(t.name.removeprefix("Test")))

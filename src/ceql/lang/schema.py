"""Stream declarations: event types, streams and out-of-order (quarantine) policies.

Both CORE dialects are accepted, in any mix, in one text:

    CREATE STREAM S { EVENT E { a:int, b:string, ts:primary_time(ms) }, EVENT F { ... } }
    DECLARE EVENT T(id long, tmp double)
    DECLARE STREAM S2(T, E)
    CREATE QUARANTINE { FIXED_TIME 2 seconds {S} }

``primary_time`` may name the unit of integer times in the input: ``primary_time(s)``, ``(ms)``,
``(us)`` or ``(ns)`` (the default). Whatever the unit, ceql keeps times as int64 nanoseconds.

One attribute name has one kind of value across the event types of a schema: ``int`` and
``primary_time`` values are both int64; ``int`` and ``double`` together make a double column;
any other mix (say ``x:int`` in one event type and ``x:string`` in another) is a DeclarationError.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ceql.errors import DeclarationError
from ceql.lang.lexer import Token, tokenize

#: Declared type name -> canonical type.
TYPE_NAMES = {
    "int": "int",
    "long": "int",
    "integer": "int",
    "double": "double",
    "float": "double",
    "string": "string",
    "str": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "primary_time": "primary_time",
}
NUMERIC_TYPES = frozenset({"int", "double", "primary_time"})
#: Nanoseconds per unit of integer primary_time values.
TIME_UNITS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
#: Accepted spellings of the units in ``primary_time(unit)``.
UNIT_SPELLINGS = {
    "s": "s", "sec": "s", "second": "s", "seconds": "s",
    "ms": "ms", "millisecond": "ms", "milliseconds": "ms",
    "us": "us", "microsecond": "us", "microseconds": "us",
    "ns": "ns", "nanosecond": "ns", "nanoseconds": "ns",
}  # fmt: skip
#: Nanoseconds per unit of a quarantine span (singular and plural spellings).
SPAN_UNITS = {
    spelling: ns
    for unit, ns in {
        "DAY": 86_400 * 10**9,
        "HOUR": 3_600 * 10**9,
        "MINUTE": 60 * 10**9,
        "SECOND": 10**9,
        "MILLISECOND": 10**6,
        "MICROSECOND": 10**3,
        "NANOSECOND": 1,
    }.items()
    for spelling in (unit, unit + "S")
}
#: How values of each declared type are stored (primary_time values are int64 nanoseconds).
STORAGE = {"int": "int", "primary_time": "int", "double": "double", "string": "string", "boolean": "boolean"}


@dataclass(frozen=True)
class Attribute:
    """An attribute of an event type; ``type`` is int, double, string, boolean or primary_time."""

    name: str
    type: str
    unit: str | None = None  # primary_time only: the unit of integer input times (s, ms, us, ns)

    @property
    def value_type(self) -> str:
        """The type of the values (primary_time values are int64 nanoseconds)."""
        return "int" if self.type == "primary_time" else self.type

    @property
    def time_unit(self) -> str:
        """The unit of integer input values of a primary_time attribute (ns by default)."""
        return self.unit or "ns"


@dataclass(frozen=True)
class EventTypeDecl:
    """A declared event type and its attributes, in declaration order."""

    name: str
    attributes: tuple[Attribute, ...]

    def attribute(self, name: str) -> Attribute | None:
        for attribute in self.attributes:
            if attribute.name == name:
                return attribute
        return None

    @property
    def time_attribute(self) -> str | None:
        """The name of the primary_time attribute, if the type has one."""
        for attribute in self.attributes:
            if attribute.type == "primary_time":
                return attribute.name
        return None


@dataclass(frozen=True)
class QuarantinePolicy:
    """An out-of-order policy: FIXED_TIME / BOUNDED_TIME (with a span in ns) or DIRECT."""

    kind: str
    span_ns: int | None
    streams: tuple[str, ...]


@dataclass
class Schema:
    """Everything declared: event types, streams (ordered lists of type names), quarantines."""

    event_types: dict[str, EventTypeDecl] = field(default_factory=dict)
    streams: dict[str, tuple[str, ...]] = field(default_factory=dict)
    quarantines: list[QuarantinePolicy] = field(default_factory=list)

    def event_type(self, name: str) -> EventTypeDecl | None:
        return self.event_types.get(name)

    def merge(self, other: Schema) -> Schema:
        """A new schema with the declarations of both (conflicting event types are an error)."""
        merged = Schema(dict(self.event_types), dict(self.streams), list(self.quarantines))
        for decl in other.event_types.values():
            _add_event_type(merged, decl, None, None)
        for stream, types in other.streams.items():
            merged.streams[stream] = tuple(dict.fromkeys(merged.streams.get(stream, ()) + types))
        merged.quarantines.extend(other.quarantines)
        return merged

    def validate(self) -> None:
        """Check references across declarations: quarantines must name declared streams."""
        for policy in self.quarantines:
            for stream in policy.streams:
                if stream not in self.streams:
                    known = ", ".join(sorted(self.streams)) or "none"
                    raise DeclarationError(
                        f"CREATE QUARANTINE names unknown stream {stream} (declared streams: {known})"
                    )

    def text(self) -> str:
        """The schema as declaration text that parses back to an equal schema (plain data for
        shipping a schema to Spark workers or storing it; no pickle). Every event type is a
        ``DECLARE EVENT``, then each stream and each quarantine (spans in nanoseconds)."""
        from ceql.lang.printer import name

        lines = []
        for decl in self.event_types.values():
            attributes = ", ".join(
                f"{name(a.name)} {a.type}" + (f"({a.unit})" if a.unit else "") for a in decl.attributes
            )
            lines.append(f"DECLARE EVENT {name(decl.name)}({attributes})")
        for stream, types in self.streams.items():
            lines.append(f"DECLARE STREAM {name(stream)}({', '.join(name(t) for t in types)})")
        for policy in self.quarantines:
            span = f" {policy.span_ns} NANOSECONDS" if policy.span_ns is not None else ""
            streams = ", ".join(name(s) for s in policy.streams)
            lines.append(f"CREATE QUARANTINE {{ {policy.kind}{span} {{{streams}}} }}")
        return "\n".join(lines)

    def allowed_lateness_ns(self) -> int | None:
        """The FIXED_TIME quarantine span, if one is declared (the largest one)."""
        spans = [q.span_ns for q in self.quarantines if q.kind == "FIXED_TIME" and q.span_ns]
        return max(spans) if spans else None


def parse_declarations(text: str) -> Schema:
    """Parse one or more declarations into a Schema. Raises DeclarationError on bad input."""
    return _DeclarationParser(text).parse()


def _add_event_type(schema: Schema, decl: EventTypeDecl, text: str | None, offset: int | None) -> None:
    existing = schema.event_types.get(decl.name)
    if existing is not None and existing != decl:
        raise DeclarationError(
            f"event type {decl.name} is declared twice with different attributes", text, offset
        )
    for attribute in decl.attributes:
        for other in schema.event_types.values():
            theirs = other.attribute(attribute.name)
            if other.name != decl.name and theirs is not None and not compatible(theirs.type, attribute.type):
                raise DeclarationError(
                    f"attribute {attribute.name} is {attribute.type} in {decl.name} but {theirs.type} in "
                    f"{other.name}; an attribute name has one type across event types (int and "
                    "primary_time are both integers, int and double mix as double)",
                    text,
                    offset,
                )
    schema.event_types[decl.name] = decl


def compatible(first: str, second: str) -> bool:
    """Whether two declared types of one attribute name can share a column."""
    kinds = {STORAGE[first], STORAGE[second]}
    if len(kinds) == 1:
        return True
    # int with double makes a double column; a primary_time never becomes a double.
    return kinds == {"int", "double"} and "primary_time" not in (first, second)


class _DeclarationParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text, DeclarationError)
        self.i = 0
        self.schema = Schema()

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def advance(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != "EOF":
            self.i += 1
        return tok

    def error(self, expected: str) -> DeclarationError:
        return DeclarationError(
            f"expected {expected}, found {self.tok.describe()}", self.text, self.tok.offset, expected
        )

    def is_word(self, *words: str) -> bool:
        return self.tok.kind == "IDENT" and self.tok.upper in words

    def expect_word(self, word: str) -> Token:
        if not self.is_word(word):
            raise self.error(word)
        return self.advance()

    def is_op(self, op: str) -> bool:
        return self.tok.kind == "OP" and self.tok.value == op

    def expect_op(self, op: str) -> Token:
        if not self.is_op(op):
            raise self.error(f"'{op}'")
        return self.advance()

    def expect_name(self, what: str) -> Token:
        # Declarations are unambiguous, so keywords are fine as names here.
        if self.tok.kind in ("IDENT", "QIDENT"):
            return self.advance()
        raise self.error(what)

    def parse(self) -> Schema:
        if self.tok.kind == "EOF":
            raise self.error(
                "a declaration (CREATE STREAM, DECLARE EVENT, DECLARE STREAM or CREATE QUARANTINE)"
            )
        while self.tok.kind != "EOF":
            if self.is_word("CREATE"):
                self.advance()
                if self.is_word("STREAM"):
                    self.advance()
                    self.parse_create_stream()
                elif self.is_word("QUARANTINE"):
                    self.advance()
                    self.parse_quarantine()
                else:
                    raise self.error("STREAM or QUARANTINE after CREATE")
            elif self.is_word("DECLARE"):
                self.advance()
                if self.is_word("EVENT"):
                    self.advance()
                    self.parse_declare_event()
                elif self.is_word("STREAM"):
                    self.advance()
                    self.parse_declare_stream()
                else:
                    raise self.error("EVENT or STREAM after DECLARE")
            elif self.is_op(";"):
                self.advance()
            else:
                raise self.error("CREATE or DECLARE")
        return self.schema

    def parse_type(self) -> tuple[str, str | None]:
        """A type name and, for primary_time, its optional unit: ``primary_time(ms)``."""
        tok = self.expect_name("a type (int, long, double, string, boolean or primary_time)")
        canonical = TYPE_NAMES.get(str(tok.value).lower())
        if canonical is None:
            raise DeclarationError(
                f"unknown type {tok.value!s}",
                self.text,
                tok.offset,
                "int, long, double, string, boolean or primary_time",
            )
        if canonical != "primary_time" or not self.is_op("("):
            return canonical, None
        self.advance()
        unit_tok = self.expect_name("a time unit (s, ms, us or ns)")
        unit = UNIT_SPELLINGS.get(str(unit_tok.value).lower())
        if unit is None:
            raise DeclarationError(
                f"unknown time unit {unit_tok.value!s}", self.text, unit_tok.offset, "s, ms, us or ns"
            )
        self.expect_op(")")
        return canonical, None if unit == "ns" else unit  # ns is the default: one spelling of it

    def make_event_type(
        self, name_tok: Token, attributes: list[tuple[Token, tuple[str, str | None]]]
    ) -> EventTypeDecl:
        seen: set[str] = set()
        times = 0
        for tok, (type_name, _) in attributes:
            attr = str(tok.value)
            if attr in seen:
                raise DeclarationError(f"attribute {attr} is declared twice", self.text, tok.offset)
            if attr == "event_type":
                raise DeclarationError(
                    "'event_type' is reserved for the type column of the input", self.text, tok.offset
                )
            seen.add(attr)
            if type_name == "primary_time":
                times += 1
                if times > 1:
                    raise DeclarationError(
                        "an event type has at most one primary_time attribute", self.text, tok.offset
                    )
        decl = EventTypeDecl(
            str(name_tok.value), tuple(Attribute(str(t.value), ty, unit) for t, (ty, unit) in attributes)
        )
        _add_event_type(self.schema, decl, self.text, name_tok.offset)
        return decl

    def parse_create_stream(self) -> None:
        stream_tok = self.expect_name("a stream name")
        self.expect_op("{")
        names: list[str] = []
        while True:
            self.expect_word("EVENT")
            name_tok = self.expect_name("an event type name")
            self.expect_op("{")
            attributes: list[tuple[Token, tuple[str, str | None]]] = []
            if not self.is_op("}"):
                while True:
                    attr_tok = self.expect_name("an attribute name")
                    self.expect_op(":")
                    attributes.append((attr_tok, self.parse_type()))
                    if self.is_op(","):
                        self.advance()
                        continue
                    break
            self.expect_op("}")
            names.append(self.make_event_type(name_tok, attributes).name)
            if self.is_op(","):
                self.advance()
                continue
            break
        self.expect_op("}")
        self.add_stream(stream_tok, names)

    def add_stream(self, stream_tok: Token, names: list[str]) -> None:
        stream = str(stream_tok.value)
        previous = self.schema.streams.get(stream, ())
        self.schema.streams[stream] = tuple(dict.fromkeys(previous + tuple(names)))

    def parse_declare_event(self) -> None:
        name_tok = self.expect_name("an event type name")
        self.expect_op("(")
        attributes: list[tuple[Token, tuple[str, str | None]]] = []
        if not self.is_op(")"):
            while True:
                attr_tok = self.expect_name("an attribute name")
                attributes.append((attr_tok, self.parse_type()))
                if self.is_op(","):
                    self.advance()
                    continue
                break
        self.expect_op(")")
        self.make_event_type(name_tok, attributes)

    def parse_declare_stream(self) -> None:
        stream_tok = self.expect_name("a stream name")
        self.expect_op("(")
        names: list[tuple[Token, str]] = []
        while True:
            tok = self.expect_name("an event type name")
            names.append((tok, str(tok.value)))
            if self.is_op(","):
                self.advance()
                continue
            break
        self.expect_op(")")
        for tok, type_name in names:
            if type_name not in self.schema.event_types:
                raise DeclarationError(
                    f"unknown event type {type_name} (declare it with DECLARE EVENT first)",
                    self.text,
                    tok.offset,
                )
        self.add_stream(stream_tok, [n for _, n in names])

    def parse_quarantine(self) -> None:
        self.expect_op("{")
        while not self.is_op("}"):
            if not self.is_word("FIXED_TIME", "BOUNDED_TIME", "DIRECT"):
                raise self.error("FIXED_TIME, BOUNDED_TIME or DIRECT")
            kind = self.advance().upper
            span = None
            if kind != "DIRECT":
                span = self.parse_time_span()
            self.expect_op("{")
            streams = [self.stream_ref()]
            while self.is_op(","):
                self.advance()
                streams.append(self.stream_ref())
            self.expect_op("}")
            self.schema.quarantines.append(QuarantinePolicy(kind, span, tuple(streams)))
            if self.is_op(","):
                self.advance()
        self.expect_op("}")

    def stream_ref(self) -> str:
        return str(self.expect_name("a stream name").value)

    def parse_time_span(self) -> int:
        """A span such as ``2 seconds`` or ``1 minute 30 seconds``, in exact nanoseconds."""
        total = Fraction(0)
        if self.tok.kind not in ("INT", "FLOAT"):
            raise self.error("a time span such as '2 seconds'")
        while self.tok.kind in ("INT", "FLOAT"):
            number = self.advance()
            if not self.is_word(*SPAN_UNITS):
                raise self.error("DAYS, HOURS, MINUTES, SECONDS, MILLISECONDS, MICROSECONDS or NANOSECONDS")
            # The token's text, not a float, so that 0.001 seconds is exactly 1 ms.
            total += Fraction(number.text) * SPAN_UNITS[self.advance().upper]
        return int(total)

"""Turn raw values into the declared type of an attribute: exactly, and alike on every path.

Raw values come as text (CSV fields, JSON strings), as typed Arrow arrays (Parquet, Arrow,
pandas, Spark) or as Python values (dicts, JSON numbers and booleans). Each is converted to the
column's storage type (int64, float64, string, boolean) column-wise, and each row is one of:
a value, missing (null; for a non-string type also empty text) or bad (with a reason).

The rules (docs/input.md has the table):
- int: decimal integer text (``-12``, ``+7``, ``007``, surrounding spaces allowed; not ``0x10``), any Arrow integer
  within int64, or a float with no fractional part of magnitude at most 2**53 (exact); ``1.5``,
  ``1e3`` and values beyond int64 are bad. In a column that is double in another event type,
  ints are stored as doubles and must be at most 2**53 in magnitude (exact).
- double: decimal text (``1.5``, ``-2e-3``, ``.5``), ``nan``, ``inf``, ``-infinity`` (any
  case; JSON ``NaN``, ``Infinity``), any Arrow integer or float; text beyond the double range
  (``1e400``) is bad. (In a pandas DataFrame, NaN marks a missing value, pandas' convention.)
- string: text as it is (``007``, ``1e3``, ``NA`` and ``null`` stay text); other types are bad,
  and so is a Python str holding a lone surrogate (``"\ud800"``: no Unicode text) or Python
  bytes (``b"A"``: no text; an Arrow binary column is read as UTF-8 text).
- boolean: ``true``/``false`` in any case, ``1``/``0``, or an Arrow boolean.
- primary_time: integer text or an integer in the declared unit (s, ms, us, ns), an Arrow or
  pandas timestamp of any unit and time zone (naive ones are UTC), a date (midnight UTC), or an
  ISO-8601 text (``2024-01-01T00:00:00.123456789Z``, offsets ``+01:00``; naive is UTC). All
  become int64 nanoseconds with integer arithmetic only; times beyond int64 ns are bad.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ceql.compile.catalog import Target  # (what a column's values become)
from ceql.compile.isotime import parse_iso8601
from ceql.lang.schema import TIME_UNITS

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
EXACT_DOUBLE = 2**53  # every integer of at most this magnitude is exact as a double

_INT_TEXT = r"^[+-]?[0-9]+$"
_FLOAT_TEXT = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
_NON_FINITE_TEXT = r"^[+-]?(nan|inf|infinity)$"
_BOOL_TEXT = {"true": True, "false": False, "1": True, "0": False}
_DAY_NS = 86_400 * 10**9

# Why a row is bad (codes kept per row; the message is built only for rows that are reported).
OK, UNPARSABLE, OUT_OF_RANGE, NOT_INTEGRAL, INEXACT, BIG_FLOAT, WRONG_KIND, BAD_UTF8, SURROGATE = range(9)


class Converted:
    """The result of converting one column: values, and which rows are missing or bad."""

    __slots__ = ("values", "missing", "codes", "_shown", "target", "input_kind")

    def __init__(
        self,
        values: pa.Array,
        missing: np.ndarray,
        codes: np.ndarray,
        shown: Callable[[int], str],
        target: Target,
        input_kind: str,
    ) -> None:
        self.values = values  # of the storage type; null where missing or bad
        self.missing = missing  # bool per row: no value
        self.codes = codes  # int8 per row: OK or why the value is bad
        self._shown = shown  # the raw value of a row, for messages
        self.target = target
        self.input_kind = input_kind  # how the input gave the values (for time columns)

    @property
    def bad(self) -> np.ndarray:
        return self.codes != OK

    def reason(self, index: int) -> str:
        """Why row ``index`` is bad."""
        return describe(int(self.codes[index]), self._shown(index), self.target)


def describe(code: int, shown: str, target: Target) -> str:
    """The message for a bad value."""
    expected = target.expected()
    if code == OUT_OF_RANGE:
        if target.type == "primary_time":
            return f"{shown} is beyond the int64 nanosecond range of times (years 1677 to 2262)"
        if target.kind == "double":
            return f"{shown} is beyond the range of a double"
        return f"{shown} is beyond the int64 range"
    if code == NOT_INTEGRAL:
        return f"{shown} is not {expected}"
    if code == INEXACT:
        return f"{shown} cannot be stored exactly as a double (magnitude beyond 2**53)"
    if code == BIG_FLOAT:
        return f"{shown} is a floating-point number beyond 2**53, not an exact integer"
    if code == BAD_UTF8:
        return f"{shown} is not valid UTF-8"
    if code == SURROGATE:
        return f"{shown} holds a lone surrogate (U+D800 to U+DFFF), which is no character of Unicode text"
    return f"cannot read {shown} as {expected}"


# ---------------------------------------------------------------------------- entry points


def convert(values: Any, target: Target) -> Converted:
    """Convert an Arrow array (any type) or a list of Python values to ``target``."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if isinstance(values, pa.Array):
        return convert_array(values, target)
    return convert_python(list(values), target)


def convert_array(array: pa.Array, target: Target) -> Converted:
    """Convert a typed Arrow array, by the rules of its type."""
    kind = array.type
    if pa.types.is_dictionary(kind):
        return convert_array(array.dictionary_decode(), target)
    if pa.types.is_null(kind):
        n = len(array)
        return _result(
            pa.nulls(n, target.arrow_type), np.ones(n, bool), np.zeros(n, np.int8), array, target, ""
        )
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or _is_string_view(kind):
        return _from_text(array.cast(pa.string()), target)
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
        return _from_binary(array, target)
    if pa.types.is_integer(kind):
        return _from_integers(array, target)
    if pa.types.is_floating(kind):
        return _from_floats(array, target)
    if pa.types.is_boolean(kind):
        return _from_booleans(array, target)
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return _from_times(array, target)
    if pa.types.is_decimal(kind):
        # Decimals by their exact text: 1.50 is a number, and not an integer.
        return _from_text(array.cast(pa.string()), target, shown_kind="decimal")
    return _wrong_kind(array, target, _type_word(kind))


def convert_python(values: list, target: Target) -> Converted:
    """Convert Python values (dicts' values, JSON values) by the same rules as Arrow arrays:
    values are grouped by Python type, each group converted as one Arrow array."""
    kinds = set(map(type, values)) - {type(None)}
    if not kinds:
        return convert_array(pa.nulls(len(values)), target)
    if len(kinds) == 1 and next(iter(kinds)) in _PLAIN:  # the common case, at C speed
        try:
            return convert_array(pa.array(values, _PLAIN[next(iter(kinds))]), target)
        except (OverflowError, pa.ArrowInvalid, UnicodeEncodeError):
            pass  # e.g. an int beyond int64, a lone surrogate: sorted out value by value below
    groups: dict[str, list[int]] = {}
    for index, value in enumerate(values):
        groups.setdefault(_python_group(value), []).append(index)
    live = [g for g in groups if g != "none"]
    if not live or (len(live) == 1 and live[0] in _ARRAY_GROUPS):
        return convert_array(_python_array(values, live[0] if live else "none"), target)
    n = len(values)
    parts: list[tuple[list[int], Converted]] = []
    for group, indexes in groups.items():
        picked = [values[i] for i in indexes]
        if group == "nested":
            converted = _wrong_kind_values(picked, target)
        elif group == "other":
            converted = _other_values(picked, target)
        elif group == "surrogate":
            converted = _surrogate_values(picked, target)
        else:
            converted = convert_array(_python_array(picked, group), target)
        parts.append((indexes, converted))
    order = np.concatenate([np.asarray(ix, dtype=np.int64) for ix, _ in parts])
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.arange(n)
    merged = pa.concat_arrays([c.values.cast(target.arrow_type) for _, c in parts])
    missing = np.concatenate([c.missing for _, c in parts])[inverse]
    codes = np.concatenate([c.codes for _, c in parts])[inverse]
    owner: dict[int, tuple[Converted, int]] = {}
    for indexes, converted in parts:
        for local, index in enumerate(indexes):
            if converted.codes[local] != OK:
                owner[index] = (converted, local)
    # Integers among the values win: outputs then show every time as an integer.
    kinds = sorted({c.input_kind for _, c in parts if c.input_kind}, key=lambda k: not k.startswith("integer"))

    def shown(index: int) -> str:
        converted, local = owner[index]
        return converted._shown(local)

    return Converted(merged.take(pa.array(inverse)), missing, codes, shown, target, kinds[0] if kinds else "")


# ---------------------------------------------------------------------------- Python values


def _python_group(value: Any) -> str:
    if value is None:
        return "none"
    kind = type(value)
    if kind is bool:
        return "bool"
    if kind is int:
        return "int" if INT64_MIN <= value <= INT64_MAX else "bigint"
    if kind is float:
        return "float"
    if kind is str:
        return "str" if value.isascii() or is_unicode_text(value) else "surrogate"  # not Unicode text
    if kind in (dict, list, tuple):
        return "nested"
    # bytes are no text in Python values (b"A" is not the event type "A"); Arrow binary
    # columns (Parquet) are still read as UTF-8 text.
    if isinstance(value, (np.bool_,)):
        return "bool"
    if isinstance(value, np.integer):
        return "int" if INT64_MIN <= int(value) <= INT64_MAX else "bigint"
    if isinstance(value, np.floating):
        return "float"
    if isinstance(value, (_dt.datetime, _dt.date)) or _is_pandas_timestamp(value):
        return "time"
    return "other"


_ARRAY_GROUPS = frozenset({"int", "float", "bool", "str", "time"})
#: Plain Python types -> the Arrow type their values convert to exactly.
_PLAIN = {int: pa.int64(), float: pa.float64(), bool: pa.bool_(), str: pa.string()}


def is_unicode_text(text: str) -> bool:
    """Whether a str is Unicode text (no lone surrogate, as ``"\\ud800"`` in JSON gives)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _python_array(values: list, group: str) -> pa.Array:
    if group == "none":
        return pa.nulls(len(values))
    if group == "bigint":  # beyond int64: by its exact text (a number for doubles, bad for ints)
        return pa.array([None if v is None else str(v) for v in values], pa.string())
    if group == "time":
        return _python_times(values)
    if group == "int":
        return pa.array([None if v is None else int(v) for v in values], pa.int64())
    if group == "float":
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    if group == "bool":
        return pa.array([None if v is None else bool(v) for v in values], pa.bool_())
    if group == "str":
        return pa.array(values, pa.string())
    raise ValueError(group)


def _python_times(values: list) -> pa.Array:
    """datetimes, dates and pandas Timestamps as a timestamp[ns, UTC] array, exactly."""
    out: list[int | None] = []
    for value in values:
        if value is None:
            out.append(None)
        elif _is_pandas_timestamp(value):
            out.append(int(value.value))  # ns since the epoch, UTC (naive ones are taken as UTC)
        elif isinstance(value, _dt.datetime):
            if value.tzinfo is not None:
                value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
            delta = value - _dt.datetime(1970, 1, 1)
            out.append((delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000)
        else:
            out.append((value - _dt.date(1970, 1, 1)).days * _DAY_NS)
    return pa.array(out, pa.int64()).cast(pa.timestamp("ns", tz="UTC"))


def _is_pandas_timestamp(value: Any) -> bool:
    return type(value).__name__ == "Timestamp" and hasattr(value, "value") and hasattr(value, "tz_localize")


def _wrong_kind_values(values: list, target: Target) -> Converted:
    n = len(values)
    codes = np.full(n, WRONG_KIND, dtype=np.int8)

    def shown(index: int) -> str:
        value = values[index]
        return "a JSON object" if isinstance(value, dict) else "a list"

    return Converted(pa.nulls(n, target.arrow_type), np.zeros(n, bool), codes, shown, target, "")


def _surrogate_values(values: list, target: Target) -> Converted:
    """Strings holding a lone surrogate (``"\ud800"``): bad for every type, on every path."""
    n = len(values)
    codes = np.full(n, SURROGATE, dtype=np.int8)

    def shown(index: int) -> str:
        return ascii(values[index])

    return Converted(pa.nulls(n, target.arrow_type), np.zeros(n, bool), codes, shown, target, "")


def _other_values(values: list, target: Target) -> Converted:
    n = len(values)
    codes = np.full(n, WRONG_KIND, dtype=np.int8)

    def shown(index: int) -> str:
        return f"a {type(values[index]).__name__} value"

    return Converted(pa.nulls(n, target.arrow_type), np.zeros(n, bool), codes, shown, target, "")


# ---------------------------------------------------------------------------- by Arrow type


def _result(
    values: pa.Array,
    missing: np.ndarray,
    codes: np.ndarray,
    raw: pa.Array,
    target: Target,
    input_kind: str,
    shown: Callable[[int], str] | None = None,
) -> Converted:
    """Null out missing and bad rows, and wrap up."""
    bad = codes != OK
    if bad.any() or (missing.any() and values.null_count < int(missing.sum())):
        values = pc.if_else(pa.array(bad | missing), pa.nulls(len(values), values.type), values)
    return Converted(values, missing, codes, shown or _shower(raw), target, input_kind)


def _shower(raw: pa.Array) -> Callable[[int], str]:
    def shown(index: int) -> str:
        try:
            value = raw[index].as_py()
        except (OverflowError, ValueError):  # a timestamp beyond Python's datetime: its integer
            return f"{raw.cast(pa.int64())[index].as_py()} ({raw.type})"
        if isinstance(value, str):
            return repr(value if len(value) <= 60 else value[:57] + "...")
        if isinstance(value, bytes):
            return repr(value[:60])
        return repr(value)

    return shown


def _nulls(array: pa.Array) -> np.ndarray:
    if array.null_count == 0:
        return np.zeros(len(array), dtype=bool)
    return np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _mask(array: pa.Array) -> np.ndarray:
    """A boolean Arrow array as numpy, nulls as False."""
    return np.asarray(pc.fill_null(array, False).to_numpy(zero_copy_only=False), dtype=bool)


def _wrong_kind(array: pa.Array, target: Target, word: str) -> Converted:
    n = len(array)
    missing = _nulls(array)
    codes = np.where(missing, OK, WRONG_KIND).astype(np.int8)

    def shown(index: int) -> str:
        value = array[index].as_py()
        return f"{word} {value!r}" if not isinstance(value, (dict, list)) else f"a {word} value"

    return Converted(pa.nulls(n, target.arrow_type), missing, codes, shown, target, "")


def _type_word(kind: pa.DataType) -> str:
    if pa.types.is_struct(kind):
        return "struct"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return "list"
    if pa.types.is_map(kind):
        return "map"
    return str(kind)


def _is_string_view(kind: pa.DataType) -> bool:
    check = getattr(pa.types, "is_string_view", None)
    return bool(check and check(kind))


def _from_binary(array: pa.Array, target: Target) -> Converted:
    """Bytes are text if they are valid UTF-8."""
    try:
        return _from_text(array.cast(pa.string()), target)
    except pa.ArrowInvalid:
        pass
    texts, invalid = [], []
    for value in array.to_pylist():
        try:
            texts.append(None if value is None else value.decode("utf-8"))
            invalid.append(False)
        except UnicodeDecodeError:
            texts.append(None)
            invalid.append(True)
    converted = _from_text(pa.array(texts, pa.string()), target)
    bad_utf8 = np.array(invalid, dtype=bool)
    codes = np.where(bad_utf8, BAD_UTF8, converted.codes).astype(np.int8)
    missing = converted.missing & ~bad_utf8
    return _result(converted.values, missing, codes, array, target, converted.input_kind)


def _from_integers(array: pa.Array, target: Target) -> Converted:
    n = len(array)
    missing = _nulls(array)
    codes = np.zeros(n, dtype=np.int8)
    if target.type in ("string", "boolean"):
        return _wrong_kind(array, target, "integer")
    fitting = array
    if pa.types.is_uint64(array.type):
        over = _mask(pc.greater(array, pa.scalar(INT64_MAX, pa.uint64())))
        codes[over] = OUT_OF_RANGE
        fitting = pc.if_else(pa.array(over), pa.nulls(n, pa.uint64()), array)
    ints = fitting.cast(pa.int64())
    if target.type == "primary_time":
        values, over = _scale(ints, target.unit)
        codes[over & (codes == OK)] = OUT_OF_RANGE
        return _result(values, missing, codes, array, target, f"integer {target.unit}")
    if target.kind == "double":
        if target.type == "int":  # an int attribute stored in a double column: exact only
            codes[_beyond_exact(ints) & (codes == OK)] = INEXACT
        return _result(ints.cast(pa.float64(), safe=False), missing, codes, array, target, "")
    return _result(ints, missing, codes, array, target, "")


def _beyond_exact(ints: pa.Array) -> np.ndarray:
    """int64 values that a double does not hold exactly (magnitude beyond 2**53)."""
    return _mask(pc.or_(pc.greater(ints, EXACT_DOUBLE), pc.less(ints, -EXACT_DOUBLE)))


def _from_floats(array: pa.Array, target: Target) -> Converted:
    missing = _nulls(array)
    if target.type in ("string", "boolean"):
        return _wrong_kind(array, target, "number")
    floats = array.cast(pa.float64())
    codes = np.zeros(len(floats), dtype=np.int8)
    if target.type == "double":  # NaN and infinities are doubles too
        return _result(floats, missing, codes, array, target, "")
    # int or primary_time: a whole number of magnitude at most 2**53 is exact; others are not
    # (NaN and infinities are no whole numbers).
    numbers = np.asarray(pc.fill_null(floats, 0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
    with np.errstate(invalid="ignore"):
        whole = np.isfinite(numbers) & (np.floor(numbers) == numbers)
        small = np.abs(numbers) <= EXACT_DOUBLE
    codes[(codes == OK) & ~missing & ~whole] = NOT_INTEGRAL
    codes[(codes == OK) & ~missing & ~small] = BIG_FLOAT
    ints = pa.array(np.where(codes == OK, numbers, 0).astype(np.int64), pa.int64())
    if target.type == "primary_time":
        values, over = _scale(ints, target.unit)
        codes[over & (codes == OK)] = OUT_OF_RANGE
        return _result(values, missing, codes, array, target, f"integer {target.unit}")
    if target.kind == "double":
        return _result(floats, missing, codes, array, target, "")
    return _result(ints, missing, codes, array, target, "")


def _from_booleans(array: pa.Array, target: Target) -> Converted:
    if target.type != "boolean":
        return _wrong_kind(array, target, "boolean")
    n = len(array)
    return _result(array, _nulls(array), np.zeros(n, np.int8), array, target, "")


def _from_times(array: pa.Array, target: Target) -> Converted:
    """Timestamps (any unit; with a time zone they are UTC instants, naive ones are taken as UTC)
    and dates (midnight UTC) -> int64 nanoseconds, with integer arithmetic."""
    kind = array.type
    if target.type != "primary_time":
        return _wrong_kind(array, target, "timestamp" if pa.types.is_timestamp(kind) else "date")
    if pa.types.is_timestamp(kind):
        raw = array.cast(pa.int64())
        unit = kind.unit
        zone = f", tz={kind.tz}" if kind.tz else ""
        input_kind = f"timestamp[{unit}{zone}]"
    elif pa.types.is_date32(kind):
        raw, unit, input_kind = array.cast(pa.int32()).cast(pa.int64()), "day", "date"
    else:
        raw, unit, input_kind = array.cast(pa.int64()), "ms", "date"
    values, over = _scale(raw, unit)
    codes = np.where(over, OUT_OF_RANGE, OK).astype(np.int8)
    return _result(values, _nulls(array), codes, array, target, input_kind)


def _scale(ints: pa.Array, unit: str) -> tuple[pa.Array, np.ndarray]:
    """int64 values in ``unit`` -> nanoseconds, and a mask of the values beyond int64."""
    factor = _DAY_NS if unit == "day" else TIME_UNITS[unit]
    if factor == 1:
        return ints, np.zeros(len(ints), dtype=bool)
    limit = INT64_MAX // factor
    over = _mask(pc.or_(pc.greater(ints, limit), pc.less(ints, -limit)))
    safe = pc.if_else(pa.array(over), pa.nulls(len(ints), pa.int64()), ints) if over.any() else ints
    return pc.multiply(safe, factor), over


# ---------------------------------------------------------------------------- text


def _from_text(text: pa.Array, target: Target, shown_kind: str = "") -> Converted:
    """Text by the syntax of the declared type."""
    n = len(text)
    nulls = _nulls(text)
    if target.type == "string":
        return _result(text, nulls, np.zeros(n, np.int8), text, target, "")
    fast = _fast_text(text, nulls, target)
    if fast is not None:
        return fast
    trimmed = pc.utf8_trim_whitespace(text)
    missing = nulls | _mask(pc.equal(trimmed, ""))
    codes = np.zeros(n, dtype=np.int8)
    present = ~missing
    if target.type == "boolean":
        lowered = pc.utf8_lower(trimmed)
        known = _mask(pc.is_in(lowered, value_set=pa.array(list(_BOOL_TEXT))))
        codes[present & ~known] = UNPARSABLE
        values = pc.is_in(lowered, value_set=pa.array(["true", "1"]))
        return _result(values, missing, codes, text, target, "")
    if target.type == "double":
        return _float_text(text, trimmed, missing, target)
    # int and primary_time: integer text first.
    is_int = _mask(pc.match_substring_regex(trimmed, _INT_TEXT))
    ints, over = _int_text(trimmed, is_int & present)
    if target.type == "primary_time":
        scaled, scale_over = _scale(ints, target.unit)
        over |= scale_over
        values, iso_ok, iso_over = parse_iso8601(trimmed, present & ~is_int)
        codes[present & ~is_int & ~iso_ok] = UNPARSABLE
        codes[(over & is_int) | iso_over] = OUT_OF_RANGE
        merged = pc.if_else(pa.array(is_int), scaled, values)
        kind = "ISO-8601" if (present & ~is_int & iso_ok).any() else f"integer {target.unit}"
        return _result(merged, missing, codes, text, target, kind)
    codes[present & ~is_int] = UNPARSABLE
    codes[over & is_int] = OUT_OF_RANGE
    if target.kind == "double":  # an int attribute stored as double: exact only
        codes[_beyond_exact(ints) & (codes == OK)] = INEXACT
        return _result(ints.cast(pa.float64(), safe=False), missing, codes, text, target, "")
    return _result(ints, missing, codes, text, target, "")


def _fast_text(text: pa.Array, nulls: np.ndarray, target: Target) -> Converted | None:
    """The common case at Arrow's speed: every value is a plain integer (or a finite decimal
    number). Arrow's casts accept a subset of what the syntax here admits (no spaces, no '+'),
    and give the same numbers; anything else (a bad value, an empty field) takes the full path."""
    kind = pa.int64() if target.type in ("int", "primary_time") else pa.float64()
    if target.type not in ("int", "primary_time", "double"):
        return None
    try:
        values = pc.cast(text, kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if kind == pa.int64() and pc.any(pc.match_substring(text, "x", ignore_case=True)).as_py():
        return None  # Arrow's cast reads "0x10" as 16; the syntax here has no hexadecimal
    n = len(text)
    codes = np.zeros(n, dtype=np.int8)
    if target.type == "double":
        if not _mask(pc.is_finite(values))[~nulls].all():
            return None  # nan and inf are fine, 1e400 is not: the full path tells them apart
        return _result(values, nulls, codes, text, target, "")
    if target.type == "primary_time":
        scaled, over = _scale(values, target.unit)
        codes[over] = OUT_OF_RANGE
        return _result(scaled, nulls, codes, text, target, f"integer {target.unit}")
    if target.kind == "double":  # an int attribute stored as double: exact only
        codes[_beyond_exact(values)] = INEXACT
        return _result(values.cast(pa.float64(), safe=False), nulls, codes, text, target, "")
    return _result(values, nulls, codes, text, target, "")


def _int_text(trimmed: pa.Array, valid: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Integer text -> int64 (null elsewhere), and a mask of values beyond int64. Texts of at
    most 18 digits are cast column-wise; longer ones (rare) are checked one by one."""
    n = len(trimmed)
    over = np.zeros(n, dtype=bool)
    if not valid.any():
        return pa.nulls(n, pa.int64()), over
    unsigned = pc.replace_substring_regex(trimmed, r"^\+", "")
    long = valid & _mask(pc.greater(pc.utf8_length(unsigned), 18))
    short = valid & ~long
    values = pc.cast(pc.if_else(pa.array(short), unsigned, pa.nulls(n, pa.string())), pa.int64())
    if long.any():
        exact: list[int | None] = [None] * n
        texts = unsigned.to_pylist()
        for index in np.nonzero(long)[0]:
            number = int(texts[index])
            if INT64_MIN <= number <= INT64_MAX:
                exact[index] = number
            else:
                over[index] = True
        values = pc.if_else(pa.array(long), pa.array(exact, pa.int64()), values)
    return values, over


def _float_text(text: pa.Array, trimmed: pa.Array, missing: np.ndarray, target: Target) -> Converted:
    n = len(text)
    codes = np.zeros(n, dtype=np.int8)
    numeric = _mask(pc.match_substring_regex(trimmed, _FLOAT_TEXT)) & ~missing
    words = _mask(pc.match_substring_regex(trimmed, _NON_FINITE_TEXT, ignore_case=True)) & ~missing
    ok = numeric | words
    codes[~ok & ~missing] = UNPARSABLE
    cleaned = pc.utf8_lower(pc.replace_substring_regex(trimmed, r"^\+", ""))
    values = pc.cast(pc.if_else(pa.array(ok), cleaned, pa.nulls(n, pa.string())), pa.float64())
    finite = _mask(pc.is_finite(values))
    codes[numeric & ~finite] = OUT_OF_RANGE  # digits beyond the double range (1e400), not "inf"
    return _result(values, missing, codes, text, target, "")


__all__: Sequence[str] = [
    "EXACT_DOUBLE",
    "INT64_MAX",
    "INT64_MIN",
    "Converted",
    "Target",
    "convert",
    "convert_array",
    "convert_python",
    "describe",
    "is_unicode_text",
]

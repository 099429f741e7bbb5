"""Opening and re-sealing saved evaluator states in tests (to forge fields as an attacker would:
``reseal`` recomputes the envelope's size and digest, so only the validation stands between a
forged body and the evaluator)."""

from __future__ import annotations

import json
import zlib

from ceql.runtime.state import seal


def open_state(blob: bytes) -> tuple[dict, dict]:
    """(header, body) of a sealed state."""
    header_line, _, payload = zlib.decompress(blob).partition(b"\n")
    return json.loads(header_line), json.loads(payload)


def reseal(header: dict, body: dict) -> bytes:
    """A state with ``body``, sealed under ``header``'s format, version and query digest."""
    return seal(header["format"], header["version"], header["query"], body)


def forge(blob: bytes, **fields) -> bytes:
    """The state with some body fields replaced, re-sealed."""
    header, body = open_state(blob)
    body.update(fields)
    return reseal(header, body)


def array(body: dict, name: str):
    """A kernel state body's array field as numpy."""
    import base64

    import numpy as np

    return np.frombuffer(
        base64.b64decode(body[name]), dtype="<i8" if name != "node_has_empty" else "?"
    ).copy()


def with_array(body: dict, name: str, values) -> dict:
    """The body with a kernel array field replaced."""
    import base64

    import numpy as np

    dtype = "<i8" if name != "node_has_empty" else "?"
    return dict(body, **{name: base64.b64encode(np.asarray(values, dtype=dtype).tobytes()).decode()})

"""Every code block of README.md, CONTRIBUTING.md and docs/*.md runs, and shows what it prints.

How a fenced block is checked depends on its language (CONTRIBUTING.md, "Examples in the docs"):

- ``python``: run. Blocks of one document share one namespace, in order, from the repository
  root. A block written as a ``>>>`` session is a doctest (output compared, ``...`` matches
  anything); a plain block is executed, and an ``output`` block right after it is compared with
  what it printed.
- ``console``: each ``$ command`` runs in bash (``\\`` continues a line) in a scratch folder that
  has the repository's ``examples/``, with this interpreter's ``ceql`` and ``python`` first on
  the PATH; the lines after it, up to the next ``$``, are compared with its output (stdout and
  stderr; ``...`` matches anything). A command with no output shown must exit 0. Only ``ceql``
  and ``python`` commands run.
- ``bash``/``sh``/``shell``: commands without prompts, one a line (``#`` comments ignored):
  each must exit 0; nothing is compared.
- ``ceql`` (or ``sql``): a query (or, starting with CREATE/DECLARE, declarations; or a SQL query with
  MATCH_RECOGNIZE), which must parse.
- ``json``/``jsonl``: must parse. ``text``, ``output``, ``csv``, ``dot``: shown, not run.
- ``<!-- docs-test: skip REASON -->`` on the line before a block: not run, and the reason is
  required. Any other block (no language, another language) fails the test.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import ceql

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
DATA_LANGUAGES = {"text", "output", "csv", "dot"}
SHELLS = {"console", "bash", "sh", "shell"}
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\b\s*(.*?)\s*-->")
FENCE = re.compile(r"^(`{3,})(.*)$")
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@dataclass
class Block:
    """One fenced code block: its language, text, first line (1-based) and skip reason."""

    language: str
    text: str
    line: int
    skip: str | None


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, info = opening.groups()
        start = i + 1
        i += 1
        while i < len(lines) and not lines[i].startswith(fence):
            i += 1
        if i == len(lines):
            raise AssertionError(f"{path.name}:{start}: code block never closed")
        before = lines[start - 2] if start >= 2 else ""
        marker = SKIP.search(before)
        found.append(
            Block(
                language=info.strip().split()[0].lower() if info.strip() else "",
                text="\n".join(lines[start:i]) + "\n",
                line=start + 1,
                skip=marker.group(1) if marker else None,
            )
        )
        i += 1
    return found


def _matches(expected: str, got: str) -> bool:
    return doctest.OutputChecker().check_output(expected, got, OPTIONS)


def _run_python(block: Block, where: str, namespace: dict) -> str:
    """Run a python block in ``namespace``; return what it printed (doctests check themselves)."""
    if ">>>" in block.text:
        test = doctest.DocTestParser().get_doctest(block.text, namespace, where, where, block.line - 1)
        out = io.StringIO()
        runner = doctest.DocTestRunner(optionflags=OPTIONS)
        runner.run(test, out=out.write, clear_globs=False)
        namespace.update(test.globs)  # DocTest works on a copy: later blocks see its names
        assert runner.failures == 0, f"{where}: doctest failed\n{out.getvalue()}"
        return ""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block.text, where, "exec"), namespace)
    return printed.getvalue()


def _commands(block: Block) -> list[tuple[str, str]]:
    """(command, expected output) pairs of a console block, or of a shell block (no output)."""
    pairs: list[tuple[str, list[str]]] = []
    lines = block.text.splitlines()
    prompts = block.language == "console"
    i = 0
    while i < len(lines):
        line = lines[i]
        if not prompts:
            if not line.strip() or line.lstrip().startswith("#"):
                i += 1
                continue
            line = "$ " + line.strip()
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1] + " " + lines[i].strip()
            pairs.append((command, []))
        elif pairs:
            pairs[-1][1].append(line)
        elif line.strip():
            raise AssertionError(f"line {block.line + i}: console blocks start each command with '$ '")
        i += 1
    return [(command, "\n".join(out).strip("\n")) for command, out in pairs]


def _run_console(block: Block, where: str, scratch: Path) -> None:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "100"  # argparse help wraps at the terminal width
    commands = _commands(block)
    assert commands, f"{where}: a {block.language} block without a command"
    for command, expected in commands:
        program = command.split()[0]
        assert program in {"ceql", "python"}, (
            f"{where}: only ceql and python commands run; mark the block "
            "<!-- docs-test: skip REASON --> if it must show another"
        )
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        got = (result.stdout + result.stderr).strip("\n")
        if expected:
            assert _matches(expected + "\n", got + "\n"), (
                f"{where}: `{command}` printed\n{got}\n--- but the document shows\n{expected}"
            )
        else:
            assert result.returncode == 0, f"{where}: `{command}` exited {result.returncode}\n{got}"


def _check_data(block: Block, where: str) -> None:
    if block.language == "json":
        json.loads(block.text)
    elif block.language == "jsonl":
        for line in block.text.splitlines():
            if line.strip():
                json.loads(line)
    elif block.language in {"ceql", "sql"}:
        if "MATCH_RECOGNIZE" in block.text.upper():  # SQL row pattern recognition (docs/sql.md)
            ceql.sql.parse_sql(block.text)
        elif block.text.lstrip().upper().startswith(("CREATE", "DECLARE")):
            ceql.declare(block.text)
        else:
            ceql.parse(block.text)
    else:
        assert block.language in DATA_LANGUAGES, (
            f"{where}: a ```{block.language or '(no language)'} block is neither run nor data; give it a "
            "language (python, console, ceql, text, ...) or mark it <!-- docs-test: skip REASON -->"
        )


def _params():
    for path in DOCUMENTS:
        if not path.is_file():
            continue
        spark = any(b.language == "python" and "ceql.spark" in b.text and not b.skip for b in blocks(path))
        yield pytest.param(path, id=path.name, marks=[pytest.mark.spark] if spark else [])


@pytest.mark.parametrize("path", list(_params()))
def test_document_examples(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request) -> None:
    found = blocks(path)
    assert found, f"{path.name} has no code block"
    if any(b.language == "python" and "ceql.spark" in b.text and not b.skip for b in found):
        request.getfixturevalue("spark")  # the document's session() then reuses the test session
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": "__main__"}
    previous_output: str | None = None
    for block in found:
        where = f"{path.relative_to(ROOT)}:{block.line}"
        if block.skip is not None:
            assert block.skip, f"{where}: a skipped block needs a reason"
            previous_output = None
            continue
        if block.language == "python":
            previous_output = _run_python(block, where, namespace)
            continue
        if block.language == "output":
            assert previous_output is not None, f"{where}: an output block must follow a python block"
            assert _matches(block.text, previous_output), (
                f"{where}: the block above printed\n{previous_output}--- but the document shows\n{block.text}"
            )
        elif block.language in SHELLS:
            _run_console(block, where, tmp_path)
        else:
            _check_data(block, where)
        previous_output = None


def test_every_document_is_checked() -> None:
    """README.md and every docs/*.md are in the list above, and each has at least one block."""
    assert ROOT / "README.md" in DOCUMENTS
    assert (ROOT / "docs" / "guide.md") in DOCUMENTS
    for path in DOCUMENTS:
        if path.is_file():
            assert blocks(path), path.name


def test_the_checker_catches_drift(tmp_path: Path) -> None:
    """The checks above can fail: a wrong output, an unlabeled block, a skip without a reason."""
    doc = tmp_path / "doc.md"
    doc.write_text("```python\nprint(1 + 1)\n```\n\n```output\n3\n```\n")
    (first, second) = blocks(doc)
    assert not _matches(second.text, _run_python(first, "doc.md", {}))
    doc.write_text("<!-- docs-test: skip because -->\n```\nrm -rf /\n```\n```\nplain\n```\n")
    skipped, plain = blocks(doc)
    assert skipped.skip == "because" and plain.skip is None
    with pytest.raises(AssertionError, match="neither run nor data"):
        _check_data(plain, "doc.md")
    console = Block("console", "$ ceql --version\nceql 0.0.0\n", 1, None)
    with pytest.raises(AssertionError, match="but the document shows"):
        _run_console(console, "doc.md", tmp_path)
    with pytest.raises(AssertionError, match="only ceql and python"):
        _run_console(Block("console", "$ ls\n", 1, None), "doc.md", tmp_path)
    shell = Block("bash", "# a comment\nceql check \\\n  --nonsense\n", 1, None)
    assert _commands(shell) == [("ceql check  --nonsense", "")]
    with pytest.raises(AssertionError, match="exited 2"):
        _run_console(shell, "doc.md", tmp_path)

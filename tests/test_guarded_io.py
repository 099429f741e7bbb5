"""Every command that reads event files and writes results follows the same rules (issue 38):
``ceql run`` and ``ceql sql`` are put through one set of checks, parametrized by command.

Outputs: never over an input (also through a link), the query file, a special file (FIFO,
device, socket) or an existing file without ``--overwrite``; results appear only when the
command succeeds, so a full disk is one message that keeps the old file. Inputs: a query file
that is not UTF-8 is one message; a long line is read up to ``--max-line-bytes`` and refused
beyond it; a FIFO is read; a folder or a missing file is named as such."""

from __future__ import annotations

import errno
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from ceql.cli import main

DECLARATION = "CREATE STREAM S { EVENT A { x:int, s:string }, EVENT B { x:int, s:string } }"
CEQL_QUERY = "SELECT * FROM S WHERE A ; B"
SQL_QUERY = (
    "SELECT * FROM t MATCH_RECOGNIZE (ORDER BY x MEASURES A.x AS ax, B.x AS bx PATTERN (A B) "
    "DEFINE A AS A.event_type = 'A', B AS B.event_type = 'B')"
)
EVENTS = "event_type,x,s\nA,1,a\nB,2,b\n"


@dataclass(frozen=True)
class Command:
    """How one command is called: its query (text, or a file of the given name), inputs, options."""

    name: str
    query_file: str

    def argv(self, inputs: list[str], *options: str, query: str | None = None) -> list[str]:
        if self.name == "run":
            spec = [a for path in inputs for a in ("-i", path)]
            return ["run", "-d", "decl.core", "-q", query or CEQL_QUERY, *spec, *options]
        spec = [a for path in inputs for a in ("-i", f"t={path}")]
        return ["sql", query or SQL_QUERY, *spec, *options]

    @property
    def query_text(self) -> str:
        return CEQL_QUERY if self.name == "run" else SQL_QUERY


COMMANDS = [Command("run", "query.ceql"), Command("sql", "query.sql")]


@pytest.fixture(params=COMMANDS, ids=lambda c: c.name)
def command(request, tmp_path, monkeypatch) -> Command:
    """Each command, run inside a folder with a declaration, the query as a file, and an input."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "decl.core").write_text(DECLARATION)
    (tmp_path / request.param.query_file).write_text(request.param.query_text)
    (tmp_path / "in.csv").write_text(EVENTS)
    return request.param


def call(capsys, argv: list[str]) -> tuple[int, str, str]:
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every regular file under ``folder`` by name, and links as their targets."""
    out = {}
    for path in sorted(folder.iterdir()):
        if path.is_symlink():
            out[path.name] = b"-> " + os.readlink(path).encode()
        elif path.is_file():
            out[path.name] = path.read_bytes()
    return out


def refused(capsys, folder: Path, argv: list[str], cause: str) -> str:
    """The command exits 2 naming ``cause``, and no file changed or appeared."""
    before = snapshot(folder)
    status, out, err = call(capsys, argv)
    assert status == 2, err
    assert cause in err, err
    assert "Traceback" not in err
    assert snapshot(folder) == before
    return err


# --------------------------------------------------------------------------- outputs


def test_output_on_the_input_is_refused(command, tmp_path, capsys) -> None:
    for extra in ([], ["--overwrite"]):
        refused(capsys, tmp_path, command.argv(["in.csv"], "-o", "in.csv", *extra), cause="is the input")


def test_output_on_a_link_to_the_input_is_refused(command, tmp_path, capsys) -> None:
    (tmp_path / "link.csv").symlink_to("in.csv")
    (tmp_path / "hard.csv").hardlink_to(tmp_path / "in.csv")
    for name in ("link.csv", "hard.csv", "./sub/../in.csv"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        refused(capsys, tmp_path, command.argv(["in.csv"], "-o", name, "--overwrite"), cause="is the input")


def test_output_on_the_query_file_is_refused(command, tmp_path, capsys) -> None:
    argv = command.argv(["in.csv"], "-o", command.query_file, "--overwrite", query=command.query_file)
    refused(capsys, tmp_path, argv, cause="is the query file")


def test_an_existing_output_needs_overwrite(command, tmp_path, capsys) -> None:
    (tmp_path / "out.jsonl").write_text("previous result\n")
    refused(capsys, tmp_path, command.argv(["in.csv"], "-o", "out.jsonl"), cause="use --overwrite")
    status, _, err = call(capsys, command.argv(["in.csv"], "-o", "out.jsonl", "--overwrite"))
    assert status == 0, err
    assert (tmp_path / "out.jsonl").read_text() != "previous result\n"
    assert not list(tmp_path.glob("*.ceql-tmp"))


def _special_files(folder: Path) -> dict[str, Path]:
    os.mkfifo(folder / "fifo")
    (folder / "null-link").symlink_to("/dev/null")
    (folder / "fifo-link").symlink_to(folder / "fifo")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "sock"))
    server.close()
    return {
        "a FIFO": folder / "fifo",
        "a character device": folder / "null-link",
        "a FIFO ": folder / "fifo-link",
        "a socket": folder / "sock",
    }


@pytest.mark.parametrize("overwrite", [False, True])
def test_special_files_are_never_written(command, tmp_path, capsys, overwrite) -> None:
    for what, path in _special_files(tmp_path).items():
        argv = command.argv(["in.csv"], "-o", path.name, *(["--overwrite"] if overwrite else []))
        err = refused(capsys, tmp_path, argv, cause=f"is {what.strip()}")
        assert "--overwrite" not in err
    err = refused(capsys, tmp_path, command.argv(["in.csv"], "-o", "/dev/null"), cause="is a character device")


def test_an_input_read_from_standard_input_is_not_replaced(command, tmp_path) -> None:
    import subprocess
    import sys

    argv = command.argv(["-"], "--input-format", "csv", "-o", "in.csv", "--overwrite")
    with open(tmp_path / "in.csv") as stdin:
        result = subprocess.run(
            [sys.executable, "-m", "ceql", *argv], cwd=tmp_path, stdin=stdin, capture_output=True, text=True, timeout=300
        )
    assert result.returncode == 2 and "standard input" in result.stderr, result.stderr
    assert (tmp_path / "in.csv").read_text() == EVENTS


@pytest.mark.parametrize("output", ["out.jsonl", "out.parquet", "out.csv"])
def test_a_full_disk_is_one_message_and_keeps_the_old_file(command, tmp_path, capsys, monkeypatch, output) -> None:
    """ENOSPC while writing: exit 2, the cause, the previous output untouched, no temporary file."""
    import pyarrow.parquet as pq

    from ceql.io import writers

    if output.endswith(".csv") and command.name == "run":
        pytest.skip("ceql run writes no CSV (its rows hold lists)")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    (tmp_path / output).write_bytes(b"the previous result\n")
    monkeypatch.setattr(writers.JsonLinesWriter, "write", full)
    monkeypatch.setattr(writers.CsvWriter, "write", full)
    monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
    status, _, err = call(capsys, command.argv(["in.csv"], "-o", output, "--overwrite"))
    assert status == 2 and "No space left on device" in err and "full" in err, err
    assert (tmp_path / output).read_bytes() == b"the previous result\n"
    assert not list(tmp_path.glob("*.ceql-tmp"))


def test_parquet_needs_a_file(command, tmp_path, capsys) -> None:
    refused(capsys, tmp_path, command.argv(["in.csv"], "-f", "parquet"), cause="--format parquet needs --output FILE")


# --------------------------------------------------------------------------- inputs


def test_a_query_file_that_is_not_utf8_is_one_message(command, tmp_path, capsys) -> None:
    (tmp_path / command.query_file).write_bytes(command.query_text.encode() + b" \xff\xfe")
    refused(capsys, tmp_path, command.argv(["in.csv"], query=command.query_file), cause="is not UTF-8 text")


def test_a_query_file_that_is_a_folder_is_named(command, tmp_path, capsys) -> None:
    (tmp_path / "queries.sql").mkdir()
    (tmp_path / "queries.ceql").mkdir()
    name = "queries.sql" if command.name == "sql" else "queries.ceql"
    refused(capsys, tmp_path, command.argv(["in.csv"], query=name), cause="is a folder")


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_a_long_line_is_read_up_to_the_limit_and_refused_beyond(command, tmp_path, capsys, suffix) -> None:
    long = "y" * (3 << 20)  # longer than pyarrow's default block of 1 MiB
    if suffix == "csv":
        (tmp_path / "long.csv").write_text(f"event_type,x,s\nA,1,{long}\nB,2,b\n")
    else:
        (tmp_path / "long.jsonl").write_text(
            f'{{"event_type": "A", "x": 1, "s": "{long}"}}\n{{"event_type": "B", "x": 2, "s": "b"}}\n'
        )
    status, out, err = call(capsys, command.argv([f"long.{suffix}"]))
    assert status == 0, err
    assert len(out.splitlines()) == 1 and "block size" not in err
    status, out, err = call(capsys, command.argv([f"long.{suffix}"], "--max-line-bytes", "1000"))
    line = 2 if suffix == "csv" else 1
    assert status == 2 and f"line {line}: line is longer than the limit of 1000 bytes" in err, err
    assert "Traceback" not in err


def test_a_fifo_is_read(command, tmp_path, capsys) -> None:
    os.mkfifo(tmp_path / "events")

    def feed() -> None:
        with open(tmp_path / "events", "w") as fifo:
            fifo.write(EVENTS)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    status, out, err = call(capsys, command.argv(["events"], "--input-format", "csv"))
    writer.join(10)
    assert status == 0, err
    assert len(out.splitlines()) == 1


def test_a_folder_or_a_missing_input_is_named(command, tmp_path, capsys) -> None:
    (tmp_path / "folder").mkdir()
    refused(capsys, tmp_path, command.argv(["folder"]), cause="input is a directory: folder")
    refused(capsys, tmp_path, command.argv(["missing.csv"]), cause="input not found: missing.csv")


# --------------------------------------------------------------------------- one run module


def _imports(path: Path) -> set[str]:
    import ast

    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_commands_share_the_run_module_and_import_no_other_command() -> None:
    """No circle among the command modules: each imports io/run.py; ``cli.py`` dispatches to
    the others (``ceql sql``, ``--engine spark``), and they never import it back."""
    src = Path(__file__).resolve().parents[1] / "src" / "ceql"
    commands = {"cli": src / "cli.py", "spark.cli": src / "spark" / "cli.py", "sql.cli": src / "sql" / "cli.py"}
    for name, path in commands.items():
        imported = _imports(path)
        assert "ceql.io.run" in imported, name
        if name != "cli":
            assert not any(m == "ceql.cli" or m.startswith("ceql.cli.") for m in imported), name
    assert not any(m.startswith("ceql.spark.cli") for m in _imports(src / "spark" / "files.py"))
    assert not any(m.startswith("ceql.sql.cli") for m in _imports(src / "spark" / "cli.py"))
    for module in (src / "compile").glob("*.py"):  # layers point one way
        assert not any(m.startswith(("ceql.runtime", "ceql.io", "ceql.spark", "ceql.cli")) for m in _imports(module)), module

"""Where results go, and the rules that keep an output from destroying anything.

Both engines of ``ceql run`` (and ``ceql explain --svg``) follow the same rules:

* an output may not be, contain or lie inside an input, the declaration, the query file or the
  other output (paths are compared after resolving symbolic links and ``..``, and by inode for
  files that exist, so a hard link or a differently spelled path is caught too);
* an existing file or non-empty folder is replaced only with ``--overwrite``, and only a regular
  file (or, for Spark, a folder): a FIFO, a device, a socket, or a link to one is never replaced;
* nor is this process's standard input, output or error (``-i - < events.csv``, a link to
  ``/proc/self/fd/1``), even when it is a regular file;
* a file output must name a file in an existing folder, a folder output (Spark) must not be a file;
* results are written under a temporary name in the target's own folder and renamed into place
  only when the run succeeds, so a failed or interrupted run leaves no half-written output
  (and an existing output untouched).

Every refusal is a CeqlError that names the option, the path and the reason, raised before
anything is read or written.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ceql.errors import CeqlError

STDOUT = "-"
_TEMP_TAG = ".ceql-tmp"


@dataclass(frozen=True)
class Protected:
    """A path an output must leave alone: ``what`` says what it is (for the error message)."""

    what: str
    path: str


@dataclass(frozen=True)
class Target:
    """An output the user asked for: the option that names it, the path, and its kind."""

    option: str
    path: str
    folder: bool = False  # the Spark engine writes folders; the local engine writes files


def check_outputs(targets: Iterable[Target], protected: Iterable[Protected], overwrite: bool = False) -> None:
    """Refuse (CeqlError) any target that would destroy or replace something it must not.

    ``protected`` lists the inputs (files or folders), the declaration and query files. Targets
    are also checked against each other. Standard output (``-``) is never checked.
    """
    targets = [t for t in targets if t.path and t.path != STDOUT]
    guarded = [p for p in protected if p.path and p.path != STDOUT]
    # What the target would destroy comes first: --overwrite does not lift those refusals.
    for target in targets:
        for item in guarded:
            _check_apart(target, item.what, item.path)
        _check_kind(target)
    for i, first in enumerate(targets):
        for second in targets[i + 1 :]:
            _check_apart(second, f"the {first.option} {'folder' if first.folder else 'file'}", first.path)
    for target in targets:
        _check_shape(target, overwrite)


_SPECIAL = [
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
]


def _check_kind(target: Target) -> None:
    """Only a regular file (or a folder, for Spark) is ever replaced: a FIFO, a device or a
    socket, or a symbolic link to one, is refused with or without --overwrite (replacing it
    would not write to it, and its reader would get nothing); so is this process's standard
    input, output or error, even as a regular file (``-i - -o in.csv < in.csv``)."""
    try:
        found = os.stat(target.path)  # follows links: a link to /dev/null is the device
    except OSError:
        return  # nothing there (or a dangling link): the other checks decide
    mode = found.st_mode
    for test, what in _SPECIAL:
        if test(mode):
            raise CeqlError(
                f"{target.option} {target.path}: is {what}, not a regular file; ceql writes its results "
                "to a new regular file and never replaces anything else (choose a file name"
                + ("" if target.option != "--output" else ", or leave out --output for standard output")
                + ")"
            )
    for fd, name in ((0, "input"), (1, "output"), (2, "error")):
        try:
            own = os.fstat(fd)
        except OSError:
            continue
        if (own.st_dev, own.st_ino) == (found.st_dev, found.st_ino):  # e.g. /dev/stdout
            raise CeqlError(
                f"{target.option} {target.path}: is this process's standard {name}; refusing to replace it "
                "(choose a file name" + (", or leave out --output for standard output" if fd == 1 else "") + ")"
            )


def _check_shape(target: Target, overwrite: bool) -> None:
    """The target's kind (file or folder), its parent folder, and what already exists there."""
    path = target.path
    name = f"{target.option} {path}"
    if path.endswith(("/", os.sep)) and not target.folder:
        raise CeqlError(f"{name}: is a folder name; {target.option} needs a file name")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.exists(parent):
        raise CeqlError(f"{name}: the folder {parent} does not exist (create it first)")
    if not os.path.isdir(parent):
        raise CeqlError(f"{name}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CeqlError(f"{name}: cannot write in the folder {parent} (permission denied)")
    if not os.path.lexists(path):
        return
    if target.folder:
        if not os.path.isdir(path):
            raise CeqlError(f"{name}: is a file; this engine writes a folder there (give a folder name)")
        if os.listdir(path) and not overwrite:
            raise CeqlError(
                f"{name}: the folder exists and is not empty; use --overwrite to replace it "
                "(everything in it is deleted)"
            )
    else:
        if os.path.isdir(path):
            raise CeqlError(f"{name}: is a folder; {target.option} needs a file name")
        if not overwrite:
            raise CeqlError(f"{name}: the file exists; use --overwrite to replace it")


def _check_apart(target: Target, what: str, other: str) -> None:
    """The target must not be ``other``, contain it, or (for folders) lie inside it."""
    name = f"{target.option} {target.path}"
    if _same(target.path, other):
        raise CeqlError(f"{name}: is {what} {other}; refusing to overwrite it (choose another path)")
    mine, theirs = _resolved(target.path), _resolved(other)
    if target.folder and _inside(theirs, mine):
        raise CeqlError(
            f"{name}: contains {what} {other}; writing the folder would delete it (choose another path)"
        )
    if _inside(mine, theirs) and not os.path.isfile(other):  # e.g. results inside an input folder
        raise CeqlError(
            f"{name}: lies inside {what} {other}; the output would mix with it (choose another path)"
        )


def _resolved(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def _inside(path: str, folder: str) -> bool:
    return path != folder and path.startswith(folder.rstrip(os.sep) + os.sep)


def _same(first: str, second: str) -> bool:
    if os.path.exists(first) and os.path.exists(second):
        try:
            return os.path.samefile(first, second)
        except OSError:
            pass
    return _resolved(first) == _resolved(second)


# --------------------------------------------------------------------------- atomic writes


@dataclass
class Pending:
    """An output being written under ``temp``; ``commit`` renames it to ``path``."""

    path: str
    temp: str
    folder: bool
    overwrite: bool
    committed: bool = False

    def commit(self) -> None:
        """Move the finished output into place (replacing what is there only with overwrite)."""
        if self.folder:
            _commit_folder(self)
        else:
            _commit_file(self)
        self.committed = True

    def discard(self) -> None:
        """Remove the temporary output (after a failure)."""
        if self.committed:
            return
        if os.path.isdir(self.temp) and not os.path.islink(self.temp):
            shutil.rmtree(self.temp, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.temp)


def _temp_name(path: str, kind: str) -> str:
    folder, base = os.path.split(os.path.abspath(path))
    return os.path.join(folder, f".{base}.{kind}-{secrets.token_hex(4)}{_TEMP_TAG}")


def _commit_file(pending: Pending) -> None:
    path, temp = pending.path, pending.temp
    if pending.overwrite:
        # Checked again at the last moment: a FIFO or device that appeared during the run is
        # not replaced either.
        _check_kind(Target("output", path))
        os.replace(temp, path)
        return
    # Without --overwrite, never replace a file that appeared while we were running: a hard link
    # fails if the name exists (atomic test-and-set); fall back to a rename on file systems
    # without hard links.
    try:
        os.link(temp, path)
    except FileExistsError:
        raise CeqlError(
            f"{path}: a file of that name appeared during the run; the result was not written "
            "(use --overwrite to replace it)"
        ) from None
    except OSError:
        if os.path.lexists(path):
            raise CeqlError(f"{path}: exists; use --overwrite to replace it") from None
        os.replace(temp, path)
        return
    os.remove(temp)


def _commit_folder(pending: Pending) -> None:
    path, temp = pending.path, pending.temp
    if not os.path.lexists(path):
        os.rename(temp, path)
        return
    if not os.path.isdir(path):
        raise CeqlError(f"{path}: is a file; the result folder was not moved there")
    if os.listdir(path) and not pending.overwrite:
        raise CeqlError(f"{path}: the folder is not empty; use --overwrite to replace it")
    # Move the old folder aside first, so a failed rename can put it back.
    aside = _temp_name(path, "old")
    os.rename(path, aside)
    try:
        os.rename(temp, path)
    except OSError:
        os.rename(aside, path)
        raise
    shutil.rmtree(aside, ignore_errors=True)


@dataclass
class Outputs:
    """The outputs of one run. Use as a context manager: outputs not committed when the block
    ends (an error, an interrupt) are removed; ``commit()`` moves them all into place."""

    overwrite: bool = False
    pending: list[Pending] = field(default_factory=list)

    def file(self, path: str) -> str:
        """Reserve a temporary file next to ``path``; returns the name to write to."""
        temp = _temp_name(path, "part")
        # O_EXCL: never clobber anything; mode 0o666 lets the umask decide, as open() would.
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as exc:
            raise CeqlError(f"{path}: cannot create the output ({exc.strerror})") from None
        os.close(fd)
        self.pending.append(Pending(path, temp, folder=False, overwrite=self.overwrite))
        return temp

    def folder(self, path: str) -> str:
        """A temporary folder name next to ``path`` (not created: Spark creates it)."""
        temp = _temp_name(path, "part")
        self.pending.append(Pending(path, temp, folder=True, overwrite=self.overwrite))
        return temp

    def commit(self) -> None:
        """Move every output into place."""
        for item in self.pending:
            item.commit()

    def discard(self) -> None:
        """Remove every temporary output that was not committed."""
        for item in self.pending:
            item.discard()

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, *exc_info) -> None:
        self.discard()


def protected_paths(
    inputs: Iterable[str], declarations: Iterable[str], queries: Iterable[str]
) -> Iterator[Protected]:
    """What an output must not touch: the inputs, the declaration files and the query files
    (query specs that are not existing files are query texts, not paths)."""
    for path in inputs:
        yield Protected("the input", path)
    for path in declarations:
        yield Protected("the declaration", path)
    for spec in queries:
        if spec != STDOUT and os.path.isfile(spec):
            yield Protected("the query file", spec)

"""Writing files and directories so that a reader finds the old complete version or the new one, never a half.

A file is written to `<path>.tmp-<pid>`, flushed to disk and renamed over `path`; a directory is built in a
hidden directory beside its final place and renamed into place. Leftovers of writers that crashed are
recognised by the owner embedded in their names, `<host>-<pid>` (or `<pid>-<suffix>` for directories made
one per call), and removed once that process no longer runs.

    write_json(path, {"step": 10})
    with replacing(path) as temporary:
        figure.savefig(temporary)
    work = temporary_directory_beside(final)
    ...fill work...
    publish_directory(work, final)
"""

import contextlib
import json
import os
import shutil
import socket
import tempfile

from t2t_repro.errors import UserError


def process_alive(pid):
    """True while a process with this id runs on this host (the owner of a temporary file or directory)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: beyond any pid
        return False
    except PermissionError:
        return True
    return True


def remove(path):
    """Removes a file, link or directory tree at `path` if there is one."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


@contextlib.contextmanager
def replacing(path):
    """Yields a temporary path beside `path` to write; when the block succeeds the file is synced to disk and
    renamed to `path`, when it fails it is removed and `path` is left as it was."""
    temporary = f"{os.fspath(path)}.tmp-{os.getpid()}"
    try:
        yield temporary
        descriptor = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(descriptor)  # the data is on disk before the name points at it
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    finally:
        remove(temporary)


def write_file(path, data):
    """Writes `data` (str: as UTF-8 text, bytes: as is) to `path` atomically."""
    with replacing(path) as temporary, open(temporary, "wb") as out:
        out.write(data.encode("utf-8") if isinstance(data, str) else data)


def write_lines(path, lines):
    """Writes the strings `lines`, each followed by a newline, to `path` atomically (UTF-8)."""
    write_file(path, "".join(line + "\n" for line in lines))


def write_json(path, value):
    """Writes `value` as indented, key-sorted UTF-8 JSON to `path` atomically."""
    write_file(path, json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def removed_if_left_empty(directory):
    """On a failure inside the block, removes the directories of `directory`'s path that the block created, when
    it left nothing in them but empty directories: a failed command leaves no empty directory behind (and
    removes nothing it did not make)."""
    new = None  # the outermost directory of `directory`'s path that does not exist yet
    path = os.path.abspath(directory)
    while not os.path.lexists(path):
        new, path = path, os.path.dirname(path)
    try:
        yield
    except BaseException:
        if new is not None and os.path.isdir(new):
            for parent, _, _ in sorted(os.walk(new), key=lambda entry: -len(entry[0])):
                with contextlib.suppress(OSError):  # not empty: kept
                    os.rmdir(parent)
        raise


def same_file(path, other):
    """True when the two paths name one file (the same path, or links to one file)."""
    if os.path.exists(path) and os.path.exists(other):
        return os.path.samefile(path, other)
    return os.path.realpath(path) == os.path.realpath(other)


def check_not_overwriting(output, inputs):
    """The one rule of every tool that writes a file the user names: it never writes over a file it reads.
    UserError when `output` is one of `inputs` (a dict {flag or role: path}, None paths skipped), checked
    before anything is read or written."""
    for role, path in inputs.items():
        if path is not None and same_file(output, path):
            raise UserError(f"{output} is also {role}: writing it would replace what is read; name another file "
                            "to write")


def _owner_tag():
    return f"{socket.gethostname()}-{os.getpid()}"


def _owned_by_dead_process(tag, host):
    # `<host>-<pid>` (the host may hold dashes, the pid is last) or `<pid>-<suffix>` (no host recorded; the
    # suffix holds no dash and is not all digits, as tempfile's random names).
    head, _, tail = tag.rpartition("-")
    owner, pid = (head, tail) if tail.isdigit() else (host, head)
    return owner == host and pid.isdigit() and not process_alive(int(pid))


def remove_stale_leftovers(parent, prefix):
    """Removes the entries of `parent` named `prefix<host>-<pid>` or `prefix<pid>-<suffix>` whose process is dead.

    Leftovers of live processes (another writer at work) and of other hosts (whose pids mean nothing here, on a
    shared filesystem) are kept."""
    try:
        names = os.listdir(parent)
    except FileNotFoundError:
        return
    host = socket.gethostname()
    for name in names:
        if name.startswith(prefix) and _owned_by_dead_process(name[len(prefix):], host):
            remove(os.path.join(parent, name))


def temporary_directory_beside(final, prefix=None):
    """A fresh, empty directory `prefix<host>-<pid>` beside `final` to build it in, private to this process.

    `prefix` defaults to `.<name of final>.incomplete-`; leftovers with that prefix of crashed processes are
    removed first, those of live ones (another process building the same directory) are left alone."""
    parent, name = os.path.split(os.path.abspath(final))
    prefix = prefix or f".{name}.incomplete-"
    remove_stale_leftovers(parent, prefix)
    work = os.path.join(parent, prefix + _owner_tag())
    remove(work)
    os.makedirs(work)
    return work


def unique_directory_in(parent, prefix):
    """A new empty directory `parent/<prefix><pid>-<random>`, one per call (threads of a process each get
    their own); leftovers with that prefix of crashed processes are removed first."""
    remove_stale_leftovers(parent, prefix)
    return tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent)


def publish_directory(work, final, aside_prefix=None):
    """Renames the finished directory `work` to `final`, so that `final` is the old directory or the new one.

    An existing `final` is first renamed aside, to `aside_prefix<host>-<pid>` (default `.<name>.replaced-`)
    beside it, and removed after the switch: `final` is absent only for an instant, or after a crash in between.
    When the switch fails (OSError), the old directory is put back unless another process published one."""
    final = os.path.abspath(final)
    if not os.path.lexists(final):
        os.rename(work, final)
        return
    parent, name = os.path.split(final)
    aside = os.path.join(parent, (aside_prefix or f".{name}.replaced-") + _owner_tag())
    remove(aside)
    os.replace(final, aside)
    try:
        os.rename(work, final)
    finally:
        if not os.path.lexists(final):
            os.rename(aside, final)
        remove(aside)

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

The one rule where a directory is published: a tool only ever replaces a directory that this project made.
`publish_directory` leaves a marker file (`MARKER_FILE`) in every directory it publishes, and refuses to replace
anything else at that path (a user's file, folder or link, or a directory a tool is reading), before deleting
anything: `check_replaceable` says so in one line, and tools call it before they start writing too.
"""

import contextlib
import json
import os
import shutil
import socket
import tempfile

from t2t_repro.errors import UserError

# Left in every directory `publish_directory` publishes: what recognises it as this project's to replace.
MARKER_FILE = ".t2t-repro-made"


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
    it left nothing in them but empty directories (or `make_directory`'s marker): a failed command leaves no empty
    directory behind (and removes nothing it did not make)."""
    new = None  # the outermost directory of `directory`'s path that does not exist yet
    path = os.path.abspath(directory)
    while not os.path.lexists(path):
        new, path = path, os.path.dirname(path)
    try:
        yield
    except BaseException:
        if new is not None and os.path.isdir(new):
            for parent, _, names in sorted(os.walk(new), key=lambda entry: -len(entry[0])):
                with contextlib.suppress(OSError):  # not empty: kept
                    if names == [MARKER_FILE]:  # marked by `make_directory`, nothing else written
                        os.remove(os.path.join(parent, MARKER_FILE))
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


def check_writable(path, flag):
    """UserError, before any work, when the file `path` (named by `flag`) could not be written as `replacing`
    writes it: a directory there, or a directory to write in that is missing or refuses a new file (tried)."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UserError(f"{flag}={path} is a directory; name a file to write")
    if not os.path.isdir(directory):
        raise UserError(f"{flag}={path}: directory {directory} does not exist")
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=f".{os.path.basename(path)}.probe-"):
            pass
    except OSError as error:
        raise UserError(f"{flag}={path}: cannot write in {directory} ({error.strerror})") from None


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


def made_here(path, legacy=None):
    """True when `path` is a directory this project published: it holds MARKER_FILE, or (directories published
    before the marker existed) `legacy(path)` recognises it by its own metadata."""
    if os.path.islink(path) or not os.path.isdir(path):
        return False
    return os.path.isfile(os.path.join(path, MARKER_FILE)) or bool(legacy and legacy(path))


def _inside(path, directory):
    """True when `path` is `directory` or lies inside it, symbolic links resolved."""
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def check_replaceable(path, legacy=None, reading=None, remedy="name another place to write"):
    """The rule of every tool that publishes a directory: UserError, before anything is written or deleted,
    unless `path` is absent, an empty directory (nothing would be lost) or a directory this project made
    (`made_here`), and holds none of the paths it reads (`reading`, {flag or role: path}, None skipped)."""
    path = os.fspath(path)
    for role, read in (reading or {}).items():
        if read and os.path.lexists(path) and _inside(read, path):
            raise UserError(f"{path} would be replaced, but it holds {role} {read}, which is being read; nothing "
                            f"was written: {remedy}")
    if not os.path.lexists(path):
        return
    if os.path.islink(path):
        found = "a symbolic link"
    elif not os.path.isdir(path):
        found = "a file"
    elif not os.listdir(path) or made_here(path, legacy):
        return
    else:
        found = f"a directory that t2t-repro did not make (no {MARKER_FILE} in it)"
    raise UserError(f"{path} is {found}; it is left as it is and nothing was written: {remedy}, or move it away")


def _mark(directory):
    marker = os.path.join(directory, MARKER_FILE)
    if not os.path.exists(marker):
        write_file(marker, "made by t2t-repro: its tools may replace this directory\n")


def make_directory(path, remedy="name another directory"):
    """Creates the directory `path` (and its parents) for a tool's output, or takes the one there under the rule
    of `check_replaceable`, and marks it as this project's, so that a later run may replace what is in it."""
    check_replaceable(path, remedy=remedy)
    os.makedirs(path, exist_ok=True)
    _mark(path)


def publish_directory(work, final, aside_prefix=None, legacy=None):
    """Renames the finished directory `work` to `final`, so that `final` is the old directory or the new one.

    `work` gets this project's marker first; an existing `final` must be replaceable (`check_replaceable`, with
    `legacy` recognising directories of this project made before the marker): anything else there is a
    UserError and stays. An existing `final` is renamed aside, to `aside_prefix<host>-<pid>` (default
    `.<name>.replaced-`) beside it, and removed after the switch: `final` is absent only for an instant, or after
    a crash in between. When the switch fails (OSError), the old directory is put back unless another process
    published one."""
    final = os.path.abspath(final)
    _mark(work)
    if not os.path.lexists(final):
        os.rename(work, final)
        return
    check_replaceable(final, legacy)
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

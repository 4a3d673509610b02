"""Reading the documentation's shell commands, for the tests that check the pages against the tools: fenced code
blocks, lines joined at a trailing backslash, the t2t-repro-* commands of a line as words, and the flags each
tool's --help lists."""

import concurrent.futures
import os
import pathlib
import re
import shlex
import subprocess
import sys

ROOT = pathlib.Path(os.path.abspath(__file__)).parent.parent
TOOLS = {
    "t2t-repro-trainer": "trainer", "t2t-repro-datagen": "datagen", "t2t-repro-decoder": "decoder",
    "t2t-repro-exporter": "exporter", "t2t-repro-avg-checkpoints": "avg_checkpoints",
    "t2t-repro-visualize": "visualize", "t2t-repro-serve": "serve", "t2t-repro-bleu": "bleu",
    "t2t-repro-evalb": "evalb",
}

_FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
# A command: a t2t-repro-* word followed by a space or the line's end (not "t2t-repro-datagen: error: ...", which
# is output), at the start of the line or of a pipeline stage, after any VARIABLE=value assignments.
_COMMAND = re.compile(r"(?:^|[|;&]\s*)(?:[A-Za-z_]\w*=\S*\s+)*(t2t-repro-[a-z0-9-]+)(?=\s|$)")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
_OPTION_LINE = re.compile(r"^  (?:-\w, )?(--[A-Za-z0-9_-]+)")  # argparse's option list, not its wrapped help


def read(page):
    return (ROOT / page).read_text(encoding="utf-8")


def prose(text):
    """A Markdown text without its fenced code blocks."""
    return _FENCE.sub("", text)


def fenced_blocks(text):
    """(info string, body) of every fenced code block of a Markdown text."""
    return [(match.group(1).strip(), match.group(2)) for match in _FENCE.finditer(text)]


def joined_lines(body):
    """The lines of a block, each line ending in a backslash joined to the next."""
    lines, pending = [], ""
    for line in body.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
        else:
            lines.append(pending + line)
            pending = ""
    return lines + ([pending] if pending else [])


def shell_words(line):
    """The words of a shell line (quotes removed, comments dropped), with | ; & < > as words of their own."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def line_commands(line):
    """The t2t-repro-* commands of one shell line, each as its list of words (the tool first): the words of each
    pipeline stage (split at | ; & && > <), leading VARIABLE=value assignments skipped."""
    if not _COMMAND.search(line):
        return []
    commands, stage = [], []
    for word in shell_words(line) + [";"]:
        if set(word) <= set("|;&<>()"):
            while stage and _ASSIGNMENT.match(stage[0]):
                stage.pop(0)
            if stage and stage[0].startswith("t2t-repro-"):
                commands.append(stage)
            stage = []
        else:
            stage.append(word)
    return commands


def page_commands(page):
    """Every t2t-repro-* command in the fenced code blocks of a page, in order."""
    return [command for _, body in fenced_blocks(read(page)) for line in joined_lines(body)
            for command in line_commands(line)]


def tool_help_flags():
    """{console script: the flags its --help lists}, from one `python -m t2t_repro.cli.<module> --help` each."""
    def flags(module):
        result = subprocess.run([sys.executable, "-m", f"t2t_repro.cli.{module}", "--help"], capture_output=True,
                                text=True, timeout=120, cwd=ROOT)
        assert result.returncode == 0, result.stderr
        return {match.group(1) for line in result.stdout.splitlines() if (match := _OPTION_LINE.match(line))}

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(TOOLS)) as pool:
        found = dict(zip(TOOLS, pool.map(flags, TOOLS.values())))
    assert all("--help" in names and len(names) > 2 for names in found.values()), found
    return found


def unknown_flags(commands, tool_flags):
    """'<command>: --flag' for each flag a command uses that its tool's --help does not list (and for each
    t2t-repro-* word that is no console script)."""
    unknown = []
    for words in commands:
        if words[0] not in TOOLS:
            unknown.append(f"{' '.join(words)}: no console script {words[0]}")
            continue
        for word in words[1:]:
            flag = word.split("=", 1)[0]
            if flag.startswith("--") and flag not in tool_flags[words[0]]:
                unknown.append(f"{' '.join(words)}: {flag}")
    return unknown

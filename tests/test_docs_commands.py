"""The README and docs/*.md checked against the tools, so that they cannot drift: every flag of every t2t-repro-*
command shown in a fenced code block is one that the tool's --help lists (one --help call per tool), every
--problem and --hparams named is registered, every relative link points to a file that exists (and a #anchor to
a heading of that page), the README's test command is the one the CI runs, and the quickstart's cheap commands
run as shown."""

import re
import sys

import pytest

import doc_pages
from conftest import run_cli_in_process
from doc_pages import (
    ROOT, TOOLS, fenced_blocks, joined_lines, line_commands, page_commands, prose, read, tool_help_flags, unknown_flags,
)

PAGES = ["README.md"] + sorted(str(path.relative_to(ROOT)) for path in (ROOT / "docs").glob("*.md"))
LINKED_PAGES = PAGES + ["CHANGELOG.md", "tools/benchmarks/README.md"]
QUICKSTART = "docs/quickstart.md"

_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


@pytest.fixture(scope="module")
def tool_flags():
    return tool_help_flags()


# Flags ----------------------------------------------------------------------------------------------------------


def test_every_flag_of_every_command_shown_is_one_the_tool_has(tool_flags):
    commands = {page: page_commands(page) for page in PAGES}
    for page in ("README.md", QUICKSTART, "docs/reproducing.md", "docs/training.md", "docs/decoding.md",
                 "docs/serving.md"):
        assert commands[page], f"{page} shows no t2t-repro-* command"
    assert {words[0] for shown in commands.values() for words in shown} == set(TOOLS)
    unknown = [f"{page}: {problem}" for page, shown in commands.items()
               for problem in unknown_flags(shown, tool_flags)]
    assert not unknown, "flags the tools do not have:\n" + "\n".join(unknown)


def test_the_flag_check_finds_a_flag_that_does_not_exist(tool_flags):
    text = ("T2T_REPRO_VERBOSE=1 t2t-repro-trainer --problem=toy_ende \\\n    --vocab_sise=8000   # a comment --xla\n"
            "echo hi | t2t-repro-decoder --output_dir=O --beam_width=4 > out.txt && t2t-repro-blue --json\n")
    commands = [command for line in joined_lines(text) for command in line_commands(line)]
    assert [words[0] for words in commands] == ["t2t-repro-trainer", "t2t-repro-decoder", "t2t-repro-blue"]
    assert unknown_flags(commands, tool_flags) == [
        "t2t-repro-trainer --problem=toy_ende --vocab_sise=8000: --vocab_sise",
        "t2t-repro-decoder --output_dir=O --beam_width=4: --beam_width",
        "t2t-repro-blue --json: no console script t2t-repro-blue",
    ]


def test_the_readme_test_command_is_the_one_the_ci_runs():
    ci_command = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
                  if line.strip() and not line.startswith("#")][-1]
    first_block = fenced_blocks(read("README.md"))[0][1].splitlines()
    assert ci_command in first_block
    assert ("pip install . && t2t-repro-trainer --problem=toy_ende --hparams=transformer_tiny "
            "--output_dir=runs/toy_ende") in first_block


# Links ----------------------------------------------------------------------------------------------------------


def anchors(text):
    """GitHub's anchors of a page's headings (outside code blocks): lowercased, punctuation dropped, spaces to -."""
    return {re.sub(r"[^\w\- ]", "", re.sub(r"`", "", heading).lower()).replace(" ", "-")
            for heading in _HEADING.findall(prose(text))}


def broken_links(page):
    """'<page>: <link>' for each relative link of a page (outside code blocks) whose file does not exist, or whose
    #anchor is no heading of that file."""
    broken = []
    for target in _LINK.findall(prose(read(page))):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        file = (ROOT / page).parent / path if path else ROOT / page
        if not file.exists():
            broken.append(f"{page}: {target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text(encoding="utf-8")):
            broken.append(f"{page}: {target} (no such heading)")
    return broken


def test_every_relative_link_points_to_an_existing_file():
    links = sum(len(_LINK.findall(read(page))) for page in LINKED_PAGES)
    assert links > 40
    broken = [problem for page in LINKED_PAGES for problem in broken_links(page)]
    assert not broken, "\n".join(broken)


def test_the_link_check_finds_a_broken_link(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A page\n\n## Its part\n", encoding="utf-8")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md) [ok](docs/a.md#its-part) [web](https://example.com/x.md)\n"
        "[gone](docs/b.md) [bad anchor](docs/a.md#no-part)\n```\n[in code](docs/c.md)\n```\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(doc_pages, "ROOT", tmp_path)
    assert broken_links("README.md") == ["README.md: docs/b.md (no such file)",
                                         "README.md: docs/a.md#no-part (no such heading)"]


# The quickstart's cheap commands, run -------------------------------------------------------------------------


def shown_command(page, start):
    """The one command of the page's code blocks whose text starts with `start`, as its words."""
    found = [words for words in page_commands(page) if " ".join(words).startswith(start)]
    assert len(found) == 1, f"{page}: {len(found)} commands start with {start!r}"
    return found[0]


def _run(words, replace=None):
    """Runs a shown command in this process (its console script's main), with words replaced as `replace` says."""
    replace = replace or {}
    result = run_cli_in_process(TOOLS[words[0]], *[replace.get(word, word) for word in words[1:]])
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_registry_help_lists_every_problem_and_hparams_set_the_pages_name():
    listing = _run(shown_command(QUICKSTART, "t2t-repro-trainer --registry_help"))
    names = {line.split()[0] for line in listing.splitlines() if line.startswith("  ")}
    assert {"toy_ende", "wmt_ende", "wsj_parsing", "transformer_tiny", "transformer_base"} <= names
    named = set()
    for page in PAGES:
        for words in page_commands(page):
            if any(word.startswith("--t2t_usr_dir") for word in words):
                continue  # names of a user directory: tests/test_docs_own_data.py checks those
            named |= {f"{page}: {word}" for word in words if word.split("=")[0] in ("--problem", "--hparams")}
    assert len(named) > 10
    unregistered = [entry for entry in sorted(named) if entry.split("=", 1)[1] not in names]
    assert not unregistered, unregistered


def test_hparams_help_shows_transformer_tiny_as_the_quickstart_describes_it():
    output = _run(shown_command(QUICKSTART, "t2t-repro-trainer --hparams=transformer_tiny --hparams_help"))
    values = {line.split()[0]: line.split()[1] for line in output.splitlines() if line.strip()}
    assert (values["num_layers"], values["d_model"], values["train_steps"], values["batch_tokens"]) == (
        "2", "128", "1200", "2048")
    assert "(2 layers, d_model 128) for 1,200 steps of 2,048 tokens" in " ".join(read(QUICKSTART).split())


def _pattern(shown):
    """A regex of an output line a page shows: numbers stand for any numbers, "..." for anything."""
    regex = ""
    for part in re.split(r"(\.\.\.|\d+(?:\.\d+)*)", shown.strip()):
        if part == "...":
            regex += ".*"
        elif re.fullmatch(r"\d+(?:\.\d+)*", part):
            regex += r"\d+(?:\.\d+)*"
        else:
            regex += re.sub(r"\\ +", r"\\s+", re.escape(part))
    return re.compile(regex)


def test_bleu_scores_two_small_files_and_prints_what_the_quickstart_shows(tmp_path):
    reference, hypothesis = tmp_path / "ref.de", tmp_path / "hyp.de"
    reference.write_text("Der Hund schläft.\nDie Katze sitzt auf der Matte.\nEr muss Julia helfen.\n",
                         encoding="utf-8")
    hypothesis.write_text("Der Hund schläft.\nDie Katze sitzt auf Matte.\nEr muss Julia helfen.\n", encoding="utf-8")
    words = shown_command(QUICKSTART, "t2t-repro-bleu")
    assert words == ["t2t-repro-bleu", "--translation=test.hyp.de", "--reference=test.de", "--lang=de"]
    output = _run(words, {"--translation=test.hyp.de": f"--translation={hypothesis}",
                          "--reference=test.de": f"--reference={reference}"})
    shown = [body for info, body in fenced_blocks(read(QUICKSTART)) if body.startswith("BLEU|")]
    assert len(shown) == 1
    lines = output.strip().splitlines()
    for shown_line in shown[0].strip().splitlines():
        assert any(_pattern(shown_line).fullmatch(line.strip()) for line in lines), (shown_line, output)
    assert re.search(r"tokenized BLEU, compound split \(paper, cased\)\s+= (\d+\.\d+)", output)

"""The repository's own text: module docstrings cite the paper's sections, not a notes file the repository does
not hold, and the licence and citation files are there."""

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_no_source_file_cites_a_file_the_repository_lacks():
    citing = [str(path.relative_to(ROOT)) for folder in ("t2t_repro", "problems", "hparams", "tools", "examples")
              for path in (ROOT / folder).rglob("*.py") if "PAPER.md" in path.read_text(encoding="utf-8")]
    assert not (ROOT / "PAPER.md").exists() and citing == []


def test_licence_and_citation_are_there():
    assert "Apache License" in (ROOT / "LICENSE").read_text() and "Version 2.0" in (ROOT / "LICENSE").read_text()
    citation = (ROOT / "CITATION.cff").read_text()
    assert "Attention Is All You Need" in citation and "1706.03762" in citation

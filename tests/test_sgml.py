"""--manual_dir with the official WMT SGML test sets as they are, and a byte order mark that never reaches the text."""

import pytest

from t2t_repro.catalog import get_problem
from t2t_repro.data.sgml import unescape
from t2t_repro.errors import UserError

TRAIN = [("The house is small.", "Das Haus ist klein."), ("Good morning!", "Guten Morgen!")] * 3
DEV = [("Noise & Co. <loud>", "Lärm & Co. <laut>"), ('He said "yes".', "Er sagte „ja“.")]
TEST = [("It's 5 > 3.", "Es ist 5 > 3."), ("Müller's café", "Müllers Café"), ("AT&T", "AT&T")]


def _escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _sgml(path, root, language, sentences, docs=("doc-a", "doc-b"), bom=False):
    lines = [f'<{root} setid="newstest" srclang="any" trglang="{language}">']
    half = (len(sentences) + 1) // 2
    for doc, chunk in zip(docs, (sentences[:half], sentences[half:])):
        lines.append(f'<doc sysid="ref" docid="{doc}" genre="news" origlang="en">')
        lines.append("<p>")
        lines += [f'<seg id="{number}">{_escape(text)}</seg>' for number, text in enumerate(chunk, 1)]
        lines += ["</p>", "</doc>"]
    lines.append(f"</{root}>")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + ("\n".join(lines) + "\n").encode("utf-8"))


def _manual(tmp_path, test_names=("newstest2014-deen-src.en.sgm", "newstest2014-deen-ref.de.sgm")):
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "train.en").write_text("".join(s + "\n" for s, _ in TRAIN), encoding="utf-8")
    (manual / "train.de").write_text("".join(t + "\n" for _, t in TRAIN), encoding="utf-8")
    _sgml(manual / "newstest2013-src.en.sgm", "srcset", "en", [s for s, _ in DEV], bom=True)
    _sgml(manual / "newstest2013-ref.de.sgm", "refset", "de", [t for _, t in DEV])
    _sgml(manual / test_names[0], "srcset", "en", [s for s, _ in TEST])
    _sgml(manual / test_names[1], "refset", "de", [t for _, t in TEST])
    return manual


def test_official_sgml_dev_and_test_sets_are_read_with_entities_undone(tmp_path):
    problem = get_problem("wmt_ende")
    summary = problem.generate_data(tmp_path / "data", manual_dir=_manual(tmp_path), workers=1)
    assert summary["splits"]["dev"]["examples"] == 2 and summary["splits"]["test"]["examples"] == 3
    assert problem.text_pairs("dev", tmp_path / "data") == DEV
    assert problem.text_pairs("test", tmp_path / "data") == TEST


def test_generic_sgml_names_and_enfr_pair_names(tmp_path):
    manual = _manual(tmp_path, ("test.en.sgm", "test.de.sgm"))
    problem = get_problem("wmt_ende")
    problem.generate_data(tmp_path / "data", manual_dir=manual, workers=1)
    assert problem.text_pairs("test", tmp_path / "data") == TEST
    fr = get_problem("wmt_enfr")
    assert fr.split_files(str(manual), "test")[1].endswith("test.fr")  # no test.fr.sgm beside test.en.sgm
    for name in ("newstest2014-fren-src.en.sgm", "newstest2014-fren-ref.fr.sgm"):
        (manual / name).write_text('<seg id="1">x</seg>\n', encoding="utf-8")
    (manual / "test.en.sgm").unlink()
    assert [p.rsplit("/", 1)[1] for p in fr.split_files(str(manual), "test")] == [
        "newstest2014-fren-src.en.sgm", "newstest2014-fren-ref.fr.sgm"]


def test_misaligned_or_malformed_sgml_is_a_one_line_error(tmp_path):
    manual = _manual(tmp_path)
    _sgml(manual / "newstest2014-deen-ref.de.sgm", "refset", "de", [t for _, t in TEST], docs=("doc-a", "doc-c"))
    problem = get_problem("wmt_ende")
    with pytest.raises(UserError, match=r"do not align: document 'doc-b' segment 1 faces document 'doc-c'"):
        problem.generate_data(tmp_path / "data", manual_dir=manual, workers=1)
    (manual / "newstest2014-deen-ref.de.sgm").write_text('<seg id="1">a</seg>\n', encoding="utf-8")
    with pytest.raises(UserError, match="has 3 segments and .* 1; a source and its reference must align"):
        problem.generate_data(tmp_path / "data", manual_dir=manual, workers=1)
    (manual / "newstest2014-deen-ref.de.sgm").write_text("<seg id=\"1\">no end\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"ref\.de\.sgm:1: a <seg> line must hold one whole segment"):
        problem.generate_data(tmp_path / "data", manual_dir=manual, workers=1)
    (manual / "newstest2014-deen-ref.de.sgm").write_text("just text\n", encoding="utf-8")
    with pytest.raises(UserError, match="holds no <seg"):
        problem.generate_data(tmp_path / "data", manual_dir=manual, workers=1)
    (manual / "newstest2014-deen-ref.de.sgm").unlink()
    missing = r"lacks test\.en, test\.de; .*dev and test may be SGML files.*newstest2014-src\.en\.sgm"
    with pytest.raises(UserError, match=missing):
        problem.generate_data(tmp_path / "data", manual_dir=manual, workers=1)


def test_several_candidate_files_are_refused(tmp_path):
    manual = _manual(tmp_path)
    _sgml(manual / "newstest2014-ende-src.en.sgm", "srcset", "en", [s for s, _ in TEST])
    with pytest.raises(UserError, match="several newstest2014 src files for en"):
        get_problem("wmt_ende").check_raw_data(None, str(manual))


def test_unescape_undoes_xml_escapes_only():
    assert unescape("a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos; &#39; &#x2019; &amp;quot;") == \
        "a & b <c> \"d\" 'e' ' \u2019 &quot;"
    assert unescape("R&D &copy; &nbsp; &#xZZ; &#99999999;") == "R&D &copy; &nbsp; &#xZZ; &#99999999;"


def test_a_byte_order_mark_does_not_stay_in_the_first_sentence(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    for split, pairs in (("train", TRAIN), ("dev", TRAIN[:2]), ("test", TRAIN[:2])):
        for side, language in enumerate(("en", "de")):
            text = "".join(pair[side] + "\n" for pair in pairs).encode("utf-8")
            (manual / f"{split}.{language}").write_bytes(b"\xef\xbb\xbf" + text)
    problem = get_problem("wmt_ende")
    problem.generate_data(tmp_path / "data", manual_dir=manual, workers=1)
    assert problem.text_pairs("test", tmp_path / "data")[0] == TRAIN[0]
    vocab = problem.vocabularies(tmp_path / "data").target
    first = next(problem.dataset("test", tmp_path / "data").as_numpy_iterator())
    assert vocab.decode(first["inputs"]) == TRAIN[0][0]

"""The paper's BLEU: sacreBLEU equality, Moses tokenization, compound splitting, sacreBLEU's tokenizer per target
language, and the t2t-repro-bleu CLI."""

import importlib
import importlib.util
import json
import re
import string
import subprocess
import sys
import urllib.error

import pytest
import sacrebleu
from conftest import run_cli

from t2t_repro.errors import UserError
from t2t_repro.evaluate.bleu import (
    check_tokenizer, corpus_bleu, default_tokenizer, file_bleu, moses_tokenize, read_lines, split_compounds,
)
from t2t_repro.evaluate.scorers import BleuScorer

HYPOTHESES = [
    "Der Hund-Besitzer ging gestern nach Hause.",
    'Er sagte: "Das kostet 3,50 Euro."',
    "Das E-Mail-Konto ist voll, aber die Festplatte nicht.",
    "Die Regierung hat am Montag neue Regeln beschlossen.",
]
REFERENCES = [
    "Der Hundebesitzer ging gestern nach Hause.",
    'Er sagte: "Es kostet 3,50 Euro."',
    "Das E-Mail-Konto ist voll, die Festplatte aber nicht.",
    "Die Regierung hat am Montag neue Regeln verabschiedet.",
]


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    return _write(tmp_path / "hyp.de", HYPOTHESES), _write(tmp_path / "ref.de", REFERENCES)


def _run(module, *args):
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=120)


def test_sacrebleu_score_and_signature_equal_the_library():
    scores = corpus_bleu(HYPOTHESES, REFERENCES)
    metric = sacrebleu.BLEU()
    expected = metric.corpus_score(HYPOTHESES, [REFERENCES])
    assert scores["sacrebleu"] == pytest.approx(expected.score, abs=1e-9)
    assert scores["signature"] == metric.get_signature().format()
    assert "tok:13a" in scores["signature"] and "case:mixed" in scores["signature"]


def test_moses_tokenization_by_hand():
    assert moses_tokenize('Er sagte: "Das kostet 3,50 Euro."') == "Er sagte : &quot; Das kostet 3,50 Euro . &quot;"
    # tokenizer.perl without -a keeps hyphenated compounds together; abbreviations keep their periods.
    assert moses_tokenize("Die Hund-Besitzer (z.B. Herr Müller) kamen.") == (
        "Die Hund-Besitzer ( z.B. Herr Müller ) kamen ."
    )


def test_compound_splitting_by_hand():
    assert split_compounds("Das E-Mail-Konto ist voll .") == "Das E ##AT##-##AT## Mail ##AT##-##AT## Konto ist voll ."
    # A lone dash and a trailing hyphen are not compounds.
    assert split_compounds("a - b x-") == "a - b x-"
    # Perl's s{(\S)-(\S)}{...}g does not overlap matches; the recipe's result is kept as it is.
    assert split_compounds("a-b-c") == "a ##AT##-##AT## b-c"


def test_tokenized_bleu_is_multi_bleu_on_pre_tokenized_text():
    # hypothesis "a b c d e" against "a b c d f": precisions 4/5, 3/4, 2/3, 1/2, no brevity penalty.
    scores = corpus_bleu(["a b c d e"], ["a b c d f"])
    assert scores["tokenized"] == pytest.approx(100 * (4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25)
    # multi-bleu.perl gives 0 when an n-gram order has no match (sacreBLEU's default would smooth it).
    assert corpus_bleu(["a b x c"], ["a b y c"])["tokenized"] == 0.0


def test_tokenized_figures_follow_the_recipe():
    scores = corpus_bleu(HYPOTHESES, REFERENCES, lang="de")
    tokenized_hyps = [moses_tokenize(line, "de") for line in HYPOTHESES]
    tokenized_refs = [moses_tokenize(line, "de") for line in REFERENCES]
    split_hyps = [split_compounds(line) for line in tokenized_hyps]
    split_refs = [split_compounds(line) for line in tokenized_refs]

    def multi_bleu(hyps, refs, lowercase=False):
        metric = sacrebleu.BLEU(tokenize="none", smooth_method="none", lowercase=lowercase, force=True)
        return metric.corpus_score(hyps, [refs]).score

    assert scores["tokenized"] == pytest.approx(multi_bleu(tokenized_hyps, tokenized_refs))
    assert scores["tokenized_uncased"] == pytest.approx(multi_bleu(tokenized_hyps, tokenized_refs, True))
    assert scores["tokenized_compound_split"] == pytest.approx(multi_bleu(split_hyps, split_refs))
    assert scores["tokenized_compound_split_uncased"] == pytest.approx(multi_bleu(split_hyps, split_refs, True))
    # Splitting "E-Mail-Konto" into matching pieces raises the score: the figures really differ.
    assert scores["tokenized_compound_split"] > scores["tokenized"]


def test_case_matters_only_to_the_cased_figures():
    scores = corpus_bleu(["das ist gut ."], ["Das ist gut ."])
    assert scores["tokenized_uncased"] == pytest.approx(100.0)
    assert scores["tokenized"] < 100.0


def test_uncased_figures_lowercase_all_of_unicode_unlike_multi_bleu_lc():
    hypotheses, references = ["über den Fluss ."], ["Über den Fluss ."]
    scores = corpus_bleu(hypotheses, references)
    assert scores["tokenized_uncased"] == pytest.approx(100.0)
    # multi-bleu.perl -lc lowercases ASCII only (Perl's lc on undecoded bytes): "Über" stays apart from "über".
    ascii_lower = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
    multi_bleu_lc = sacrebleu.BLEU(tokenize="none", smooth_method="none", force=True).corpus_score(
        [line.translate(ascii_lower) for line in hypotheses], [[line.translate(ascii_lower) for line in references]]
    )
    assert multi_bleu_lc.score < scores["tokenized_uncased"]
    assert "Unicode" in scores["uncased_note"] and "multi-bleu.perl -lc" in scores["uncased_note"]


def test_compound_split_is_german_only():
    scores = corpus_bleu(["Le chat-huant dort ."], ["Le chat-huant dort ."], lang="fr")
    assert scores["tokenized"] == pytest.approx(100.0)
    assert scores["tokenized_compound_split"] is None


def test_mismatched_lengths_are_a_user_error(tmp_path):
    with pytest.raises(UserError, match="2 hypotheses but 1 references"):
        corpus_bleu(["a", "b"], ["a"])
    hyp, ref = _write(tmp_path / "h", ["a", "b"]), _write(tmp_path / "r", ["a"])
    with pytest.raises(UserError, match="line-aligned"):
        file_bleu(hyp, ref)
    with pytest.raises(UserError, match="no such file"):
        read_lines(tmp_path / "missing")


def test_file_bleu_reads_lines_like_sacrebleu(files):
    hyp, ref = files
    assert read_lines(hyp) == HYPOTHESES
    assert file_bleu(hyp, ref)["sacrebleu"] == pytest.approx(corpus_bleu(HYPOTHESES, REFERENCES)["sacrebleu"])


def test_cli_equals_the_sacrebleu_command_line(files):
    hyp, ref = files
    ours = _run("t2t_repro.cli.bleu", f"--translation={hyp}", f"--reference={ref}")
    theirs = _run("sacrebleu", str(ref), "-i", str(hyp), "-f", "text")
    assert ours.returncode == 0 and theirs.returncode == 0, ours.stderr + theirs.stderr
    assert ours.stdout.splitlines()[0] == theirs.stdout.strip()
    assert "compound split" in ours.stdout
    uncased_rows = [line for line in ours.stdout.splitlines() if line.startswith("tokenized") and "uncased" in line]
    assert len(uncased_rows) == 2 and all("Unicode" in row for row in uncased_rows)
    assert corpus_bleu(HYPOTHESES, REFERENCES)["uncased_note"] in ours.stdout

    ours_json = json.loads(_run("t2t_repro.cli.bleu", f"--translation={hyp}", f"--reference={ref}", "--json").stdout)
    theirs_json = json.loads(_run("sacrebleu", str(ref), "-i", str(hyp), "-w", "4").stdout)
    assert round(ours_json["sacrebleu"], 4) == theirs_json["score"]
    assert ours_json["signature"] == theirs_json["signature"]
    for key in ("sacrebleu", "signature", "tokenized", "tokenized_compound_split", "tokenized_uncased",
                "uncased_note"):
        assert key in ours_json


def test_cli_errors_are_one_line_and_exit_2(files, tmp_path):
    hyp, ref = files
    missing = _run("t2t_repro.cli.bleu", f"--translation={tmp_path / 'nope'}", f"--reference={ref}")
    assert missing.returncode == 2
    assert len(missing.stderr.strip().splitlines()) == 1 and "no such file" in missing.stderr

    short = _write(tmp_path / "short.de", HYPOTHESES[:2])
    mismatched = _run("t2t_repro.cli.bleu", f"--translation={short}", f"--reference={ref}", "--json")
    assert mismatched.returncode == 2
    assert mismatched.stdout == ""
    assert len(mismatched.stderr.strip().splitlines()) == 1 and "2 lines" in mismatched.stderr


# ---------------------------------------------------------------------------------------------------------------
# BLEU into any target language: sacreBLEU's tokenizer for the language, or the one asked for.

ZH_HYPOTHESES = ["我们明天去北京开会。", "这只猫很喜欢睡觉。", "他昨天买了一本新书。"]
ZH_REFERENCES = ["我们明天要去北京开会。", "这只猫非常喜欢睡觉。", "他昨天买了一本新书。"]


def _sacrebleu(hypotheses, references, tokenize):
    metric = sacrebleu.BLEU(tokenize=tokenize)
    score = metric.corpus_score(hypotheses, [references])
    return score.score, metric.get_signature().format()


def test_default_tokenizer_suits_the_target_language():
    for lang in ("de", "fr", "en", "ru", "xx"):
        assert check_tokenizer(lang) == "13a"
    assert check_tokenizer("zh") == "zh" and check_tokenizer("zh-TW") == "zh"
    # Resolving alone needs no MeCab; building them (check_tokenizer) does.
    assert default_tokenizer("ja") == "ja-mecab" and default_tokenizer("ja_JP") == "ja-mecab"
    assert default_tokenizer("ko") == "ko-mecab"
    assert all(default_tokenizer(lang) in sacrebleu.BLEU.TOKENIZERS for lang in ("zh", "ja", "ko", "xx"))


def test_chinese_is_scored_with_sacrebleus_zh_tokenizer():
    scores = corpus_bleu(ZH_HYPOTHESES, ZH_REFERENCES, lang="zh")
    expected, signature = _sacrebleu(ZH_HYPOTHESES, ZH_REFERENCES, "zh")
    assert scores["tokenize"] == "zh"
    assert scores["sacrebleu"] == pytest.approx(expected, abs=1e-9)
    assert scores["signature"] == signature and "tok:zh" in signature
    # 13a leaves each Chinese sentence nearly one "word": the figure it gives is a different one.
    assert _sacrebleu(ZH_HYPOTHESES, ZH_REFERENCES, "13a")[0] != pytest.approx(expected)
    assert scores["tokenized_compound_split"] is None


def test_an_explicit_tokenizer_wins():
    scores = corpus_bleu(ZH_HYPOTHESES, ZH_REFERENCES, lang="zh", tokenize="char")
    expected, signature = _sacrebleu(ZH_HYPOTHESES, ZH_REFERENCES, "char")
    assert scores["tokenize"] == "char" and scores["signature"] == signature and "tok:char" in signature
    assert scores["sacrebleu"] == pytest.approx(expected, abs=1e-9)

    default, intl = corpus_bleu(HYPOTHESES, REFERENCES), corpus_bleu(HYPOTHESES, REFERENCES, tokenize="intl")
    assert intl["tokenize"] == "intl" and "tok:intl" in intl["signature"]
    assert intl["sacrebleu"] == pytest.approx(_sacrebleu(HYPOTHESES, REFERENCES, "intl")[0], abs=1e-9)
    # The paper's tokenized figures are Moses's whatever sacreBLEU tokenizes with.
    for key in ("tokenized", "tokenized_uncased", "tokenized_compound_split", "tokenized_compound_split_uncased"):
        assert intl[key] == default[key]
    assert check_tokenizer("zh", "13a") == "13a"


def test_an_unknown_tokenizer_is_a_user_error_naming_the_valid_ones():
    for call in (lambda: check_tokenizer("de", "moses"), lambda: corpus_bleu(["a"], ["a"], tokenize="moses")):
        with pytest.raises(UserError, match="unknown BLEU tokenizer 'moses'") as error:
            call()
        message = str(error.value)
        assert "\n" not in message
        assert all(name in message for name in sacrebleu.BLEU.TOKENIZERS)


@pytest.mark.parametrize("lang, tokenizer_module, extra", [
    ("ja", "tokenizer_ja_mecab", "ja"),
    ("ko", "tokenizer_ko_mecab", "ko"),
])
def test_a_missing_optional_package_is_a_user_error_saying_what_to_install(monkeypatch, lang, tokenizer_module,
                                                                             extra):
    # sacreBLEU sets MeCab to None where its import failed: as if `sacrebleu[ja]` / `[ko]` were not installed.
    module = importlib.import_module(f"sacrebleu.tokenizers.{tokenizer_module}")
    monkeypatch.setattr(module, "MeCab", None)
    hint = f'pip install "sacrebleu[{extra}]"'
    for call in (lambda: check_tokenizer(lang), lambda: check_tokenizer("xx", f"{lang}-mecab"),
                 lambda: corpus_bleu(["a"], ["a"], lang=lang), lambda: BleuScorer(lang)):
        with pytest.raises(UserError, match=re.escape(hint)) as error:
            call()
        assert "\n" not in str(error.value) and f"'{lang}-mecab'" in str(error.value)


def test_sentencepiece_tokenizers_say_what_is_missing(monkeypatch, tmp_path):
    from sacrebleu.tokenizers import tokenizer_spm

    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # import sentencepiece fails
    with pytest.raises(UserError, match="needs packages that are not installed: pip install sentencepiece"):
        check_tokenizer("xx", "flores200")
    monkeypatch.delitem(sys.modules, "sentencepiece")

    def offline(url, path):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(tokenizer_spm, "SACREBLEU_DIR", str(tmp_path))
    monkeypatch.setattr(tokenizer_spm, "download_file", offline)
    with pytest.raises(UserError, match="'flores101' cannot get its model .*: Name or service not known"):
        check_tokenizer("xx", "flores101")


def test_bleu_scorer_passes_the_tokenizer_through_and_records_it():
    scorer = BleuScorer("zh")
    assert scorer.tokenize == "zh"
    scores = scorer(ZH_HYPOTHESES, ZH_REFERENCES, ["-"] * 3)["bleu"]
    assert scores["tokenize"] == "zh" and scores["lang"] == "zh"
    assert scores["sacrebleu"] == pytest.approx(_sacrebleu(ZH_HYPOTHESES, ZH_REFERENCES, "zh")[0], abs=1e-9)
    chars = BleuScorer("zh", tokenize="char")(ZH_HYPOTHESES, ZH_REFERENCES, ["-"] * 3)["bleu"]
    assert chars["tokenize"] == "char" and "tok:char" in chars["signature"]
    assert BleuScorer("de")(HYPOTHESES, REFERENCES, ["-"] * 4)["bleu"] == corpus_bleu(HYPOTHESES, REFERENCES)
    with pytest.raises(UserError, match="unknown BLEU tokenizer"):
        BleuScorer("de", tokenize="13b")


def test_cli_tokenize(tmp_path):
    hyp, ref = _write(tmp_path / "hyp.zh", ZH_HYPOTHESES), _write(tmp_path / "ref.zh", ZH_REFERENCES)
    for flags, tokenizer in ((["--lang=zh"], "zh"), (["--lang=zh", "--tokenize=char"], "char")):
        ours = run_cli("bleu", f"--translation={hyp}", f"--reference={ref}", *flags)
        theirs = _run("sacrebleu", str(ref), "-i", str(hyp), "-f", "text", "-tok", tokenizer)
        assert ours.returncode == 0 and theirs.returncode == 0, ours.stderr + theirs.stderr
        assert ours.stdout.splitlines()[0] == theirs.stdout.strip()
        assert f"tok:{tokenizer}" in ours.stdout

    bad = run_cli("bleu", f"--translation={hyp}", f"--reference={ref}", "--tokenize=moses", "--json")
    assert bad.returncode == 2 and bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1
    assert ": error: unknown BLEU tokenizer 'moses'" in bad.stderr and "13a" in bad.stderr


@pytest.mark.skipif(importlib.util.find_spec("MeCab") is not None, reason="MeCab is installed here")
def test_cli_japanese_without_its_extras_is_one_line(tmp_path):
    hyp, ref = _write(tmp_path / "hyp.ja", ["猫が好きです。"]), _write(tmp_path / "ref.ja", ["猫が好きです。"])
    result = run_cli("bleu", f"--translation={hyp}", f"--reference={ref}", "--lang=ja")
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and 'pip install "sacrebleu[ja]"' in result.stderr

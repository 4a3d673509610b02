"""CTranslate2 exports: the layout and versions of the export, outputs equal to the TensorFlow decoder's
(greedy: the same outputs and scores; beam 4: at least 98% the same), int8 weights, the decoder and the
server with --engine=ctranslate2, sampling with it (topk:1 is greedy, a command gives the same bytes, samples
are scored by their log-probability), and one-line errors for what cannot be done."""

import json
import os
import shutil
import subprocess
import sys

import pytest
import sacrebleu

from t2t_repro.cli import decoder, exporter
from t2t_repro.cli.common import run_main
from t2t_repro.decode.decode_text import search_texts_nbest
from t2t_repro.decode_settings import SamplingSettings
from t2t_repro.errors import UserError
from t2t_repro.run import ctranslate2_jobs, jobs
from t2t_repro.serve import ctranslate2_export, versions
from t2t_repro.serve.export_files import read_export_metadata
from t2t_repro.special_tokens import EOS_ID

EXTRA_LENGTH = 6


@pytest.fixture(scope="module")
def sources(parallel_text_dir):
    """The tiny corpus' train and test sources, and lines the decoders must treat alike: empty, padded with
    whitespace, outside the vocabulary's characters, and longer than max_length (truncated)."""
    lines = [(parallel_text_dir / f"{split}.en").read_text(encoding="utf-8").splitlines()
             for split in ("train", "test")]
    long_line = " ".join(["the big red car sees the small old tree"] * 5)
    return lines[0] + lines[1] + ["", "  the cat runs \u3000", "Grüße aus Köln, 漢字 ✓", long_line]


@pytest.fixture(scope="module")
def ct2_export(serving_run):
    """Version 1 of a float32 CTranslate2 export of `serving_run` (in its default place, export_ctranslate2/),
    made by t2t-repro-exporter; extra_length 6 keeps decoding short."""
    status = run_main(exporter._main, [f"--output_dir={serving_run}", "--format=ctranslate2",
                                       f"--extra_length={EXTRA_LENGTH}"])
    assert status == 0
    return serving_run / "export_ctranslate2" / "1"


@pytest.fixture(scope="module")
def tf_decode(serving_run):
    """decode(sources, **settings) -> n-best Hypotheses of the TensorFlow beam search on the run."""

    def decode(texts, **settings):
        text_decoder = jobs.run_decoder(str(serving_run), extra_length=EXTRA_LENGTH, **settings)
        return search_texts_nbest(texts, text_decoder.search, text_decoder.vocabularies, text_decoder.settings,
                                  progress=False)

    return decode


def ct2_decode(model_dir, texts, **settings):
    text_decoder = ctranslate2_jobs.export_decoder(str(model_dir), **settings)
    return search_texts_nbest(texts, text_decoder.search, text_decoder.vocabularies, text_decoder.settings,
                              progress=False)


def test_export_is_a_ctranslate2_model_directory_with_its_vocabulary_and_metadata(ct2_export, serving_run):
    import ctranslate2

    names = sorted(os.listdir(ct2_export))
    assert names == ["config.json", "model.bin", "shared_vocabulary.json", "t2t_repro_export.json", "vocab.model"]
    assert ctranslate2.contains_model(str(ct2_export))
    metadata = read_export_metadata(ct2_export)
    assert metadata["format"] == "ctranslate2" and metadata["quantization"] == "float32"
    assert metadata["decode"] == {"beam_size": 4, "alpha": 0.6, "extra_length": EXTRA_LENGTH,
                                  "max_input_length": 32, "unfinished_compete": False}
    assert metadata["checkpoint"] == str(serving_run / "checkpoints" / "ckpt-1") and metadata["positions"] == 38
    config = json.loads((ct2_export / "config.json").read_text())
    assert config["decoder_start_token"] == "<pad>" and config["layer_norm_epsilon"] == 1e-6
    assert not config["add_source_eos"]  # sources end with "</s>" as given
    data_dir = json.loads((serving_run / "run.json").read_text())["data_dir"]
    vocab_model = open(os.path.join(data_dir, "wmt_ende", "vocab.model"), "rb").read()
    assert (ct2_export / "vocab.model").read_bytes() == vocab_model
    pieces = json.loads((ct2_export / "shared_vocabulary.json").read_text())
    assert pieces[:3] == ["<pad>", "</s>", "<unk>"] and len(pieces) == metadata["vocab_size"]


def test_greedy_outputs_and_scores_equal_the_tensorflow_decoders(ct2_export, sources, tf_decode):
    expected = tf_decode(sources, beam_size=1)
    got = ct2_decode(ct2_export, sources, beam_size=1)
    assert [h[0].text for h in got] == [h[0].text for h in expected]
    # Outputs of a barely trained model, run to their maximum length: not a comparison of empty strings.
    assert len({h[0].text for h in expected}) > 20 and sum(len(h[0].text) for h in expected) > 3000
    assert max(abs(g[0].score - e[0].score) for g, e in zip(got, expected)) < 1e-4


def test_beam_4_outputs_agree_and_bleu_matches(ct2_export, sources, tf_decode, parallel_text_dir):
    expected = tf_decode(sources, nbest=4)
    got = ct2_decode(ct2_export, sources, nbest=4)
    agree = sum(g[0].text == e[0].text for g, e in zip(got, expected)) / len(sources)
    assert agree >= 0.98
    same = [(g, e) for g, e in zip(got, expected) if g[0].text == e[0].text]
    assert max(abs(g[0].score - e[0].score) for g, e in same) < 1e-4
    assert all([h.score for h in g] == sorted((h.score for h in g), reverse=True) for g, _ in same)
    references = [(parallel_text_dir / f"{split}.de").read_text(encoding="utf-8").splitlines()
                  for split in ("train", "test")]
    references = references[0] + references[1] + [""] * 4
    bleu = [sacrebleu.corpus_bleu([h[0].text for h in outputs], [references]).score for outputs in (got, expected)]
    assert abs(bleu[0] - bleu[1]) <= 0.3


def test_int8_export_is_version_2_with_int8_weights_and_decodes(ct2_export, serving_run, sources, tmp_path):
    base = tmp_path / "export"
    shutil.copytree(ct2_export, base / "1")
    path = ctranslate2_jobs.export(str(serving_run), str(base), quantization="int8", extra_length=EXTRA_LENGTH)
    assert path == str(base / "2") and versions.list_versions(base) == [1, 2] and sorted(os.listdir(base)) == ["1", "2"]
    assert read_export_metadata(path)["quantization"] == "int8"
    # Embeddings and projections in int8: far smaller than float32 (position tables and norms stay float32).
    assert os.path.getsize(os.path.join(path, "model.bin")) < 0.6 * os.path.getsize(ct2_export / "model.bin")
    float32 = ct2_decode(ct2_export, sources[:40], beam_size=1)
    int8 = ct2_decode(path, sources[:40], beam_size=1)
    assert sum(a[0].text == b[0].text for a, b in zip(float32, int8)) >= 20  # close, not equal
    # The newest version is what an export directory means.
    assert ctranslate2_jobs.version_dir(str(base)) == path and ctranslate2_jobs.version_dir(str(base / "1")) == str(
        base / "1")


def test_a_failing_write_publishes_no_version(serving_run, tmp_path, monkeypatch):
    from ctranslate2.specs import model_spec

    def save_then_fail(spec, directory):
        open(os.path.join(directory, "model.bin"), "wb").close()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(model_spec.ModelSpec, "save", save_then_fail)
    base = tmp_path / "export"
    with pytest.raises(UserError, match="No space left on device"):
        ctranslate2_jobs.export(str(serving_run), export_dir=str(base), extra_length=2)
    assert os.listdir(base) == []


def test_decoder_cli_with_the_ctranslate2_engine_writes_what_the_tensorflow_engine_writes(
        ct2_export, serving_run, sources, tmp_path):
    source = tmp_path / "sources.en"
    source.write_text("\n".join(sources) + "\n", encoding="utf-8")
    written = {}
    for name, flags in (("tensorflow", [f"--output_dir={serving_run}", f"--extra_length={EXTRA_LENGTH}"]),
                        ("by_version", ["--engine=ctranslate2", f"--model_dir={ct2_export}"]),
                        ("by_run", ["--engine=ctranslate2", f"--output_dir={serving_run}", "--threads=1"])):
        target = tmp_path / f"{name}.de"
        assert run_main(decoder._main, [*flags, f"--decode_from_file={source}", f"--decode_to_file={target}",
                                        "--beam_size=1", "--nbest=1", "--quiet"]) == 0
        written[name] = target.read_text(encoding="utf-8")
    assert written["by_version"] == written["tensorflow"] == written["by_run"]
    assert len(written["tensorflow"].splitlines()) == len(sources)


@pytest.fixture(scope="module")
def sampled(ct2_export, sources, tmp_path_factory):
    """sample(name, *flags) -> the text t2t-repro-decoder --engine=ctranslate2 writes for the tiny corpus' test
    sources and the odd lines of `sources` (an empty one among them) with `flags`."""
    directory = tmp_path_factory.mktemp("ct2_sampling")
    source = directory / "sources.en"
    source.write_text("\n".join(sources[300:]) + "\n", encoding="utf-8")

    def sample(name, *flags):
        target = directory / f"{name}.de"
        assert run_main(decoder._main, ["--engine=ctranslate2", f"--model_dir={ct2_export}", "--quiet",
                                        f"--decode_from_file={source}", f"--decode_to_file={target}", *flags]) == 0
        # (Lines end with "\n"; str.splitlines would also split at characters such as U+001C.)
        return target.read_text(encoding="utf-8")

    return sample


def test_sampling_topk_1_writes_the_greedy_outputs_byte_for_byte(sampled):
    greedy = sampled("greedy", "--beam_size=1")
    assert sampled("topk1", "--sampling=topk:1", "--temperature=3", "--seed=7") == greedy
    assert len(set(greedy.split("\n"))) > 15 and len(greedy) > 250  # long, varied outputs, not empty ones
    # Two samples per input: the greedy output twice (CTranslate2 searches each source twice).
    twice = sampled("topk1_twice", "--sampling=topk:1", "--nbest=2").split("\n")[:-1]
    twice = [line.split("\t", 1)[1] for line in twice]
    assert twice[::2] == twice[1::2] == greedy.split("\n")[:-1]


def test_the_same_sampling_command_gives_the_same_bytes_and_another_seed_other_samples(sampled):
    flags = ("--sampling=topp:0.9", "--temperature=1.5", "--nbest=3", "--seed=3")
    first = sampled("first", *flags)
    assert sampled("again", *flags) == first
    rows = [line.split("\t", 1) for line in first.split("\n")[:-1]]
    assert len(rows) == 3 * 24 and rows[60:63] == [["0.000000", ""]] * 3  # the empty line: nothing to sample
    per_input = [rows[i : i + 3] for i in range(0, len(rows), 3) if rows[i][1]]
    # A barely trained model's flat distribution: three different samples per input, most likely first.
    assert all(len({text for _, text in samples}) == 3 for samples in per_input)
    assert all([float(score) for score, _ in samples] == sorted((float(s) for s, _ in samples), reverse=True)
               for samples in per_input)
    other_seed = sampled("other_seed", *flags[:-1], "--seed=4").split("\n")
    assert sum(a != b for a, b in zip(first.split("\n"), other_seed)) > 60
    large_k = sampled("large_k", "--sampling=topk:1000000", "--temperature=1.5", "--seed=3").split("\n")
    assert sum(a != b for a, b in zip(sampled("greedy", "--beam_size=1").split("\n"), large_k)) > 20


def test_sample_scores_are_their_log_probabilities_as_the_tensorflow_scorer_gives_them(ct2_export, serving_run,
                                                                                        sources):
    text_decoder = ctranslate2_jobs.export_decoder(
        str(ct2_export), sampling=SamplingSettings("topk:5", temperature=0.7, seed=1), nbest=2)
    vocabulary = text_decoder.vocabularies.source
    ids = [vocabulary.encode(text) + [EOS_ID] for text in sources[300:320]]
    results = text_decoder.search(ids)
    pairs = [(source, sample, score) for source, samples in zip(ids, results) for sample, score in samples]
    scored = jobs.run_scorer(str(serving_run)).scorer([p[0] for p in pairs], [p[1] for p in pairs])
    assert max(abs(log_prob - score) for (log_prob, _, _), (_, _, score) in zip(scored, pairs)) < 1e-4
    # Each sample runs to EOS or to its own maximum length (source + EXTRA_LENGTH), however long the batch's
    # longest source: most of this model's samples are cut there.
    limits = [len(source) + EXTRA_LENGTH for source, _, _ in pairs]
    assert all(len(sample) == limit or sample[-1] == EOS_ID for (_, sample, _), limit in zip(pairs, limits))
    assert sum(len(sample) == limit < max(limits) for (_, sample, _), limit in zip(pairs, limits)) > 10


def test_missing_ctranslate2_is_a_one_line_error_and_the_package_works_without_it(serving_run, tmp_path):
    refuse = ("import importlib.abc, sys\n"
              "class Refuse(importlib.abc.MetaPathFinder):\n"
              "    def find_spec(self, name, path=None, target=None):\n"
              "        if name.split('.')[0] == 'ctranslate2': raise ModuleNotFoundError(name=name)\n"
              "sys.meta_path.insert(0, Refuse())\n")
    program = refuse + (
        "import t2t_repro.cli.decoder, t2t_repro.cli.serve, t2t_repro.run.jobs, t2t_repro.serve.served_model\n"
        "from t2t_repro.cli import exporter\n"
        f"sys.argv = ['t2t-repro-exporter', '--output_dir={serving_run}', '--format=ctranslate2',"
        f" '--export_dir={tmp_path / 'export'}']\n"
        "exporter.main()\n"
    )
    completed = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300,
                               env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert completed.returncode == 2, completed.stderr
    # (TensorFlow's start-up lines come first here: the program imports it before the command line runs.)
    assert "Traceback" not in completed.stderr
    assert completed.stderr.strip().splitlines()[-1] == (
        't2t-repro-exporter: error: this needs CTranslate2, which is not installed: pip install '
        '"t2t-repro[ctranslate2]" (or pip install ctranslate2)')
    assert not (tmp_path / "export").exists()


@pytest.mark.parametrize("argv, message", [
    (["exporter", "--output_dir={run}", "--quantization=int8"], "--quantization=int8 applies to --format=ctranslate2"),
    (["exporter", "--output_dir={run}", "--format=ctranslate2", "--quantization=int4"], "invalid choice: 'int4'"),
    (["exporter", "--output_dir={run}", "--format=onnx"], "invalid choice: 'onnx'"),
    (["decoder", "--engine=ctranslate2", "--model_dir={export}", "--checkpoint={run}/checkpoints/ckpt-1"],
     "--checkpoint is for the tensorflow engine"),
    (["decoder", "--model_dir={export}"], "--model_dir is for --engine=ctranslate2"),
    (["decoder", "--engine=ctranslate2"], "needs --model_dir"),
    (["decoder", "--engine=ctranslate2", "--model_dir={run}/export_ctranslate2", "--extra_length=60"],
     "max_input_length + extra_length = 92"),
    (["decoder", "--engine=ctranslate2", "--model_dir={saved_model}"], "is not a CTranslate2 export"),
    (["decoder", "--output_dir={run}", "--threads=2"], "--threads=2 applies to --engine=ctranslate2 only"),
    (["decoder", "--output_dir={run}", "--decode_to_file={tmp}/out.txt"], "go together"),
    (["serve", "--engine=ctranslate2", "--model_dir={saved_model_base}"], "is not a CTranslate2 export"),
    (["serve", "--model_dir={export_base}"], "is a CTranslate2 export: serve it with --engine=ctranslate2"),
    (["serve", "--engine=ctranslate2", "--model_dir={export_base}", "--max_input_tokens=50"],
     "reads sources of at most 38 tokens"),
])
def test_errors_are_one_line(ct2_export, exported_model, serving_run, tmp_path, capsys, argv, message):
    from t2t_repro.cli import serve

    names = {"exporter": exporter, "decoder": decoder, "serve": serve}
    flags = [flag.format(run=serving_run, export=ct2_export, export_base=ct2_export.parent, tmp=tmp_path,
                         saved_model=exported_model, saved_model_base=exported_model.parent) for flag in argv[1:]]
    assert run_main(names[argv[0]]._main, flags + ["--port=0"] * (argv[0] == "serve")) == 2
    stderr = capsys.readouterr().err
    assert stderr.strip().count("\n") == 0 and message in stderr, stderr


def test_a_model_ctranslate2_cannot_express_is_refused_naming_the_setting(serving_run, tmp_path, capsys):
    from t2t_repro.hparams_type import HParams

    assert ctranslate2_export.check_exportable(HParams()) is None
    with pytest.raises(UserError, match="d_k=16 with d_v=64"):
        ctranslate2_export.check_exportable(HParams(d_k=16, d_v=64))
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    for name in ("run.json", "hparams.json"):
        (run / name).write_text((serving_run / name).read_text())
    hparams = json.loads((run / "hparams.json").read_text())
    (run / "hparams.json").write_text(json.dumps(dict(hparams, d_v=8)))
    assert run_main(exporter._main, [f"--output_dir={run}", "--format=ctranslate2"]) == 2
    stderr = capsys.readouterr().err
    assert stderr.strip().count("\n") == 0 and "cannot be exported to CTranslate2: d_k=16 with d_v=8" in stderr
    assert not (run / "export_ctranslate2").exists()


def test_decode_benchmark_compares_ctranslate2_with_the_tensorflow_search_on_equal_work():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    completed = subprocess.run(
        [sys.executable, os.path.join(repo, "tools", "benchmark.py"), "--suite=decode", "--hparams=transformer_tiny",
         "--hparams_overrides=num_layers=1,d_model=32,d_ff=64,num_heads=2,d_k=16,d_v=16", "--engine=ctranslate2",
         "--quantization=int8", "--peer=tensorflow", "--decode_batch=2", "--src_len=4", "--output_length=8",
         "--warmup=0", "--repeats=2", "--json"],
        capture_output=True, text=True, timeout=600, cwd=repo, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert completed.returncode == 0, completed.stderr
    (line,) = map(json.loads, completed.stdout.splitlines())
    assert line["metric"] == "decode_tokens_per_s_ctranslate2" and line["peer"] == "tensorflow"
    assert line["ratio"] == pytest.approx(line["value"] / line["peer_value"])
    config = line["config"]
    assert (config["quantization"], config["output_length"], config["beam_size"]) == ("int8", 8, 4)
    assert config["target"] == ">= 1.7" and isinstance(config["meets_target"], bool)

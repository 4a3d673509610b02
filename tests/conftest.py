"""Shared pytest set-up: quiet TensorFlow, the Keras TensorFlow backend, and two logical CPU devices."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["KERAS_BACKEND"] = "tensorflow"

import t2t_repro  # noqa: E402,F401  (its TensorFlow CPU defaults, set before TensorFlow loads)

import tensorflow as tf  # noqa: E402


# Multi-device tests run on two logical CPUs; this must happen before TensorFlow initializes its devices.
_cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(_cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)


# ---------------------------------------------------------------------------------------------------------------
# A tiny parallel corpus and a tiny trained run, shared by the trainer, decoder and export tests.

import contextlib  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

_EN = "the a cat dog man woman child sees eats likes finds house tree car big small red old new runs".split()
_DE = "die eine Katze Hund Mann Frau Kind sieht isst mag findet Haus Baum Auto gross klein rot alt neu rennt".split()
_LEXICON = dict(zip(_EN, _DE))

# Flags of a run small enough to train in seconds: the real wmt_ende problem reading local text files.
TINY_RUN_FLAGS = [
    "--problem=wmt_ende",
    "--hparams=transformer_tiny",
    "--hparams_overrides=max_length=32,warmup_steps=20,num_layers=1,d_model=32,d_ff=64,num_heads=2,d_k=16,d_v=16,"
    "dropout=0.1",  # dropout on, so that resumed and multi-device runs must reproduce its random streams
    "--batch_tokens=256",
    "--log_steps=5",
    "--eval_decode_sentences=4",
]


def write_parallel_corpus(directory, sizes=(("train", 300), ("dev", 20), ("test", 20)), seed=0,
                          languages=("en", "de")):
    """Line-aligned {split}.<source> / {split}.<target> files (`languages`, by default en and de): word-by-word
    translation with the last two words swapped."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for split, count in sizes:
        english, german = [], []
        for _ in range(count):
            words = [rng.choice(_EN) for _ in range(rng.randint(3, 8))]
            translated = [_LEXICON[w] for w in words]
            translated[-2:] = translated[-2:][::-1]
            english.append(" ".join(words))
            german.append(" ".join(translated))
        (directory / f"{split}.{languages[0]}").write_text("\n".join(english) + "\n", encoding="utf-8")
        (directory / f"{split}.{languages[1]}").write_text("\n".join(german) + "\n", encoding="utf-8")
    return directory


def run_cli(module, *args, timeout=600, **kwargs):
    """Runs `python -m t2t_repro.cli.<module> args...` (the console script's own main) and returns the result."""
    return subprocess.run(
        [sys.executable, "-m", f"t2t_repro.cli.{module}", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, **kwargs,
    )


def run_cli_in_process(module, *args):
    """As `run_cli` (same exit status, stdout and stderr), but runs the command's `_main` in this process, which
    spares a TensorFlow start-up of seconds."""
    from t2t_repro.cli.common import run_main

    main = importlib.import_module(f"t2t_repro.cli.{module}")._main
    argv = [str(arg) for arg in args]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        status = run_main(main, argv)
    return subprocess.CompletedProcess([module, *argv], status, stdout.getvalue(), stderr.getvalue())


def decode_with_cli(output_dir, source, target):
    """The lines t2t-repro-decoder (a short search: extra_length 3) writes into `target` for the file `source`."""
    result = run_cli("decoder", f"--output_dir={output_dir}", f"--decode_from_file={source}",
                     f"--decode_to_file={target}", "--extra_length=3", "--quiet")
    assert result.returncode == 0, result.stderr
    return target.read_text(encoding="utf-8").splitlines()


def copy_run(run, directory):
    """A copy of the output_dir `run` at directory/run, for a test to damage or extend."""
    copy = directory / "run"
    shutil.copytree(run, copy)
    return copy


@pytest.fixture(scope="session")
def parallel_text_dir(tmp_path_factory):
    return write_parallel_corpus(tmp_path_factory.mktemp("parallel_text"))


@pytest.fixture(scope="session")
def tiny_data_dir(tmp_path_factory, parallel_text_dir):
    """wmt_ende data generated from the tiny local corpus."""
    data_dir = tmp_path_factory.mktemp("data")
    result = run_cli_in_process("datagen", "--problem=wmt_ende", f"--data_dir={data_dir}",
                                f"--manual_dir={parallel_text_dir}")
    assert result.returncode == 0, result.stderr
    return data_dir


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory, tiny_data_dir):
    """The output_dir of a finished tiny run: checkpoints, averaged weights, test outputs and report.json."""
    output_dir = tmp_path_factory.mktemp("run") / "out"
    result = run_cli_in_process(
        "trainer", *TINY_RUN_FLAGS, "--train_steps=12", "--checkpoint_steps=4", "--eval_steps=6",
        f"--data_dir={tiny_data_dir}", f"--output_dir={output_dir}",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return output_dir


@pytest.fixture(scope="session")
def serving_run(tmp_path_factory, tiny_data_dir):
    """The output_dir of a tiny run of one training step, no averaging, no test decoding (its checkpoint is
    checkpoints/ckpt-1). Its weights are still close to their random initialisation, so beam search seldom
    picks EOS and outputs run to their maximum length: long, varied outputs (byte pieces included) that make
    comparisons of decoders, exports and servers meaningful. (Tiny runs of a few hundred steps mostly emit EOS
    at once, and which of them do changes with any change to training.)"""
    output_dir = tmp_path_factory.mktemp("serving_run") / "out"
    result = run_cli_in_process(
        "trainer", *TINY_RUN_FLAGS, "--train_steps=1", "--eval_steps=1000",
        "--eval_decode_sentences=0", "--skip_average", "--skip_test", "--skip_export",
        f"--data_dir={tiny_data_dir}", f"--output_dir={output_dir}",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return output_dir


@pytest.fixture(scope="session")
def exported_model(tmp_path_factory, serving_run):
    """The version directory (export_dir/1) of a SavedModel exported from `serving_run` by t2t-repro-exporter
    (run in this process): the problem's beam 4 and alpha 0.6, with extra_length 6 to keep decoding short."""
    from t2t_repro.cli import exporter
    from t2t_repro.cli.common import run_main

    export_dir = tmp_path_factory.mktemp("export")
    status = run_main(exporter._main, [f"--output_dir={serving_run}", f"--export_dir={export_dir}", "--extra_length=6"])
    assert status == 0
    return export_dir / "1"


# ---------------------------------------------------------------------------------------------------------------
# A tiny Penn Treebank sample in NLTK's layout (made here: never the real sample's trees), and a parsing run on it.

PTB_TEMPLATES = [
    "( (S (NP-SBJ (NNP {a})) (VP (VBZ sees) (NP (DT the) (NN {b}))) (. .)) )",
    "( (S (NP-SBJ-1 (DT The) (NN {b})) (VP (VBD wanted) (S (NP-SBJ (-NONE- *-1)) (VP (TO to) (VP (VB go)))))"
    " (. .)) )",
    "( (S (`` ``) (NP-SBJ (PRP We)) (VP (VBD gave) (PRT (RP up)) (PP-LOC (IN in) (NP (NNP {a})))) (, ,)"
    " ('' '') (NP (NNP {a}) (POS 's)) (. .)) )",
]
PTB_WORDS = ["Mary", "John", "Paris", "Kim", "Ruth", "dog", "plan", "river", "bank", "idea", "stock", "yield",
             "market", "price", "trader", "bond", "index", "share", "board", "chief"]
PTB_SAMPLE_FILES = 12  # 3 trees each; the split below: 24 train, 6 dev, 6 test trees
PTB_SAMPLE_SPLIT = "train_files=1-8,dev_files=9-10,test_files=11-12,source_vocab_size=400"


def ptb_sample_file(number):
    """The text of file wsj_<number>.mrg of the tiny sample: 3 trees of the templates."""
    trees = [PTB_TEMPLATES[(number + i) % 3].format(a=PTB_WORDS[(number * 7 + i) % 20],
                                                    b=PTB_WORDS[(number * 3 + i * 5) % 20]) for i in range(3)]
    return "\n".join(trees) + "\n"


def write_ptb_sample_zip(directory, files=PTB_SAMPLE_FILES):
    """directory/treebank.zip with members treebank/combined/wsj_NNNN.mrg, as NLTK distributes its sample."""
    import zipfile

    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(directory / "treebank.zip", "w") as archive:
        archive.writestr("treebank/combined/README", "not a tree file\n")
        for number in range(1, files + 1):
            archive.writestr(f"treebank/combined/wsj_{number:04d}.mrg", ptb_sample_file(number))
    return directory


@pytest.fixture(scope="session")
def parsing_run(tmp_path_factory):
    """The output_dir of a tiny ptb_sample_parsing run on the tiny sample, trained until it parses some of the
    templates' sentences unconstrained, not all (no averaging, test decoding or export), with the part-of-speech
    tags in its trees (target_tags=keep: the tag slots the constraint's tests read)."""
    base = tmp_path_factory.mktemp("parsing_run")
    sample = write_ptb_sample_zip(base / "sample")
    result = run_cli(
        "trainer", "--problem=ptb_sample_parsing", f"--problem_overrides={PTB_SAMPLE_SPLIT},target_tags=keep",
        "--hparams=transformer_tiny", "--hparams_overrides=max_length=64,warmup_steps=30,num_layers=1,d_model=64,"
        "d_ff=128,num_heads=2,d_k=32,d_v=32", "--batch_tokens=256", "--train_steps=200", "--eval_decode_sentences=0",
        "--skip_average", "--skip_test", "--skip_export", f"--manual_dir={sample}", f"--data_dir={base / 'data'}",
        f"--output_dir={base / 'out'}",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return base / "out"

"""t2t-repro against OpenNMT-py 3.5.1 on the real Multi30K EN-DE (task 1): test2016 BLEU at equal steps,
training target tokens per second, test2016 decoding sentences per second (float32, TensorFlow against PyTorch)
and the same decode in CTranslate2 int8, each toolkit's own export.

Both read the same pieces: the t2t-repro problem's SentencePiece model (multi30k_ende's 8,000-piece BPE, shared by
the two sides: its data and run made with `--problem_overrides=shared_vocabulary=true`, the problem's default being
a vocabulary for each side) encodes the release's raw text; OpenNMT-py gets one vocabulary of the model's pieces for
both sides, tied source, target and generator embeddings, and training pairs of at most 128 pieces a side. Its
recipe has transformer_small's values, read from the t2t-repro in --t2t_bin (`t2t-repro-trainer
--hparams=transformer_small --hparams_help`), so the two stay in step: 3+3 layers, d_model 256, d_ff 1024, 4 heads,
dropout 0.2 (--dropout; most comparisons published on 2026-11-27 and 28 ran both toolkits at 0.3, the set's value
then), no attention dropout, sinusoidal positions, label smoothing 0.1, Adam beta2 0.98, noam decay, 1,000 warm-up
steps, 2,048-token batches normalized by tokens, no clipping, Glorot initialization, a checkpoint every 175 steps,
the last 5 averaged; beam 4, GNMT length penalty alpha 0.6, 32 sentences a batch. --learning_rate 2.0 is
OpenNMT-py's documented Transformer setting, 1.0 exactly t2t-repro's schedule. Still different: OpenNMT-py 3.5's
Transformer is pre-norm (transformer_small post-norm, as the paper); its `dropout` also drops the feed-forward
layer's inner activations (transformer_small's relu_dropout is 0, and OpenNMT-py has no separate setting); Adam
epsilon 1e-8 (t2t-repro 1e-9); token batches count max(source, target) padded tokens (t2t-repro each side); outputs
of at most 250 tokens (t2t-repro: source length + 50); no dev evaluation while training.

Install the peer, CPU only (the exact torch version takes a CPU wheel; OpenNMT-py's torch<2.3 pin is skipped):

    python3 -m venv venv-onmt
    venv-onmt/bin/pip install torch==2.13.0
    venv-onmt/bin/pip install --no-deps OpenNMT-py==3.5.1
    venv-onmt/bin/pip install numpy configargparse "ctranslate2>=4,<5" "tensorboard>=2.3" flask waitress \
        "pyonmttok>=1.37,<2" pyyaml sacrebleu rapidfuzz pyahocorasick six sentencepiece spacy fasttext-wheel

The steps, run with that venv's python; t2t-repro installed in VENV, its data in DATA_DIR and its run in RUN, both
with one shared vocabulary (`t2t-repro-trainer --problem=multi30k_ende --problem_overrides=shared_vocabulary=true
--hparams=transformer_small --manual_dir=MULTI30K --data_dir=DATA_DIR --output_dir=RUN --keep_checkpoints=40`):

    P="venv-onmt/bin/python tools/benchmarks/opennmt_py.py --work=W --onmt_bin=venv-onmt/bin --t2t_bin=VENV/bin"
    $P prepare --manual_dir=MULTI30K --vocab_model=DATA_DIR/multi30k_ende/vocab.model
    $P --threads=1 train --name=lr2 --learning_rate=2.0 --train_steps=1750
    $P --threads=1 train --name=lr1 --learning_rate=1.0 --train_steps=1750  # this project's schedule
    $P --threads=1 train --name=lr2 --train_steps=3500 --train_from=W/lr2/model_step_1750.pt  # optimizer kept
    $P decode --name=lr2 --step=1750 --average=5         # --average=1: that checkpoint alone
    $P t2t_decode --run_dir=RUN --step=1750 --average=5  # the run's checkpoints, decoded and scored the same way
    $P speed --run_dir=RUN --data_dir=DATA_DIR --manual_dir=MULTI30K --name=lr2 --step=1750 --what=train

Each step prints its measurements as a JSON line, also appended to W/results.jsonl; W/NAME/checkpoint_times.json
has the seconds from the start of onmt_train at which each checkpoint appeared. OpenNMT-py 3.5 loads its
checkpoints with torch.load, which newer torch limits to weights unless TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1.
"""

import argparse
import ast
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

SPLITS = {"train": "train", "val": "val", "test": "test_2016_flickr"}
MAX_PIECES = 128
PIECE_SPECIALS = ("<pad>", "</s>", "<unk>", "<s>")  # OpenNMT-py adds its own
DECODE = dict(beam_size=4, alpha=0.6, batch_size=32)
SET = "transformer_small"


MADE_HERE = ".made-by-benchmark"  # marks the directories this harness made, which it alone may remove


def own_directory(path):
    """Creates `path` (parents too) marked as this harness's."""
    Path(path).mkdir(parents=True, exist_ok=True)
    (Path(path) / MADE_HERE).touch()


def remove_own(path, sign=MADE_HERE):
    """Removes the directory `path` for a fresh measurement, only when it holds `sign` (this harness's marker, or
    the file by which the tool that made it is known); anything else there ends the harness in one line."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not (path / sign).exists()):
        sys.exit(f"{path} was not made by this benchmark (no {sign} in it): it is left as it is; move it away "
                 "or give another --work")
    shutil.rmtree(path, ignore_errors=True)


def record(work, result):
    """Prints one measurement as a JSON line and appends it to WORK/results.jsonl."""
    line = json.dumps(result, sort_keys=True)
    print(line, flush=True)
    with open(Path(work) / "results.jsonl", "a") as out:
        out.write(line + "\n")


def environment(threads):
    return dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
                TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1")


def run(command, threads, log_file=None):
    """Runs `command`, stdout and stderr into `log_file` if given; returns (seconds, combined output)."""
    print("$ " + " ".join(map(str, command)), file=sys.stderr, flush=True)
    start = time.perf_counter()
    done = subprocess.run(list(map(str, command)), env=environment(threads), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - start
    if log_file:
        Path(log_file).write_text(done.stdout)
    if done.returncode:
        sys.exit(f"failed ({done.returncode}): {' '.join(map(str, command))}\n{done.stdout[-3000:]}")
    return seconds, done.stdout


def t2t_hparams(args, name=SET):
    """The set `name`'s values as the installed t2t-repro lists them (`--hparams_help`): name -> value."""
    _, output = run([Path(args.t2t_bin) / "t2t-repro-trainer", f"--hparams={name}", "--hparams_help"], args.threads)
    values = {}
    for fields in (line.split(maxsplit=2) for line in output.splitlines()):
        try:
            values[fields[0]] = ast.literal_eval(fields[1])  # each line: name, value (a Python literal), help
        except (IndexError, ValueError, SyntaxError):
            continue  # not a setting's line
    return values


def read_lines(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def release_file(manual_dir, split, lang):
    path = Path(manual_dir) / f"{SPLITS[split]}.{lang}.gz"
    return path if path.exists() else path.with_suffix("")


def write_lines(path, lines):
    Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


# Steps ------------------------------------------------------------------------------------------------------------


def prepare(args):
    """Piece files of the release's text, the shared vocabulary, the raw test source and reference."""
    import sentencepiece

    data = Path(args.work) / "data"
    if not Path(args.vocab_model).is_file():
        sys.exit(f"--vocab_model={args.vocab_model}: no such file; the data of multi30k_ende with one shared "
                 "vocabulary (--problem_overrides=shared_vocabulary=true) has DATA_DIR/multi30k_ende/vocab.model")
    data.mkdir(parents=True, exist_ok=True)
    shutil.copy(args.vocab_model, data / "vocab.model")
    model = sentencepiece.SentencePieceProcessor(model_file=str(data / "vocab.model"))
    counts = {}
    for split in SPLITS:
        raw = {lang: read_lines(release_file(args.manual_dir, split, lang)) for lang in ("en", "de")}
        pieces = {lang: [" ".join(model.encode(line, out_type=str)) for line in raw[lang]] for lang in raw}
        keep = range(len(raw["en"]))
        if split == "train":
            keep = [i for i in keep if max(len(pieces[lang][i].split()) for lang in pieces) <= MAX_PIECES]
        for lang in raw:
            write_lines(data / f"{split}.{lang}.sp", [pieces[lang][i] for i in keep])
            write_lines(data / f"{split}.{lang}", [raw[lang][i] for i in keep])
        counts[split] = len(keep)
    vocabulary = [model.id_to_piece(i) for i in range(model.get_piece_size())]
    write_lines(data / "vocab.txt", [piece for piece in vocabulary if piece not in PIECE_SPECIALS])
    record(args.work, {"step": "prepare", "pairs": counts, "pieces": len(vocabulary)})


def train_config(args, run_dir, small):
    """OpenNMT-py's configuration with `small`'s (transformer_small's) shape and schedule."""
    data = Path(args.work) / "data"
    dropout = small["dropout"] if args.dropout is None else args.dropout
    return {
        "src_vocab": str(data / "vocab.txt"), "tgt_vocab": str(data / "vocab.txt"), "share_vocab": True,
        "src_vocab_size": 10000, "tgt_vocab_size": 10000, "vocab_size_multiple": 1,
        "data": {"train": {"path_src": str(data / "train.en.sp"), "path_tgt": str(data / "train.de.sp")}},
        "save_model": str(run_dir / "model"), "save_checkpoint_steps": 175, "keep_checkpoint": -1,
        "train_steps": args.train_steps, "valid_steps": 10 ** 9, "report_every": 25,
        "seed": args.seed, "num_workers": 1, "world_size": 1, "gpu_ranks": [], "bucket_size": 32768,
        "encoder_type": "transformer", "decoder_type": "transformer", "enc_layers": small["num_layers"],
        "dec_layers": small["num_layers"], "hidden_size": small["d_model"], "word_vec_size": small["d_model"],
        "heads": small["num_heads"], "transformer_ff": small["d_ff"], "add_ffnbias": True,
        "position_encoding": True, "share_embeddings": True, "share_decoder_embeddings": True,
        "dropout": [dropout], "attention_dropout": [small["attention_dropout"]],
        "label_smoothing": small["label_smoothing"], "optim": "adam", "adam_beta1": small["adam_beta1"],
        "adam_beta2": small["adam_beta2"], "decay_method": "noam", "warmup_steps": small["warmup_steps"],
        "learning_rate": args.learning_rate, "max_grad_norm": 0.0, "param_init": 0.0, "param_init_glorot": True,
        "batch_type": "tokens", "batch_size": small["batch_tokens"], "normalization": "tokens", "accum_count": [1],
        "model_dtype": "fp32",
    }


def train(args, config=None, launcher=None, extra=None):
    """onmt_train (or `launcher`, given "-config FILE") on train_config's `config`, noting the wall time (from its
    start) at which each checkpoint appears; `extra(run_dir)` gives fields to add to the result."""
    import yaml

    run_dir = Path(args.work) / args.name
    own_directory(run_dir)
    config = config or train_config(args, run_dir, t2t_hparams(args))
    if args.train_from:
        config["train_from"] = args.train_from
    tag = f"to{args.train_steps}"
    (run_dir / f"config_{tag}.yaml").write_text(yaml.safe_dump(config))
    times_file = run_dir / "checkpoint_times.json"
    times = json.loads(times_file.read_text()) if times_file.exists() else {}
    offset = max(times.values()) if args.train_from and times else 0.0
    command = [*(launcher or [Path(args.onmt_bin) / "onmt_train"]), "-config", run_dir / f"config_{tag}.yaml"]
    print("$ " + " ".join(map(str, command)), file=sys.stderr, flush=True)
    with open(run_dir / f"train_{tag}.log", "w") as out:
        start = time.time()
        process = subprocess.Popen(list(map(str, command)), env=environment(args.threads), stdout=out,
                                   stderr=subprocess.STDOUT)
        while process.poll() is None:
            time.sleep(1.0)
            for path in run_dir.glob("model_step_*.pt"):
                step = path.stem.rsplit("_", 1)[1]
                times.setdefault(step, offset + time.time() - start)
            times_file.write_text(json.dumps(times, indent=1))
    seconds = time.time() - start
    if process.returncode:
        sys.exit(f"onmt_train failed ({process.returncode}): see {run_dir}/train_{tag}.log")
    speed = log_tokens_per_second(run_dir / f"train_{tag}.log")
    record(args.work, {"step": "train", "name": args.name, "learning_rate": args.learning_rate,
                       "train_steps": args.train_steps, "seconds": seconds, "threads": args.threads,
                       "target_tokens_per_s": speed, **(extra(run_dir) if extra else {})})


_ONMT_REPORT = re.compile(r"Step (\d+)/\s*\d+;.* (\d+)/\s*(\d+) tok/s;\s+(\d+) sec")
_T2T_REPORT = re.compile(r"step (\d+)/\d+ .* ([\d,]+) target tokens/s")


def log_tokens_per_second(log_file, skip_first=1):
    """Target tokens per second of onmt_train: the mean of its reports' rates, the first window(s) left out."""
    rates = [int(m[3]) for m in _ONMT_REPORT.finditer(Path(log_file).read_text())][skip_first:]
    return sum(rates) / len(rates) if rates else None


def window(step, average):
    """The checkpoint steps averaged at `step`: the last `average` of those every 175 steps (fewer early on)."""
    return [step - 175 * i for i in range(average) if step - 175 * i > 0][::-1]


def checkpoints(run_dir, step, average):
    return [Path(run_dir) / f"model_step_{s}.pt" for s in window(step, average)]


def averaged_model(args, name, step, average, models=None):
    run_dir = Path(args.work) / name
    models = models or checkpoints(run_dir, step, average)
    if len(models) == 1:
        return models[0]
    output = run_dir / f"average_{step}_{average}.pt"
    if not output.exists():
        run([Path(args.onmt_bin) / "onmt_average_models", "-models", *models, "-output", output], args.threads)
    return output


def translate_command(args, model, source, output, settings=DECODE, max_length=250):
    return [Path(args.onmt_bin) / "onmt_translate", "-model", model, "-src", source, "-output", output,
            "-beam_size", settings["beam_size"], "-length_penalty", "wu", "-alpha", settings["alpha"],
            "-batch_size", settings["batch_size"], "-batch_type", "sents", "-max_length", max_length,
            "-max_length_ratio", 0, "-report_time"]


def detokenize(args, pieces_file, text_file):
    import sentencepiece

    model = sentencepiece.SentencePieceProcessor(model_file=str(Path(args.work) / "data" / "vocab.model"))
    write_lines(text_file, [model.decode(line.split()) for line in read_lines(pieces_file)])


def bleu(args, hypothesis_file, metric="bleu"):
    """sacreBLEU's default (13a, cased) against the raw test2016 reference; metric="chrf": its chrF2."""
    import sacrebleu

    reference = read_lines(Path(args.work) / "data" / "test.de")
    score = sacrebleu.corpus_chrf if metric == "chrf" else sacrebleu.corpus_bleu
    return score(read_lines(hypothesis_file), [reference]).score


def translation_seconds(output):
    found = re.search(r"Total translation time \(s\): ([\d.]+)", output)
    return float(found[1]) if found else None


def decode(args):
    """OpenNMT-py: averages checkpoints, translates test2016, scores it."""
    model = averaged_model(args, args.name, args.step, args.average)
    out = Path(args.work) / args.name / f"test_{args.step}_{args.average}"
    data = Path(args.work) / "data"
    seconds, output = run(translate_command(args, model, data / "test.en.sp", f"{out}.sp"), args.threads,
                          f"{out}.log")
    detokenize(args, f"{out}.sp", f"{out}.de")
    times = json.loads((Path(args.work) / args.name / "checkpoint_times.json").read_text())
    record(args.work, {"step": "decode", "toolkit": "opennmt-py", "name": args.name, "checkpoint": args.step,
                       "average": args.average, "bleu": bleu(args, f"{out}.de"),
                       "chrf": bleu(args, f"{out}.de", "chrf"),
                       "train_wall_s": times.get(str(args.step)), "decode_s": seconds,
                       "translation_s": translation_seconds(output)})


def t2t_view(args, step, average):
    """A scratch output_dir holding the t2t-repro run's settings and (links to) `average` checkpoints ending at
    `step`, so that t2t-repro-avg-checkpoints averages exactly those without writing into the run."""
    view = Path(args.work) / "t2t" / f"run_{step}_{average}"
    (view / "checkpoints").mkdir(parents=True, exist_ok=True)
    run_dir = Path(args.run_dir)
    for name in ("hparams.json", "run.json"):
        shutil.copy(run_dir / name, view / name)
    steps = window(step, average)
    for s in steps:
        for source in (run_dir / "checkpoints").glob(f"ckpt-{s}.*"):
            target = view / "checkpoints" / source.name
            if not target.exists():
                target.symlink_to(source)
    state = "".join(f'all_model_checkpoint_paths: "ckpt-{s}"\n' for s in steps)
    (view / "checkpoints" / "checkpoint").write_text(f'model_checkpoint_path: "ckpt-{step}"\n' + state)
    return view


def t2t_checkpoint(args, step, average):
    """(output_dir, --checkpoint) of the t2t-repro model at `step`, averaged over `average` checkpoints."""
    if len(window(step, average)) == 1:
        return Path(args.run_dir), f"ckpt-{step}"
    view = t2t_view(args, step, average)
    if not (view / "averaged").exists():
        run([Path(args.t2t_bin) / "t2t-repro-avg-checkpoints", f"--output_dir={view}", f"--num_last={average}"],
            args.threads)
    return view, "averaged"


def t2t_decode_command(args, output_dir, checkpoint, output):
    data = Path(args.work) / "data"
    return [Path(args.t2t_bin) / "t2t-repro-decoder", f"--output_dir={output_dir}", f"--checkpoint={checkpoint}",
            f"--decode_from_file={data / 'test.en'}", f"--decode_to_file={output}", "--quiet",
            f"--beam_size={DECODE['beam_size']}", f"--alpha={DECODE['alpha']}",
            f"--batch_size={DECODE['batch_size']}"]


def t2t_decode(args):
    """t2t-repro: the run's checkpoints averaged (or one), test2016 decoded and scored the same way."""
    output_dir, checkpoint = t2t_checkpoint(args, args.step, args.average)
    out = Path(args.work) / "t2t" / f"test_{args.step}_{args.average}.de"
    out.parent.mkdir(parents=True, exist_ok=True)
    seconds, _ = run(t2t_decode_command(args, output_dir, checkpoint, out), args.threads)
    run_dir = Path(args.run_dir)  # its run.json is written as training starts, after the data checks
    start = (run_dir / "run.json").stat().st_mtime
    wall = (run_dir / "checkpoints" / f"ckpt-{args.step}.index").stat().st_mtime - start
    record(args.work, {"step": "decode", "toolkit": "t2t-repro", "checkpoint": args.step, "average": args.average,
                       "bleu": bleu(args, out), "chrf": bleu(args, out, "chrf"), "decode_s": seconds,
                       "train_wall_s": wall})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="directory for data, runs and results")
    parser.add_argument("--onmt_bin", default=str(Path(sys.executable).parent), help="OpenNMT-py's venv bin")
    parser.add_argument("--t2t_bin", default="", help="bin directory of a venv with t2t-repro installed")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of every tool")
    steps = parser.add_subparsers(dest="command", required=True)
    sub = steps.add_parser("prepare")
    sub.add_argument("--manual_dir", required=True, help="the Multi30K release files")
    sub.add_argument("--vocab_model", required=True, help="the t2t-repro problem's SentencePiece model")
    sub = steps.add_parser("train")
    sub.add_argument("--name", required=True)
    sub.add_argument("--learning_rate", type=float, default=2.0)
    sub.add_argument("--train_steps", type=int, default=1750)
    sub.add_argument("--train_from", default=None, help="a checkpoint to continue (optimizer and step kept)")
    sub.add_argument("--seed", type=int, default=1234)
    sub.add_argument("--dropout", type=float, default=None,
                     help="default: transformer_small's (0.2; 0.3 before 2026-11-28)")
    for name in ("decode", "t2t_decode", "speed"):
        sub = steps.add_parser(name)
        sub.add_argument("--name", default="lr2", help="the OpenNMT-py run")
        sub.add_argument("--step", type=int, default=1750)
        sub.add_argument("--average", type=int, default=5, help="checkpoints averaged, ending at --step")
        sub.add_argument("--run_dir", default="", help="the t2t-repro run's output_dir")
        sub.add_argument("--data_dir", default="", help="speed: the t2t-repro run's data_dir")
        sub.add_argument("--manual_dir", default="", help="speed: the Multi30K release files")
        sub.add_argument("--rounds", type=int, default=3)
        sub.add_argument("--what", default="train,decode,ctranslate2")
        sub.add_argument("--speed_steps", type=int, default=150, help="training steps timed per round")
    sub = steps.add_parser("ct2_translate")
    sub.add_argument("--model_dir", required=True)
    sub.add_argument("--output", required=True)
    args = parser.parse_args()
    Path(args.work).mkdir(parents=True, exist_ok=True)
    if args.command in ("speed", "ct2_translate"):
        import opennmt_py_speed

        step = getattr(opennmt_py_speed, args.command)
    else:
        step = {"prepare": prepare, "train": train, "decode": decode, "t2t_decode": t2t_decode}[args.command]
    step(args)


if __name__ == "__main__":
    main()

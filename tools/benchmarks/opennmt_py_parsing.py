"""t2t-repro against OpenNMT-py 3.5.1 on constituency parsing, ptb_sample_parsing with target_tags=words (the Penn
Treebank sample, the words themselves in the linearised tree): test EVALB F1, precision, recall and error
sentences after the same wall-clock training budget, and test decoding sentences per second at beam 21.

Both read the same pairs and the same pieces: `prepare` takes the problem's own (source, target) pairs (`raw_pairs`,
from the treebank in --manual_dir), encodes them with the shared 4,000-piece SentencePiece model of t2t-repro's data
(DATA_DIR/ptb_sample_parsing/vocab.model, the bracket tokens single pieces) and checks that the ids, EOS appended,
are exactly those of DATA_DIR's records for every split, and the dev and test texts exactly those of its pairs
files. OpenNMT-py gets one vocabulary of those pieces for both sides and tied source, target and generator
embeddings; training pairs of more than max_length - 1 pieces a side are left out, as t2t-repro drops those of more
than max_length ids with EOS. Its recipe is transformer_parsing_small's, read from the t2t-repro in --t2t_bin
(`t2t-repro-trainer --hparams=transformer_parsing_small --hparams_help`): transformer_small's shape (3+3 layers,
d_model 256, d_ff 1024, 4 heads, sinusoidal positions, no attention biases), dropout 0.1 (0.3 when the measured run
was made: --dropout=0.3 repeats it), attention dropout 0.1, label smoothing 0.1, Adam beta2 0.98, noam decay at
learning-rate factor 1.0 (the set's learning_rate_scale: t2t-repro's schedule exactly), 1,000 warm-up steps,
2,048-token batches normalized by tokens, no clipping, Glorot initialization, at most train_steps (3,000) updates.
`train` runs onmt_train with a training-time budget as t2t-repro's --max_train_minutes (OpenNMT-py has none): the
loop ends at the first update that ends after the budget, measured from the loop's first batch, and that step is
saved; checkpoints are written every train_steps / (4 x checkpoint_average_count) = 150 steps and whenever
--checkpoint_minutes passed since the last one, as t2t-repro's trainer does. The last 5 checkpoints are averaged;
decoding is section 6.3's (beam 21, GNMT length penalty alpha 0.3), 32 sentences a batch. `score` scores the
detokenised outputs exactly as t2t-repro scores its own test outputs: the problem's postprocess (delinearise onto
the source words, leaf_words) and its ParseF1Scorer, t2t-repro's EVALB with COLLINS.prm, writing the canonical
decoded and gold files (evalb.c or t2t-repro-evalb on them gives the same figures).

Still different, to state beside the figures: OpenNMT-py decodes without the tree constraint that t2t-repro
applies by default, so its outputs may be ill-formed: they are repaired onto the source words before EVALB (its
error sentences counted), and `score` also counts the outputs whose brackets do not match and those whose words
are not the source's (t2t-repro-decoder's --constrained_output=false decodes as OpenNMT-py does, for a like
comparison); every sentence's output may have -max_length = the longest test source in pieces + 1 + 300 tokens,
EOS not counted (OpenNMT-py has one limit per batch, not source length with EOS + 300 per sentence: no sentence
gets less room, shorter ones more); OpenNMT-py ranks hypotheses cut at that length with finished ones (t2t-repro
uses them only when none finished); 32 sentences a batch (t2t-repro: 1,024 padded source tokens). OpenNMT-py's
vocabulary is the 3,997 ordinary pieces and its own 4 specials, its generator has a bias and each pre-norm stack a
final layer norm: 6,549,665 parameters against 6,544,384. As with Multi30K (tools/benchmarks/opennmt_py.py):
OpenNMT-py 3.5's Transformer is pre-norm (t2t-repro post-norm, as the paper); its dropout also drops the
feed-forward layer's inner activations (relu_dropout 0 in t2t-repro); Adam epsilon 1e-8 (1e-9); token batches
count max(source, target) padded tokens (t2t-repro each side); its length pooling is its own (a bucket of 32,768
examples holds the whole train split; t2t-repro: buckets 5% apart in length); other seeds. t2t-repro's training
time also holds its dev evaluations (--eval_steps); OpenNMT-py evaluates nothing while training. Score both
systems with the same t2t-repro: its scorer is the one code that gives both figures.

Install the peer as tools/benchmarks/opennmt_py.py's docstring says (CPU torch 2.13.0, OpenNMT-py 3.5.1 without its
torch pin). The steps, run with that venv's python; `prepare` and `score` run themselves again with --t2t_bin's
python. t2t-repro installed in VENV, its data made in DATA_DIR (`t2t-repro-datagen --problem=ptb_sample_parsing
--problem_overrides=target_tags=words --manual_dir=PTB --data_dir=DATA_DIR`, PTB holding NLTK's treebank.zip):

    P="venv-onmt/bin/python tools/benchmarks/opennmt_py_parsing.py --work=W --onmt_bin=venv-onmt/bin --t2t_bin=VENV/bin"
    $P prepare --manual_dir=PTB --data_dir=DATA_DIR
    $P train --name=budget45 --max_train_minutes=45 --checkpoint_minutes=5
    $P average --name=budget45 --average=5     # the last 5 checkpoints (--step: those up to that step)
    $P decode --name=budget45 --average=5
    $P score --name=budget45 --average=5

Each step prints its measurements as a JSON line, also appended to W/results.jsonl. W/NAME/checkpoint_times.json
has the seconds from the start of onmt_train at which each checkpoint appeared, W/NAME/budget.json the seconds of
the training loop at which each was saved (t2t-repro's train_seconds). `decode --sentences=N` decodes the first N
test sentences only, and `score` scores those (a smoke run). Give the budgets of the t2t-repro run
(--max_train_minutes, --checkpoint_minutes) and its threads: on a host shared with other jobs use --threads=1,
where OpenNMT-py's 2 OpenMP threads decode dozens of times slower.
"""

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import opennmt_py as base
from opennmt_py import averaged_model, read_lines, record, run, t2t_hparams, translation_seconds, write_lines

PROBLEM, OVERRIDES, SET = "ptb_sample_parsing", "target_tags=words", "transformer_parsing_small"
SPLITS = ("train", "dev", "test")
DECODE = dict(beam_size=21, alpha=0.3, batch_size=32)  # section 6.3, t2t-repro's parsing defaults
EXTRA_LENGTH = 300  # t2t-repro: at most source length (EOS included) + 300 output tokens


def under_t2t_repro(args):
    """True when t2t_repro imports in this python; otherwise the command that ran (this script or another harness
    importing this function) is run again with --t2t_bin's python."""
    try:
        import t2t_repro  # noqa: F401
        return True
    except ImportError:
        if not args.t2t_bin:
            sys.exit(f"{args.command} needs t2t-repro: give --t2t_bin (the bin directory of its venv)")
        done = subprocess.run([str(Path(args.t2t_bin) / "python"), sys.argv[0], *sys.argv[1:]],
                              env=base.environment(args.threads))
        if done.returncode:
            sys.exit(done.returncode)
        return False


def problem():
    from t2t_repro import catalog

    return catalog.get_problem(PROBLEM, OVERRIDES)


def pieces_file(args, split, side):
    return Path(args.work) / "data" / f"{split}.{side}.sp"


# Steps ------------------------------------------------------------------------------------------------------------


def prepare(args):
    """Piece files of the problem's pairs, checked against DATA_DIR's records; the vocabulary; the test pairs."""
    if not under_t2t_repro(args):
        return
    import sentencepiece

    problem_dir, data = Path(args.data_dir) / PROBLEM, Path(args.work) / "data"
    if not (problem_dir / "vocab.model").is_file():
        sys.exit(f"--data_dir={args.data_dir}: no {PROBLEM}/vocab.model; make it with t2t-repro-datagen "
                 f"--problem={PROBLEM} --problem_overrides={OVERRIDES}")
    data.mkdir(parents=True, exist_ok=True)
    shutil.copy(problem_dir / "vocab.model", data / "vocab.model")
    model = sentencepiece.SentencePieceProcessor(model_file=str(data / "vocab.model"))
    parsing = problem()
    max_length = t2t_hparams(args, SET)["max_length"]
    counts, mismatches = {}, []
    for split in SPLITS:
        pairs = [(source.strip(), target.strip()) for source, target in
                 parsing.raw_pairs(split, None, args.manual_dir)]
        if split == "train":  # datagen drops train pairs with an empty side
            pairs = [pair for pair in pairs if pair[0] and pair[1]]
        else:
            shutil.copy(problem_dir / f"{split}.pairs.jsonl", data / f"{split}.pairs.jsonl")
            if pairs != parsing.text_pairs(split, args.data_dir):
                mismatches.append(f"{split} texts")
        ids = [(model.encode(source), model.encode(target)) for source, target in pairs]
        records = sorted((tuple(map(int, pair["inputs"])), tuple(map(int, pair["targets"])))
                         for pair in parsing.dataset(split, args.data_dir).as_numpy_iterator())
        if records != sorted((tuple(source + [1]), tuple(target + [1])) for source, target in ids):
            mismatches.append(f"{split} ids")
        keep = [i for i, (source, target) in enumerate(ids)
                if split != "train" or max(len(source), len(target)) + 1 <= max_length]
        for side, index in (("src", 0), ("tgt", 1)):
            write_lines(pieces_file(args, split, side), [" ".join(map(model.id_to_piece, ids[i][index])) for i in keep])
        counts[split] = {"pairs": len(pairs), "kept": len(keep)}
    if mismatches:
        sys.exit(f"the problem's pairs, encoded, differ from {problem_dir}'s ({', '.join(mismatches)}): it was made "
                 "with other settings, code or --manual_dir")
    specials = [i for i in range(model.get_piece_size()) if model.is_control(i) or model.is_unknown(i)]
    write_lines(data / "vocab.txt", [model.id_to_piece(i) for i in range(model.get_piece_size()) if i not in specials])
    record(args.work, {"step": "prepare", "problem": PROBLEM, "overrides": OVERRIDES, "splits": counts,
                       "pieces": model.get_piece_size(), "specials_left_to_opennmt_py": len(specials),
                       "train_max_length": max_length, "checked_against_records": True})


def train(args):
    """onmt_train through `onmt_train_budgeted`, on transformer_parsing_small's values; a fresh run directory."""
    hparams = t2t_hparams(args, SET)
    args.train_steps = args.train_steps or hparams["train_steps"]
    args.learning_rate = hparams["learning_rate_scale"] if args.learning_rate is None else args.learning_rate
    every = args.checkpoint_steps or max(1, args.train_steps // (4 * hparams["checkpoint_average_count"]))
    run_dir = Path(args.work) / args.name
    base.remove_own(run_dir)
    config = base.train_config(args, run_dir, hparams)
    config["data"] = {"train": {"path_src": str(pieces_file(args, "train", "src")),
                                "path_tgt": str(pieces_file(args, "train", "tgt"))}}
    config["save_checkpoint_steps"] = every
    launcher = [Path(args.onmt_bin) / "python", __file__, f"--work={args.work}", "onmt_train_budgeted",
                f"--max_train_minutes={args.max_train_minutes}", f"--checkpoint_minutes={args.checkpoint_minutes}"]

    def budget(directory):
        report = json.loads((directory / "budget.json").read_text())
        return {"max_train_minutes": args.max_train_minutes, "checkpoint_minutes": args.checkpoint_minutes,
                "checkpoint_steps": every, "hparams_set": SET, **report}

    base.train(args, config, launcher, budget)


def budgeted_batches(trainer, batches, minutes, checkpoint_minutes, state, clock=time.time):
    """OpenNMT-py's `batches` for `trainer` (its _accum_batches), ended at the first update that ends after
    `minutes` from the first batch asked for, a checkpoint written whenever `checkpoint_minutes` passed since the
    last one; state["saves"] gets each step saved -> seconds since that first batch."""
    saver, start = trainer.model_saver, clock()
    last, save_steps = start, saver.save

    def save(step, moving_average=None):
        nonlocal last
        fresh = step != saver.last_saved_step
        save_steps(step, moving_average=moving_average)
        last = clock()
        if fresh:
            state["saves"][str(step)] = round(last - start, 2)

    saver.save = save  # the loop's own saves (every --checkpoint_steps, and the last step) are timed too
    batches = iter(batches)
    while True:
        done = trainer.optim.training_step - 1  # updates made so far
        if done and clock() - start >= minutes * 60:
            state["stopped_by_budget"] = True
            return
        if done and clock() - last >= checkpoint_minutes * 60:
            save(done, moving_average=trainer.moving_average)
        item = next(batches, None)
        if item is None:
            return
        yield item


def onmt_train_budgeted(args):
    """onmt_train in this process, its training loop ended by the time budget and checkpointed by time as well as
    by steps (`budgeted_batches`; OpenNMT-py's loop saves the step it ends at); writes budget.json beside the
    configuration."""
    import onmt.trainer
    from onmt.bin.train import main as onmt_main

    state = {"saves": {}, "stopped_by_budget": False}
    accumulated = onmt.trainer.Trainer._accum_batches
    onmt.trainer.Trainer._accum_batches = lambda trainer, iterator: budgeted_batches(
        trainer, accumulated(trainer, iterator), args.max_train_minutes, args.checkpoint_minutes, state)
    sys.argv = ["onmt_train", "-config", args.config]
    onmt_main()
    steps = sorted(map(int, state["saves"]))
    report = {"last_step": steps[-1] if steps else None, "stopped_by_budget": state["stopped_by_budget"],
              "train_seconds": max(state["saves"].values(), default=None), "saved_at_train_seconds": state["saves"]}
    (Path(args.config).parent / "budget.json").write_text(json.dumps(report, indent=1))


def checkpoint_selection(args):
    """(step, checkpoint paths): the last --average checkpoints up to --step (default: the last one written)."""
    run_dir = Path(args.work) / args.name
    steps = sorted(int(path.stem.rsplit("_", 1)[1]) for path in run_dir.glob("model_step_*.pt"))
    step = args.step or (steps[-1] if steps else None)
    if step not in steps:
        sys.exit(f"{run_dir}: no checkpoint model_step_{step}.pt")
    chosen = [s for s in steps if s <= step][-args.average:]
    return step, [run_dir / f"model_step_{s}.pt" for s in chosen]


def average(args):
    step, models = checkpoint_selection(args)
    model = averaged_model(args, args.name, step, args.average, models)
    record(args.work, {"step": "average", "name": args.name, "checkpoint": step, "model": str(model),
                       "averaged_steps": [int(m.stem.rsplit("_", 1)[1]) for m in models]})
    return step, models, model


def output_stem(args, step, models):
    return Path(args.work) / args.name / f"test_{step}_{len(models)}"


def decode(args):
    """The averaged model on the test sources (beam 21, alpha 0.3), detokenised into OUT.txt."""
    step, models, model = average(args)
    out = output_stem(args, step, models)
    sources = read_lines(pieces_file(args, "test", "src"))[:args.sentences or None]
    write_lines(f"{out}.src.sp", sources)
    longest = max(len(line.split()) for line in sources) + 1 + EXTRA_LENGTH
    seconds, output = run(base.translate_command(args, model, f"{out}.src.sp", f"{out}.sp", DECODE, longest),
                          args.threads, f"{out}.log")
    base.detokenize(args, f"{out}.sp", f"{out}.txt")
    times = json.loads((Path(args.work) / args.name / "checkpoint_times.json").read_text())
    translate_s = translation_seconds(output)
    record(args.work, {"step": "decode", "toolkit": "opennmt-py", "name": args.name, "checkpoint": step,
                       "averaged": len(models), "sentences": len(sources), "output": f"{out}.txt",
                       "decode_s": seconds, "sentences_per_s": len(sources) / seconds, "translation_s": translate_s,
                       "translation_sentences_per_s": len(sources) / translate_s if translate_s else None,
                       "max_length": longest, "train_wall_s": times.get(str(step)), **DECODE})


def bracket_faults(hypothesis, source):
    """(brackets that do not nest or match, words other than the source's) of one linearised output."""
    from t2t_repro.data import ptb_tree

    stack, unmatched, words = [], 0, []
    for token in hypothesis.split():
        if ptb_tree.is_opener(token):
            stack.append(token[1:])
        elif ptb_tree.is_closer(token):
            unmatched += not stack or stack.pop() != token[1:]
        else:
            words.append(token)
    return unmatched + len(stack) > 0, words != source.split()


def score(args):
    """EVALB on the decoded test outputs exactly as t2t-repro scores its own (`t2t_repro.run.jobs`)."""
    if not under_t2t_repro(args):
        return
    parsing = problem()
    step, models = checkpoint_selection(args)
    out = output_stem(args, step, models)
    hypotheses = read_lines(f"{out}.txt")
    pairs = [tuple(json.loads(line)) for line in read_lines(Path(args.work) / "data" / "test.pairs.jsonl")]
    sources, references = [list(side) for side in zip(*pairs[:len(hypotheses)])]
    trees = [parsing.postprocess(hypothesis, source) for hypothesis, source in zip(hypotheses, sources)]
    files = parsing.scorer.evaluation_files(trees, references, sources)
    write_lines(f"{out}.decoded.txt", files["decoded"])
    write_lines(f"{out}.gold.txt", files["gold"])
    scores = parsing.evaluate(trees, references, sources)
    faults = [bracket_faults(hypothesis, source) for hypothesis, source in zip(hypotheses, sources)]
    record(args.work, {"step": "score", "toolkit": "opennmt-py", "name": args.name, "checkpoint": step,
                       "averaged": len(models), "sentences": len(hypotheses), "test_sentences": len(pairs),
                       **{key: scores.get(key) for key in ("f1", "precision", "recall", "error_sentences")},
                       "evalb": scores, "ill_formed_brackets": sum(bad for bad, _ in faults),
                       "words_not_the_source": sum(other for _, other in faults),
                       "decoded_file": f"{out}.decoded.txt", "gold_file": f"{out}.gold.txt"})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="directory for the pieces, the runs and results.jsonl")
    parser.add_argument("--onmt_bin", default=str(Path(sys.executable).parent), help="bin of OpenNMT-py's venv")
    parser.add_argument("--t2t_bin", default="", help="bin of t2t-repro's venv (its trainer and python)")
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of each tool and step")
    steps = parser.add_subparsers(dest="command", required=True)
    sub = steps.add_parser("prepare")
    sub.add_argument("--manual_dir", required=True, help="the directory holding NLTK's treebank.zip")
    sub.add_argument("--data_dir", required=True, help=f"t2t-repro's data_dir of {PROBLEM} with {OVERRIDES}")
    sub = steps.add_parser("train")
    sub.add_argument("--name", required=True)
    sub.add_argument("--max_train_minutes", type=float, required=True, help="training-time budget, as t2t-repro's")
    sub.add_argument("--checkpoint_minutes", type=float, default=10.0, help="also checkpoint this often")
    sub.add_argument("--checkpoint_steps", type=int, default=None, help="default: train_steps / (4 x 5)")
    sub.add_argument("--train_steps", type=int, default=None, help=f"default: {SET}'s")
    sub.add_argument("--learning_rate", type=float, default=None, help=f"noam factor; default {SET}'s (1.0)")
    sub.add_argument("--dropout", type=float, default=None, help=f"default: {SET}'s (0.1)")
    sub.add_argument("--seed", type=int, default=1234)
    sub.set_defaults(train_from=None)
    sub = steps.add_parser("onmt_train_budgeted", help="(run by train)")
    sub.add_argument("--max_train_minutes", type=float, required=True)
    sub.add_argument("--checkpoint_minutes", type=float, required=True)
    sub.add_argument("-config", dest="config", required=True)
    for name in ("average", "decode", "score"):
        sub = steps.add_parser(name)
        sub.add_argument("--name", required=True, help="the OpenNMT-py run")
        sub.add_argument("--step", type=int, default=None, help="the last checkpoint used (default: the last)")
        sub.add_argument("--average", type=int, default=5, help="checkpoints averaged, ending at --step")
        if name == "decode":
            sub.add_argument("--sentences", type=int, default=None, help="the first N test sentences (a smoke run)")
    args = parser.parse_args()
    Path(args.work).mkdir(parents=True, exist_ok=True)
    {"prepare": prepare, "train": train, "onmt_train_budgeted": onmt_train_budgeted, "average": average,
     "decode": decode, "score": score}[args.command](args)


if __name__ == "__main__":
    main()

"""t2t-repro's ptb_sample_parsing beside benepar 0.2.0 (the Berkeley Neural Parser) trained from scratch on the same
split: test EVALB F1, precision, recall, error sentences, complete match and parsing speed after the same budget.

Same trees: `prepare` runs t2t-repro's reader with --t2t_bin's python (`TreebankSample.trees`, section 6.3's
cleaning, files 1-159 / 160-179 / 180-199) and writes one canonical line a tree (`evalb_line`, real tags); benepar
reads them with nltk under a TOP node (its chart strips TOP), words unescaped as its loader does (-LRB- -> "("). The
model is benepar's `ChartParser` (character LSTM, partitioned transformer encoder, no pretrained model), trained by
a loop written here over benepar's pieces: its vocabularies, `encode_and_collate_subbatches` and `compute_loss`
(sub-batches of at most 2,000 words), Adam (0.9, 0.98, eps 1e-9), linear warm-up over 160 updates (the first at rate
0, as its scheduler does), then halving when the best dev F1 has not risen by a relative 1e-4 for more than 5 epochs
of checks (`LearningRate`), no clipping, 4 dev checks an epoch, the best dev model kept, the stop after (5 + 1) x 3
epochs without a better one. Its recipe without pre-training (EXPERIMENTS.md): chars LSTM (d_char_emb 64), encoder,
learning rate 0.0008, dropouts 0.2 / 0.1 (feed-forward), no tag prediction.

Changed for 2 CPU cores and 45 minutes, only these: the encoder, d_model 256, 2 layers, 8 heads of d_kv 32, d_ff
1024 (benepar 1024, 8, 8 x 64, 2048: ~100M parameters against 1.0M); batch 32 (make_hparams's default; the recipe's
250 gives 14 updates an epoch). The size was chosen from rough timings taken beside another job; alone on a 2-core
AVX2 host the measured run made 2,353 updates of 32 sentences in 45 minutes (22 epochs, dev checks included, 1.15 s
an update), so a larger encoder may fit the budget: not measured. The loop ends at the first update that ends past
--max_train_minutes from the first batch and checks dev once more (t2t-repro evaluates its last step too); dev
checks count inside the budget, as t2t-repro's evaluations do. Dev F1 is t2t-repro's EVALB where benepar calls
evalb.c.

Scoring: `parse` gives benepar the words only (tag XX each: no gold tag reaches the parser, which reads characters
and, without predict_tags, tags nothing). `score` (--t2t_bin's python) drops TOP, puts the gold tags on the
predicted preterminals, as benepar's own test does for such a model (tags decide which words COLLINS.prm deletes as
punctuation), and scores with t2t-repro's EVALB against the gold test lines (`t2t-repro-evalb
--gold=W/NAME/test.gold.trees --test=W/NAME/test.scored.trees` agrees); "t2t_tags": both sides tagged as t2t-repro's
placeholder problem does.

Install, CPU only (setup.py's spacy, sentencepiece, protobuf are not used; parse_chart imports transformers):

    python3 -m venv venv-benepar
    venv-benepar/bin/pip install torch==2.13.0
    venv-benepar/bin/pip install --no-deps benepar==0.2.0 torch-struct
    venv-benepar/bin/pip install numpy nltk transformers

Steps (t2t-repro in VENV, PTB holding treebank.zip), each printing a JSON line also added to W/results.jsonl:

    P="venv-benepar/bin/python tools/benchmarks/benepar_parsing.py --work=W --t2t_bin=VENV/bin"
    $P prepare --manual_dir=PTB
    $P train --name=budget45 --max_train_minutes=45
    $P parse --name=budget45            # --sentences=N: the first N test sentences (a smoke run)
    $P score --name=budget45
"""

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path

from opennmt_py import read_lines, record, write_lines
from opennmt_py_parsing import under_t2t_repro

REPOSITORY = Path(__file__).resolve().parents[2]
SPLITS = ("train", "dev", "test")
PLACEHOLDER_TAG = "XX"  # t2t_repro.data.ptb_tree.PLACEHOLDER_TAG

BENEPAR_RECIPE = dict(  # benepar 0.2.0's make_hparams (src/main.py), its recipe without pre-training (EXPERIMENTS.md)
    batch_size=250, learning_rate=0.0008, learning_rate_warmup_steps=160, clip_grad_norm=0.0, checks_per_epoch=4,
    step_decay_factor=0.5, step_decay_patience=5, max_consecutive_decays=3, use_chars_lstm=True, d_char_emb=64,
    char_lstm_input_dropout=0.2, use_pretrained=False, pretrained_model="bert-base-uncased", use_encoder=True,
    d_model=1024, num_layers=8, num_heads=8, d_kv=64, d_ff=2048, encoder_max_len=512, morpho_emb_dropout=0.2,
    attention_dropout=0.2, relu_dropout=0.1, residual_dropout=0.2, force_root_constituent="auto", predict_tags=False,
    d_label_hidden=256, d_tag_hidden=256, tag_loss_scale=5.0)
CPU_SIZE = dict(d_model=256, num_layers=2, num_heads=8, d_kv=32, d_ff=1024, batch_size=32)  # the changes (see above)
SUBBATCH_MAX_TOKENS = {"train": 2000, "parse": 500}  # benepar's train and test defaults


def cpu_flags(cpuinfo="/proc/cpuinfo"):
    """The host's AVX2 / AVX-512 flags, as `grep -o -E 'avx512[a-z_0-9]*|avx2' /proc/cpuinfo | sort -u`."""
    text = Path(cpuinfo).read_text() if Path(cpuinfo).is_file() else ""
    return sorted(set(re.findall(r"avx512[a-z_0-9]*|avx2", text)))


def tree_file(work, split):
    return Path(work) / "data" / f"{split}.trees"


def t2t_repro_modules():
    """t2t-repro's tree and EVALB modules (pure Python), from this repository when not installed here."""
    if str(REPOSITORY) not in sys.path:
        sys.path.append(str(REPOSITORY))
    from t2t_repro.data import ptb_tree
    from t2t_repro.evaluate import evalb, evalb_files
    return ptb_tree, evalb, evalb_files


def prediction_line(line, gold_line, ptb_tree, evalb_files, tags="gold"):
    """A predicted tree (under TOP) as the line scored: TOP dropped over one constituent, the gold tree's tags
    (tags="gold": left where the words differ, an EVALB error) or t2t-repro's placeholder tags ("t2t")."""
    if not line.strip():
        return ""
    tree = ptb_tree.parse_tree(line)
    if tree.label == "TOP" and len(tree.children) == 1 and not tree.is_preterminal():
        tree = tree.children[0]
    retag(tree, ptb_tree.parse_tree(gold_line), ptb_tree, tags)
    return evalb_files.evalb_line(tree)


def retag(tree, gold, ptb_tree, tags):
    words = tree.words()
    if tags == "gold" and words != gold.words():
        return
    new_tags = gold.tags() if tags == "gold" else [ptb_tree.PUNCTUATION_TAGS.get(w, PLACEHOLDER_TAG) for w in words]
    for node, tag in zip([node for event, node in ptb_tree.walk(tree) if event == ptb_tree.LEAF], new_tags):
        node.label = tag


def evalb_scores(gold_lines, predicted_lines, modules):
    """{"gold_tags": t2t-repro's EVALB (COLLINS.prm) figures, "t2t_tags": ..., "files": the lines scored}."""
    ptb_tree, evalb, evalb_files = modules
    if len(gold_lines) < len(predicted_lines):
        raise ValueError(f"{len(predicted_lines)} predicted trees for {len(gold_lines)} gold trees")
    gold_lines = gold_lines[:len(predicted_lines)]
    files = {"gold": gold_lines,
             "test": [prediction_line(p, g, ptb_tree, evalb_files) for p, g in zip(predicted_lines, gold_lines)],
             "gold_t2t": [prediction_line(g, g, ptb_tree, evalb_files, "t2t") for g in gold_lines],
             "test_t2t": [prediction_line(p, g, ptb_tree, evalb_files, "t2t")
                          for p, g in zip(predicted_lines, gold_lines)]}
    return {"gold_tags": evalb.evaluate_lines(files["gold"], files["test"]).as_dict(),
            "t2t_tags": evalb.evaluate_lines(files["gold_t2t"], files["test_t2t"]).as_dict(), "files": files}


class LearningRate:
    """benepar's WarmupThenReduceLROnPlateau as its main.py drives it: `rate` before update k (from 1) is base x
    (k - 1) / warmup up to update warmup + 1; then `after_update(best)` (the best dev F1 after a dev check, else
    None) multiplies it by `factor` when `best` has not beaten its best by a relative `threshold` for more than
    `patience` checks (torch's ReduceLROnPlateau, mode max)."""

    def __init__(self, base, warmup, factor, patience, threshold=1e-4):
        self.base, self.warmup, self.factor, self.patience, self.threshold = base, warmup, factor, patience, threshold
        self.updates, self.rate = 0, 0.0 if warmup else base
        self.best, self.bad_checks, self.decays = -math.inf, 0, 0

    def after_update(self, best=None):
        self.updates += 1
        if self.updates <= self.warmup:
            self.rate = self.base * self.updates / self.warmup
        elif best is not None:
            if best > self.best * (1 + self.threshold):
                self.best, self.bad_checks = best, 0
            else:
                self.bad_checks += 1
            if self.bad_checks > self.patience:
                if self.rate * (1 - self.factor) > 1e-8:  # torch's eps
                    self.rate, self.decays = self.rate * self.factor, self.decays + 1
                self.bad_checks = 0
        return self.rate


def budgeted_training(epoch_batches, update, check_dev, train_size, hparams, minutes, clock=time.time, log=print):
    """benepar's training loop ended by a budget: `update(batch, rate)` returns its sentences, `check_dev(step)`
    the dev F1 (the caller keeps the best model). Dev is checked when the sentences since the last check reach
    train_size / checks_per_epoch (the rest carried over), and after the update that ends `minutes` or more after
    the first batch, which ends training; so does benepar's termination, looked at after each epoch."""
    schedule = LearningRate(hparams["learning_rate"], hparams["learning_rate_warmup_steps"],
                            hparams["step_decay_factor"], hparams["step_decay_patience"] * hparams["checks_per_epoch"])
    check_every = train_size / hparams["checks_per_epoch"]
    patience_epochs = (hparams["step_decay_patience"] + 1) * hparams["max_consecutive_decays"]
    start, step, processed, since_check, epoch = None, 0, 0, 0.0, 0
    best = {"dev_f1": -math.inf, "step": None, "processed": 0}
    checks, stop = [], None
    while stop is None:
        epoch += 1
        for batch in epoch_batches(epoch):
            start = clock() if start is None else start
            sentences = update(batch, schedule.rate)
            step, processed = step + 1, processed + sentences
            since_check, out_of_time = since_check + sentences, clock() - start >= minutes * 60
            checked = since_check >= check_every or out_of_time
            if since_check >= check_every:
                since_check -= check_every
            if checked:
                f1 = check_dev(step)
                checks.append({"step": step, "epoch": epoch, "seconds": round(clock() - start, 2), "dev_f1": f1})
                log(f"dev check at step {step} (epoch {epoch}, {checks[-1]['seconds']} s): F1 {f1}")
                if f1 > best["dev_f1"]:
                    best = {"dev_f1": f1, "step": step, "processed": processed}
            schedule.after_update(best["dev_f1"] if checked else None)
            if out_of_time:
                stop = "budget"
                break
        if stop is None and processed - best["processed"] > patience_epochs * train_size:
            stop = "no_dev_improvement"
    return {"steps": step, "epochs": round(processed / train_size, 3), "last_epoch": epoch,
            "train_seconds": round(clock() - start, 2) if start is not None else 0.0, "stopped_by": stop,
            "best_dev_f1": best["dev_f1"], "best_step": best["step"], "dev_checks": checks,
            "learning_rate_decays": schedule.decays, "final_learning_rate": schedule.rate}


def model_hparams(args):
    """benepar's recipe with this host's size, or the one given on the command line."""
    values = {**BENEPAR_RECIPE, **CPU_SIZE, **{k: getattr(args, k) for k in CPU_SIZE if getattr(args, k, None)}}
    if values["d_model"] % 2:
        sys.exit(f"--d_model={values['d_model']}: must be even (half content, half position in benepar)")
    return values


def prepare(args):
    """Each split's cleaned trees, one canonical line each, read by t2t-repro's own code."""
    if not under_t2t_repro(args):
        return
    from t2t_repro import catalog
    from t2t_repro.evaluate.evalb_files import evalb_line

    problem = catalog.get_problem("ptb_sample_parsing")
    sample, counts = problem.sample(args.manual_dir), {}
    (Path(args.work) / "data").mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        lines = [evalb_line(tree) for number in problem.split_files(sample, split) for tree in sample.trees(number)]
        write_lines(tree_file(args.work, split), lines)
        counts[split] = len(lines)
    record(args.work, {"step": "prepare", "trees": counts, "files": {s: str(tree_file(args.work, s)) for s in SPLITS},
                       "split": {s: problem.settings.file_ranges()[f"{s}_files"][0] for s in SPLITS}})


def benepar_examples(lines, with_trees=True):
    """benepar inputs: words unescaped as its loader does; the tree under TOP, or the words tagged XX only."""
    import nltk
    from benepar import ptb_unescape
    from benepar.parse_base import BaseInputExample

    class Example(BaseInputExample):
        def __init__(self, tree, leaves):
            self.tree, self._leaves, self.words = tree, leaves, ptb_unescape.ptb_unescape(leaves)
            self.space_after = ptb_unescape.guess_space_after(leaves)

        def leaves(self):
            return self._leaves

        def pos(self):
            return self.tree.pos() if self.tree is not None else [(leaf, PLACEHOLDER_TAG) for leaf in self._leaves]

    trees = [nltk.Tree("TOP", [nltk.Tree.fromstring(line)]) for line in lines]
    return [Example(tree if with_trees else None, tree.leaves()) for tree in trees]


def parse_lines(parser, examples):
    """benepar's parse of `examples` as one-line trees (under TOP)."""
    trees = parser.parse(examples, subbatch_max_tokens=SUBBATCH_MAX_TOKENS["parse"])
    return [tree.pformat(margin=10 ** 9) for tree in trees]


def train(args):
    import numpy
    import torch
    from benepar import char_lstm, decode_chart, nkutil, parse_chart

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    (run_dir := Path(args.work) / args.name).mkdir(parents=True, exist_ok=True)
    train_examples = benepar_examples(read_lines(tree_file(args.work, "train"))[:args.train_sentences or None])
    dev_gold = read_lines(tree_file(args.work, "dev"))[:args.dev_sentences or None]
    dev_examples = benepar_examples(dev_gold, with_trees=False)
    values = model_hparams(args)
    trees = [example.tree for example in train_examples]
    values["force_root_constituent"] = decode_chart.ChartDecoder.infer_force_root_constituent(trees)
    tag_vocab = {tag: i for i, tag in enumerate(["UNK"] + sorted({t for tree in trees for _, t in tree.pos()}))}
    parser = parse_chart.ChartParser(
        tag_vocab=tag_vocab, label_vocab=decode_chart.ChartDecoder.build_vocab(trees),
        char_vocab=char_lstm.RetokenizerForCharLSTM.build_vocab([e.words for e in train_examples]),
        hparams=nkutil.HParams(**values))
    parameters = [p for p in parser.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(parameters, lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    random = numpy.random.RandomState(args.seed)
    log_file = open(run_dir / "train.log", "w")

    def log(text):
        print(text, file=log_file, flush=True)

    def epoch_batches(epoch):
        order = random.permutation(len(train_examples))
        for first in range(0, len(order), values["batch_size"]):
            yield [train_examples[i] for i in order[first:first + values["batch_size"]]]

    def update(batch, rate):
        for group in optimizer.param_groups:
            group["lr"] = rate
        optimizer.zero_grad()
        parser.train()
        started, loss_sum = time.time(), 0.0
        for _, subbatch in parser.encode_and_collate_subbatches(batch, SUBBATCH_MAX_TOKENS["train"]):
            loss = parser.compute_loss(subbatch)
            value = float(loss.detach())
            loss_sum += value
            if value > 0:
                loss.backward()
        optimizer.step()
        log(f"update lr {rate:.6g} sentences {len(batch)} loss {loss_sum:.4f} seconds {time.time() - started:.2f}")
        return len(batch)

    def check_dev(step):
        f1 = evalb_scores(dev_gold, parse_lines(parser, dev_examples), t2t_repro_modules())["gold_tags"]["f1"]
        if f1 > best["f1"]:
            best["f1"] = f1
            torch.save({"config": parser.config, "state_dict": parser.state_dict(), "step": step, "dev_f1": f1},
                       run_dir / "best.pt")
        return f1

    best = {"f1": -math.inf}
    report = budgeted_training(epoch_batches, update, check_dev, len(train_examples), values,
                               args.max_train_minutes, log=log)
    (run_dir / "dev_checks.json").write_text(json.dumps(report.pop("dev_checks"), indent=1))
    record(args.work, {"step": "train", "toolkit": "benepar 0.2.0", "name": args.name, **report,
                       "max_train_minutes": args.max_train_minutes, "train_sentences": len(train_examples),
                       "dev_sentences": len(dev_examples), "parameters": sum(p.numel() for p in parameters),
                       "hparams": {k: v for k, v in values.items() if k in BENEPAR_RECIPE or k in CPU_SIZE},
                       "threads": args.threads, "seed": args.seed, "torch": torch.__version__,
                       "cpu_flags": cpu_flags()})


def parse(args):
    """The best dev model on the test words; sentences per second of benepar's parse (loading not counted)."""
    import torch
    from benepar import parse_chart

    torch.set_num_threads(args.threads)
    run_dir = Path(args.work) / args.name
    parser = parse_chart.ChartParser.from_trained(str(run_dir / "best.pt"))
    saved = torch.load(run_dir / "best.pt", map_location="cpu", weights_only=False)
    examples = benepar_examples(read_lines(tree_file(args.work, "test"))[:args.sentences or None], with_trees=False)
    started = time.perf_counter()
    predicted = parse_lines(parser, examples)
    seconds = time.perf_counter() - started
    write_lines(run_dir / "test.predicted.trees", predicted)
    record(args.work, {"step": "parse", "toolkit": "benepar 0.2.0", "name": args.name, "sentences": len(examples),
                       "parse_seconds": round(seconds, 3), "sentences_per_s": len(examples) / seconds,
                       "threads": args.threads, "model_step": saved["step"], "model_dev_f1": saved["dev_f1"],
                       "parameters": sum(p.numel() for p in parser.parameters()),
                       "subbatch_max_tokens": SUBBATCH_MAX_TOKENS["parse"], "cpu_flags": cpu_flags()})


def score(args):
    """t2t-repro's EVALB (COLLINS.prm) on the predicted test trees against the prepared gold test trees."""
    if not under_t2t_repro(args):
        return
    run_dir = Path(args.work) / args.name
    predicted, gold = read_lines(run_dir / "test.predicted.trees"), read_lines(tree_file(args.work, "test"))
    scores = evalb_scores(gold, predicted, t2t_repro_modules())
    for name, suffix in (("gold", "gold"), ("test", "scored"), ("gold_t2t", "gold_t2t"), ("test_t2t", "scored_t2t")):
        write_lines(run_dir / f"test.{suffix}.trees", scores["files"][name])
    keys = ("f1", "precision", "recall", "error_sentences", "skip_sentences", "complete_match")
    record(args.work, {"step": "score", "toolkit": "benepar 0.2.0", "name": args.name, "sentences": len(predicted),
                       "test_sentences": len(gold), **{k: scores["gold_tags"][k] for k in keys},
                       "evalb": scores["gold_tags"], "t2t_tags": {k: scores["t2t_tags"][k] for k in keys},
                       "gold_file": str(run_dir / "test.gold.trees"), "test_file": str(run_dir / "test.scored.trees")})


def positive(kind):
    def check(text):
        if kind(text) <= 0:
            raise argparse.ArgumentTypeError(f"{text}: must be above 0")
        return kind(text)
    return check


def argument_parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="directory for the trees, the runs and results.jsonl")
    parser.add_argument("--t2t_bin", default="", help="bin of t2t-repro's venv (its python)")
    parser.add_argument("--threads", type=positive(int), default=2, help="torch's CPU threads")
    steps = parser.add_subparsers(dest="command", required=True)
    steps.add_parser("prepare").add_argument("--manual_dir", required=True, help="the directory of treebank.zip")
    sub = steps.add_parser("train")
    sub.add_argument("--max_train_minutes", type=positive(float), default=45.0,
                     help="training-time budget from the first batch, dev checks included (t2t-repro's)")
    for name, value in CPU_SIZE.items():
        sub.add_argument(f"--{name}", type=positive(int), help=f"default {value} (benepar's {BENEPAR_RECIPE[name]})")
    for split in ("train", "dev"):
        sub.add_argument(f"--{split}_sentences", type=positive(int), help=f"the first N {split} trees (a smoke run)")
    sub.add_argument("--seed", type=int, default=1234)
    steps.add_parser("parse").add_argument("--sentences", type=positive(int), help="the first N test sentences")
    steps.add_parser("score")
    for name in ("train", "parse", "score"):
        steps.choices[name].add_argument("--name", required=True, help="the run (W/NAME)")
    return parser


def main(argv=None):
    args = argument_parser().parse_args(argv)
    Path(args.work).mkdir(parents=True, exist_ok=True)
    {"prepare": prepare, "train": train, "parse": parse, "score": score}[args.command](args)


if __name__ == "__main__":
    main()

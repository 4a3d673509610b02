"""The seed noise of a recipe: runs that differ in `--seed` alone, their scores side by side with the mean and the
spread, as a markdown table.

    python tools/seed_spread.py O_seed1 O_seed2 O_seed3 [--dev_scores=val_bleu.json] [--json]

Each run directory's test scores are read from its report.json (BLEU, the tokenized uncased BLEU and chrF2 of
a translation problem; F1, precision and recall of a parsing problem); `--dev_scores` names a file inside each
run with its dev scores, as `t2t-repro-bleu --json` or `t2t-repro-evalb --json` print them. The spread is the
largest minus the smallest score and the sample standard deviation (n - 1). The runs must share the problem,
its settings, the hparams set and its overrides and the vocabulary (run.json) and have different seeds: anything
else is refused in one line, exit status 2, as are missing or unreadable files. Their step counts are shown,
since a time budget ends runs at different steps.
"""

import json
import os
import statistics
import sys

from t2t_repro.cli.common import ArgumentParser, run_main
from t2t_repro.errors import UserError
from t2t_repro.json_file import read_json

# (row label, where the score is in report.json, where it is in a dev scores file)
METRICS = (
    ("sacreBLEU", "bleu.sacrebleu", "sacrebleu"),
    ("tokenized uncased BLEU", "bleu.tokenized_uncased", "tokenized_uncased"),
    ("chrF2", "chrf.chrf", "chrf.chrf"),
    ("F1", "f1", "f1"),
    ("precision", "precision", "precision"),
    ("recall", "recall", "recall"),
)
SAME_IN_EVERY_RUN = ("problem", "problem_overrides", "hparams_set", "hparams_overrides", "vocabulary_sha256")


def lookup(document, dotted):
    for key in dotted.split("."):
        if not isinstance(document, dict) or key not in document:
            return None
        document = document[key]
    return document if isinstance(document, (int, float)) and not isinstance(document, bool) else None


def read_runs(run_dirs, dev_scores):
    runs = []
    for run_dir in run_dirs:
        run = read_json(os.path.join(run_dir, "run.json"), "the run's description")
        run["report"] = read_json(os.path.join(run_dir, "report.json"), "the run's report")
        run["dev"] = read_json(os.path.join(run_dir, dev_scores), "dev scores") if dev_scores else {}
        run["dir"] = run_dir
        runs.append(run)
    first = runs[0]
    for run in runs[1:]:
        for field in SAME_IN_EVERY_RUN:
            if run.get(field) != first.get(field):
                raise UserError(f"{run['dir']} and {first['dir']} differ in {field} ({run.get(field)!r} against "
                              f"{first.get(field)!r}): seeds of one recipe differ in the seed alone")
    seeds = [run.get("seed") for run in runs]
    repeated = sorted({seed for seed in seeds if seeds.count(seed) > 1}, key=str)
    if repeated:
        raise UserError(f"seed {repeated[0]} stands in more than one run: each run needs its own --seed")
    return runs


def spread_rows(runs):
    """One row per score every run has: (label, [score per run], mean, largest - smallest, sample std)."""
    rows = []
    for split, source in (("test", "report"), ("dev", "dev")):
        for label, report_key, dev_key in METRICS:
            scores = [lookup(run[source], report_key if source == "report" else dev_key) for run in runs]
            if any(score is None for score in scores):
                continue
            rows.append((f"{split} {label}", scores, statistics.mean(scores), max(scores) - min(scores),
                         statistics.stdev(scores)))
    return rows


def markdown(runs, rows):
    heads = [f"seed {run.get('seed')}" for run in runs]
    lines = ["| | " + " | ".join(heads) + " | mean | range | std |", "|---" * (len(runs) + 4) + "|",
             "| steps | " + " | ".join(str(run["report"].get("steps", "?")) for run in runs) + " | | | |"]
    for label, scores, mean, width, deviation in rows:
        lines.append(f"| {label} | " + " | ".join(f"{score:.2f}" for score in scores)
                     + f" | {mean:.2f} | {width:.2f} | {deviation:.2f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dirs", nargs="+", help="output directories of runs that differ in --seed alone")
    parser.add_argument("--dev_scores", default="", help="a file in each run directory with its dev scores "
                        "(t2t-repro-bleu --json or t2t-repro-evalb --json)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args(argv)
    if len(args.run_dirs) < 2:
        raise UserError("a spread needs at least two runs")
    runs = read_runs(args.run_dirs, args.dev_scores)
    rows = spread_rows(runs)
    if not rows:
        raise UserError("the runs share no score (report.json holds neither BLEU nor F1)")
    if args.json:
        print(json.dumps({"runs": [{"dir": run["dir"], "seed": run.get("seed"), "steps": run["report"].get("steps")}
                                   for run in runs],
                          "scores": {label: {"per_run": scores, "mean": mean, "range": width, "std": deviation}
                                     for label, scores, mean, width, deviation in rows}}, sort_keys=True))
    else:
        print(markdown(runs, rows))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))

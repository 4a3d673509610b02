"""Domain adaptation by fine-tuning, on toy_ende's language made by code: what --warm_start_from gains on a new
domain and what the old one loses.

    python tools/adaptation.py --work_dir=W [--parent_steps=1200] [--child_steps=400] [--dev_sentences=500]

toy_ende's corpus (generated once under W/tmp) is split into two domains by sentence structure: `simple`,
sentences without a subordinate clause, and `clauses`, those with one (because, although, when, if, before,
while: German puts their verb last). Three runs of `transformer_tiny` through the trainer's command line, the
new domain's data encoded with the first run's vocabulary (`vocab_from`):

    general      trained on `simple` for --parent_steps steps
    fine-tuned   --warm_start_from=general (optimizer, schedule and step reset) on `clauses`, --child_steps steps
    scratch      random weights on `clauses` (the same pieces), --child_steps steps

Each is scored on both domains' dev sentences (t2t-repro-decoder, then sacreBLEU as t2t-repro-bleu computes
it); the table gives BLEU and the training minutes (report.json's train_seconds). Only the commands' outputs
are read: nothing here trains or decodes by itself.
"""

import argparse
import json
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SUBORDINATORS = ("because", "although", "when", "if", "before", "while")
DOMAINS = ("simple", "clauses")


def domain_of(english):
    words = {word.strip(".,?").lower() for word in english.split()}
    return "clauses" if words & set(SUBORDINATORS) else "simple"


def split_corpus(corpus_dir, work_dir, dev_sentences):
    """Writes W/<domain>/{train,dev,test}.{en,de} from toy_ende's raw text; returns {domain: directory}."""
    directories = {domain: os.path.join(work_dir, domain) for domain in DOMAINS}
    for directory in directories.values():
        os.makedirs(directory, exist_ok=True)
    for split in ("train", "dev", "test"):
        with open(os.path.join(corpus_dir, f"{split}.en"), encoding="utf-8") as en, \
                open(os.path.join(corpus_dir, f"{split}.de"), encoding="utf-8") as de:
            pairs = list(zip(en.read().splitlines(), de.read().splitlines()))
        for domain, directory in directories.items():
            kept = [pair for pair in pairs if domain_of(pair[0]) == domain]
            if split != "train":
                kept = kept[:dev_sentences]
            for index, language in enumerate(("en", "de")):
                with open(os.path.join(directory, f"{split}.{language}"), "w", encoding="utf-8") as out:
                    out.writelines(pair[index] + "\n" for pair in kept)
    return directories


def run_tool(module, *args):
    command = [sys.executable, "-m", f"t2t_repro.cli.{module}", *map(str, args)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
    return result.stdout


def train(work_dir, name, corpus, steps, vocab_from=None, warm_start_from=None):
    settings = "source_language=en,target_language=de" + (f",vocab_from={vocab_from}" if vocab_from else "")
    output_dir = os.path.join(work_dir, "runs", name)
    flags = [f"--manual_dir={corpus}", f"--data_dir={os.path.join(work_dir, 'data', name)}",
             f"--output_dir={output_dir}", f"--train_steps={steps}", f"--eval_steps={steps}", "--skip_test",
             "--skip_export"]
    if warm_start_from:
        flags.append(f"--warm_start_from={warm_start_from}")
    run_tool("trainer", "--problem=translate_files", f"--problem_overrides={settings}",
             "--hparams=transformer_tiny", *flags)
    return output_dir


def dev_bleu(run, corpus, work_dir):
    """sacreBLEU of `run`'s default checkpoint on the domain's dev sentences."""
    hypotheses = os.path.join(work_dir, f"{os.path.basename(run)}.{os.path.basename(corpus)}.de")
    run_tool("decoder", f"--output_dir={run}", f"--decode_from_file={os.path.join(corpus, 'dev.en')}",
             f"--decode_to_file={hypotheses}", "--quiet")
    line = run_tool("bleu", f"--translation={hypotheses}", f"--reference={os.path.join(corpus, 'dev.de')}",
                    "--lang=de", "--json")
    return json.loads(line)["sacrebleu"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--parent_steps", type=int, default=1200)
    parser.add_argument("--child_steps", type=int, default=400)
    parser.add_argument("--dev_sentences", type=int, default=500)
    args = parser.parse_args(argv)
    from t2t_repro.problems.toy import ToyEnde

    corpus = ToyEnde().raw_text_dir(os.path.join(args.work_dir, "tmp"), None)
    domains = split_corpus(corpus, args.work_dir, args.dev_sentences)
    general = train(args.work_dir, "general", domains["simple"], args.parent_steps)
    runs = {
        "general": general,
        "fine-tuned": train(args.work_dir, "fine_tuned", domains["clauses"], args.child_steps, vocab_from=general,
                            warm_start_from=general),
        "scratch": train(args.work_dir, "scratch", domains["clauses"], args.child_steps, vocab_from=general),
    }
    print("| run | steps | training minutes | dev BLEU, simple (old domain) | dev BLEU, clauses (new domain) |")
    print("|---|---|---|---|---|")
    for name, run in runs.items():
        with open(os.path.join(run, "report.json"), encoding="utf-8") as report_file:
            report = json.load(report_file)
        scores = [dev_bleu(run, domains[domain], args.work_dir) for domain in DOMAINS]
        print(f"| {name} | {report['steps']} | {report['train_seconds'] / 60:.1f} | {scores[0]:.1f} | "
              f"{scores[1]:.1f} |", flush=True)


if __name__ == "__main__":
    main()

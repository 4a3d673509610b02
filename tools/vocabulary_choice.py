"""One vocabulary or one per side, on a language pair whose scripts share nothing: build time, training speed and
dev BLEU / chrF at equal steps, through the real command lines.

    python tools/vocabulary_choice.py --work_dir=W [--script=greek|ideographs] [--train_pairs=27000]
        [--shared_size=8000] [--steps=1200] [--hparams=transformer_tiny]

The corpus is toy_ende's language made by code (short sentences: 3 to 20 words, as Tatoeba's), its German side
written in another script: `greek` spells every letter in a Greek one (an alphabet, words between spaces, as
Russian is to English), `ideographs` writes every German word as one to three CJK ideographs and drops the
spaces between words (as Chinese or Japanese). Two runs of translate_files on it, the same steps and model:

    shared     one vocabulary of --shared_size pieces for both sides (section 5.1)
    separate   shared_vocabulary=false, each side --shared_size / 2 pieces: the same embedding rows in all

For each: datagen's wall time (vocabulary training included; both encode the same pairs), the trainer's target
tokens/s (report.json), its parameters, and sacreBLEU (the target's tokenizer) and chrF2 on the dev sentences
(t2t-repro-decoder, then t2t-repro-bleu --metrics=bleu,chrf). Only the commands' outputs are read.
"""

import argparse
import hashlib
import json
import os
import time

from adaptation import run_tool

SCRIPTS = {"greek": "el", "ideographs": "zh"}
IDEOGRAPHS = 2500
_GREEK = dict(zip("abcdefghijklmnopqrstuvwxyzäöüßABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÜ",
                  "αβψδεφγηιξκλμνοπθρστυωςχυζάόύσΑΒΨΔΕΦΓΗΙΞΚΛΜΝΟΠΘΡΣΤΥΩΣΧΥΖΆΌΎ"))


def greek(sentence):
    return "".join(_GREEK.get(character, character) for character in sentence)


def ideograph_word(word):
    """One to three ideographs that stand for `word`, the same every time, drawn from IDEOGRAPHS characters (about
    the characters common Chinese text uses, so words share them); punctuation kept."""
    letters = word.strip(".,?!")
    if not letters:
        return word
    digest = hashlib.sha256(letters.lower().encode()).digest()
    characters = "".join(chr(0x4E00 + int.from_bytes(digest[2 * i:2 * i + 2], "big") % IDEOGRAPHS)
                         for i in range(1 + digest[-1] % 3))
    return characters + word[len(letters):]


def ideographs(sentence):
    return "".join(map(ideograph_word, sentence.split(" ")))


def write_corpus(work_dir, script, train_pairs):
    """W/corpus_<script>/{train,dev,test}.{en,<target>}: toy_ende's text, its German side in `script`."""
    from t2t_repro.data.toy.language import write_toy_corpus

    source_dir = write_toy_corpus(os.path.join(work_dir, "toy"), num_train=train_pairs, num_dev=500, num_test=500,
                                  max_words=20)
    corpus = os.path.join(work_dir, f"corpus_{script}")
    os.makedirs(corpus, exist_ok=True)
    write = {"greek": greek, "ideographs": ideographs}[script]
    for split in ("train", "dev", "test"):
        with open(os.path.join(source_dir, f"{split}.en"), encoding="utf-8") as english:
            text = english.read()
        with open(os.path.join(corpus, f"{split}.en"), "w", encoding="utf-8") as out:
            out.write(text)
        with open(os.path.join(source_dir, f"{split}.de"), encoding="utf-8") as german, \
                open(os.path.join(corpus, f"{split}.{SCRIPTS[script]}"), "w", encoding="utf-8") as out:
            out.writelines(write(line.rstrip("\n")) + "\n" for line in german)
    return corpus


def model_parameters(hparams_set, problem_overrides, data_dir):
    """The parameters of the run's model: its hparams with the vocabularies of its data."""
    from t2t_repro import catalog
    from t2t_repro.model import build_transformer

    vocabularies = catalog.get_problem("translate_files", problem_overrides).vocabularies(data_dir)
    return build_transformer(catalog.get_hparams(hparams_set), **vocabularies.model_sizes()).count_params()


def run_choice(args, corpus, name, vocabulary):
    """Datagen (timed), training and the dev scores of one vocabulary choice; returns its table row."""
    language = SCRIPTS[args.script]
    settings = f"source_language=en,target_language={language},{vocabulary}"
    data_dir, output_dir = (os.path.join(args.work_dir, kind, f"{args.script}_{name}") for kind in ("data", "runs"))
    common = ["--problem=translate_files", f"--problem_overrides={settings}", f"--manual_dir={corpus}",
              f"--data_dir={data_dir}"]
    started = time.perf_counter()
    run_tool("datagen", *common)
    datagen_seconds = time.perf_counter() - started
    run_tool("trainer", *common, f"--output_dir={output_dir}", f"--hparams={args.hparams}",
             f"--train_steps={args.steps}", f"--eval_steps={args.steps}", "--skip_test", "--skip_export")
    with open(os.path.join(output_dir, "report.json"), encoding="utf-8") as report_file:
        report = json.load(report_file)
    hypotheses = os.path.join(args.work_dir, f"{args.script}_{name}.dev.{language}")
    run_tool("decoder", f"--output_dir={output_dir}", f"--decode_from_file={os.path.join(corpus, 'dev.en')}",
             f"--decode_to_file={hypotheses}", "--quiet")
    scores = json.loads(run_tool("bleu", f"--translation={hypotheses}",
                                 f"--reference={os.path.join(corpus, f'dev.{language}')}", f"--lang={language}",
                                 "--metrics=bleu,chrf", "--json"))
    params = model_parameters(args.hparams, common[1].split("=", 1)[1], data_dir)
    return {"choice": name, "vocabulary": vocabulary, "datagen_s": round(datagen_seconds, 1),
            "steps": report["steps"], "target_tokens_per_s": report["target_tokens_per_s"],
            "train_minutes": round(report["train_seconds"] / 60, 1), "dev_bleu": round(scores["sacrebleu"], 2),
            "dev_chrf": round(scores["chrf"]["chrf"], 2), "params": params}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--script", choices=sorted(SCRIPTS), default="ideographs")
    parser.add_argument("--train_pairs", type=int, default=27_000)
    parser.add_argument("--shared_size", type=int, default=8000)
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--hparams", default="transformer_tiny")
    args = parser.parse_args(argv)
    corpus = write_corpus(args.work_dir, args.script, args.train_pairs)
    half = args.shared_size // 2
    choices = {"shared": f"vocab_size={args.shared_size}",
               "separate": f"shared_vocabulary=false,source_vocab_size={half},target_vocab_size={half}"}
    print("| vocabulary | parameters | datagen s | target tokens/s | training min | dev BLEU | dev chrF2 |")
    print("|---|---|---|---|---|---|---|")
    for name, vocabulary in choices.items():
        row = run_choice(args, corpus, name, vocabulary)
        with open(os.path.join(args.work_dir, "results.jsonl"), "a", encoding="utf-8") as results:
            results.write(json.dumps(dict(row, script=args.script, hparams=args.hparams)) + "\n")
        print(f"| {name}: {vocabulary} | {row['params']:,} | {row['datagen_s']} | {row['target_tokens_per_s']:,.0f} | "
              f"{row['train_minutes']} | {row['dev_bleu']} | {row['dev_chrf']} |", flush=True)


if __name__ == "__main__":
    main()

"""The speed step of tools/benchmarks/opennmt_py.py: t2t-repro and OpenNMT-py timed in turns, each round's figures
and the ratio t2t-repro / OpenNMT-py appended to WORK/results.jsonl. Training target tokens per second of each
toolkit's trainer from a fresh model, test2016 decoding sentences per second at beam 4 in float32 (each
toolkit's own command), and the same decode in CTranslate2 int8 (each toolkit's own export). Run it through
opennmt_py.py's `speed` step (its docstring says how).
"""

import argparse
import shutil
import sys
from pathlib import Path

import opennmt_py
from opennmt_py import (
    DECODE, _T2T_REPORT, averaged_model, bleu, detokenize, log_tokens_per_second, read_lines, record, remove_own,
    run, t2t_checkpoint, t2t_decode_command, t2t_view, train, translate_command, translation_seconds, write_lines,
)


def speed_train(args, round_):
    """Target tokens per second of --speed_steps steps of each toolkit's training, from a fresh model: the mean of
    the rates each logs every 25 steps, its first window (start-up, tracing) left out."""
    scratch = Path(args.work) / "speed"
    t2t_dir, data_dir = scratch / f"t2t_train_{round_}", scratch / "t2t_data"
    remove_own(t2t_dir, "run.json")
    if not data_dir.exists():  # the trainer checks (and may rewrite) its data: a copy, not the run's
        shutil.copytree(args.data_dir, data_dir)
    _, output = run([Path(args.t2t_bin) / "t2t-repro-trainer", "--problem=multi30k_ende",
                     "--problem_overrides=shared_vocabulary=true", "--hparams=transformer_small",
                     f"--data_dir={data_dir}", f"--manual_dir={args.manual_dir}", f"--output_dir={t2t_dir}",
                     f"--train_steps={args.speed_steps}", "--eval_steps=1000000", "--eval_decode_sentences=0",
                     "--checkpoint_steps=1000000", "--log_steps=25",
                     "--skip_average", "--skip_test", "--skip_export"], args.threads, scratch / f"t2t_{round_}.log")
    reports = [int(m[2].replace(",", "")) for m in _T2T_REPORT.finditer(output)][1:]
    t2t = sum(reports) / len(reports) if reports else None
    peer = argparse.Namespace(**{**vars(args), "name": f"speed/onmt_train_{round_}", "train_from": None,
                                 "learning_rate": 2.0, "train_steps": args.speed_steps, "seed": 1234,
                                 "dropout": None})
    remove_own(Path(args.work) / peer.name)
    train(peer)
    onmt = log_tokens_per_second(Path(args.work) / peer.name / f"train_to{args.speed_steps}.log")
    return {"metric": "train_target_tokens_per_s", "t2t_repro": t2t, "opennmt_py": onmt}


def speed_decode(args, round_):
    """test2016 at beam 4, float32: sentences per second of the whole command, and of the translation alone
    where the tool reports it (OpenNMT-py's -report_time)."""
    scratch = Path(args.work) / "speed"
    output_dir, checkpoint = t2t_checkpoint(args, args.step, args.average)
    t2t_s, _ = run(t2t_decode_command(args, output_dir, checkpoint, scratch / f"t2t_{round_}.de"), args.threads)
    model = averaged_model(args, args.name, args.step, args.average)
    data = Path(args.work) / "data"
    onmt_s, output = run(translate_command(args, model, data / "test.en.sp", scratch / f"onmt_{round_}.sp"),
                         args.threads)
    sentences = len(read_lines(data / "test.en"))
    translate_s = translation_seconds(output)
    detokenize(args, scratch / f"onmt_{round_}.sp", scratch / f"onmt_{round_}.de")
    return {"metric": "decode_sentences_per_s", "t2t_repro": sentences / t2t_s, "opennmt_py": sentences / onmt_s,
            "opennmt_py_translation_only": sentences / translate_s if translate_s else None,
            "t2t_repro_bleu": bleu(args, scratch / f"t2t_{round_}.de"),
            "opennmt_py_bleu": bleu(args, scratch / f"onmt_{round_}.de")}


def ctranslate2_models(args):
    """Each toolkit's own CTranslate2 int8 export of its averaged model at --step (made once)."""
    scratch = Path(args.work) / "speed"
    t2t_export = scratch / "t2t_ct2"
    if not t2t_export.exists():  # from a view of the run, so that nothing is written into it
        output_dir, checkpoint = t2t_checkpoint(args, args.step, args.average)
        if checkpoint != "averaged":
            output_dir = t2t_view(args, args.step, 1)
        run([Path(args.t2t_bin) / "t2t-repro-exporter", f"--output_dir={output_dir}", f"--checkpoint={checkpoint}",
             "--format=ctranslate2", "--quantization=int8", f"--export_dir={t2t_export}"], args.threads)
    onmt_export = scratch / "onmt_ct2"
    if not onmt_export.exists():
        model = plain_attention_copy(averaged_model(args, args.name, args.step, args.average), scratch / "onmt_ct2.pt")
        run([Path(args.onmt_bin) / "ct2-opennmt-py-converter", "--model_path", model, "--output_dir", onmt_export,
             "--quantization", "int8", "--unsafe_deserialization"],  # its own checkpoint: pickled options
            args.threads)
    return t2t_export, onmt_export


def plain_attention_copy(model, output):
    """A copy of an OpenNMT-py checkpoint whose options name the attention "scaled-dot": 3.5 trains with
    "scaled-dot-flash" (torch's fused kernel, the same function), a name the CTranslate2 converter refuses."""
    import torch

    checkpoint = torch.load(model, map_location="cpu", weights_only=False)
    checkpoint["opt"].self_attn_type = "scaled-dot"
    torch.save(checkpoint, output)
    return output


def speed_ctranslate2(args, round_):
    """test2016 at beam 4 in CTranslate2 int8: t2t-repro-decoder --engine=ctranslate2 on its export against
    OpenNMT-py's converted model in ctranslate2.Translator (batches of 32, the same pieces), whole command."""
    t2t_export, onmt_export = ctranslate2_models(args)
    scratch = Path(args.work) / "speed"
    data = Path(args.work) / "data"
    t2t_s, _ = run([Path(args.t2t_bin) / "t2t-repro-decoder", "--engine=ctranslate2", f"--model_dir={t2t_export}",
                    f"--decode_from_file={data / 'test.en'}", f"--decode_to_file={scratch / f't2t_ct2_{round_}.de'}",
                    f"--threads={args.threads}", "--quiet", f"--beam_size={DECODE['beam_size']}",
                    f"--alpha={DECODE['alpha']}", f"--batch_size={DECODE['batch_size']}"], args.threads)
    out = scratch / f"onmt_ct2_{round_}"
    onmt_s, _ = run([sys.executable, opennmt_py.__file__, f"--work={args.work}", f"--threads={args.threads}",
                     "ct2_translate", f"--model_dir={onmt_export}", f"--output={out}.de"], args.threads)
    sentences = len(read_lines(data / "test.en"))
    return {"metric": "ctranslate2_int8_sentences_per_s", "t2t_repro": sentences / t2t_s,
            "opennmt_py": sentences / onmt_s, "t2t_repro_bleu": bleu(args, scratch / f"t2t_ct2_{round_}.de"),
            "opennmt_py_bleu": bleu(args, f"{out}.de")}


def ct2_translate(args):
    """Translates test2016 with a converted OpenNMT-py model in ctranslate2.Translator, as the speed step's peer."""
    import ctranslate2
    import sentencepiece

    data = Path(args.work) / "data"
    model = sentencepiece.SentencePieceProcessor(model_file=str(data / "vocab.model"))
    translator = ctranslate2.Translator(args.model_dir, device="cpu", intra_threads=args.threads)
    sources = [line.split() for line in read_lines(data / "test.en.sp")]
    results = translator.translate_batch(sources, max_batch_size=DECODE["batch_size"], beam_size=DECODE["beam_size"],
                                         length_penalty=DECODE["alpha"], max_decoding_length=250)
    write_lines(args.output, [model.decode(result.hypotheses[0]) for result in results])


def speed(args):
    """--rounds rounds of each chosen comparison, the two toolkits in turns; each round's figures and the ratio
    t2t-repro / OpenNMT-py."""
    (Path(args.work) / "speed").mkdir(parents=True, exist_ok=True)
    measures = {"train": speed_train, "decode": speed_decode, "ctranslate2": speed_ctranslate2}
    for what in args.what.split(","):
        for round_ in range(args.rounds):
            result = measures[what](args, round_)
            ratio = result["t2t_repro"] / result["opennmt_py"] if result["t2t_repro"] and result["opennmt_py"] else None
            record(args.work, {"step": "speed", "round": round_, "threads": args.threads, "ratio": ratio, **result})

"""t2t-repro-decoder: translates (or parses) text by beam search or by sampling, or scores given translations.

A text file is decoded into another, or standard input line by line.

    t2t-repro-decoder --output_dir=O --decode_from_file=newstest2014.en --decode_to_file=newstest2014.de.out
    t2t-repro-decoder --output_dir=O                      # interactive: each line of stdin answered on stdout
    t2t-repro-decoder --engine=ctranslate2 --model_dir=O/export_ctranslate2/1 --decode_from_file=F --decode_to_file=G
    t2t-repro-decoder --output_dir=O --decode_from_file=F --decode_to_file=G --sampling=topp:0.9 --seed=1 --nbest=4
    t2t-repro-decoder --engine=ctranslate2 --output_dir=O --decode_from_file=F --decode_to_file=G --sampling=topk:10
    t2t-repro-decoder --output_dir=O --decode_from_file=newstest2014.en --score_file=newstest2014.de   # scores
    t2t-repro-decoder --output_dir=O1 --ensemble=O2,O3 --decode_from_file=F --decode_to_file=G   # 3 models as one

With the tensorflow engine (the default) the model is restored from the run's averaged checkpoint when it is
as new as the last training checkpoint, else from the last training checkpoint, or from --checkpoint (averaged,
latest, best, ckpt-N or a prefix; the decoder says on stderr which one, with its step), and computes in float32
whatever precision the run trained in, or in --serving_precision (e.g. mixed_bfloat16). With
--engine=ctranslate2 it is a CTranslate2 export (t2t-repro-exporter --format=ctranslate2): --model_dir, a
version directory or an export directory (its newest version), by default OUTPUT_DIR/export_ctranslate2.
Beam size, length penalty alpha and extra length default to the run's problem (translation: 4, 0.6, +50,
section 6.1; parsing: 21, 0.3, +300, section 6.3), or to the CTranslate2 export's settings. Output: one line
per input line, in order; with --nbest=N, N lines per input line, best first, each "<score>\\t<text>" where
the score is log-probability / length penalty. Without --decode_from_file, standard input is read line by line
and each line is answered on standard output as soon as it is decoded (tensor2tensor's --decode_interactive).

Sampling (--sampling=topk:K or topp:P, --temperature=T, default 1, --seed=S, default 0) replaces the beam
search by ancestral sampling with the model's cache: each token is drawn from softmax(logits / T) restricted to
the K most likely tokens, or to the fewest most likely tokens whose probability reaches P (nucleus). With
--nbest=N it draws N samples per input, most likely first, each "<log-probability>\\t<text>" (the model's
log-probability of the sample at temperature 1, not length-normalised). topk:1 is greedy decoding: the
outputs of --beam_size=1. With the tensorflow engine a sentence's samples depend only on the seed, the model and
the sentence, not on its batch (which changes their scores within float rounding) nor on its line. With
--engine=ctranslate2 CTranslate2's own sampler draws them (with the same scores) from one random stream for the
whole command, so they also depend on the input lines, their order and the batching (--batch_tokens or
--batch_size). With either engine the same command gives the same output.

Scoring (--score_file=TGT, line-aligned with --decode_from_file=SRC) decodes nothing: for each pair it writes
"<log P(TGT | SRC)>\\t<tokens>\\t<score>", the log-probability of the target given the source under the model
(teacher-forced, EOS included; in float32 or --serving_precision), its token count with EOS, and the score the
beam search would give it, log P / ((5 + tokens) / 6) ** alpha (section 6.1), to --decode_to_file or standard
output, and the corpus perplexity exp(-sum log P / sum tokens) to standard error. Sources are read as decoding
reads them; an empty source line is not scored ("0.000000\\t0\\t0.000000"). The beam search's own outputs score
what it reported for them when their text encodes back to the same tokens. Scoring needs the tensorflow engine.

With --ensemble, the models of more runs (of the same problem and vocabulary; of any size) decode together
with the run's in one beam search, each step's next-token probability the mean of theirs (fairseq's
ensembles); the settings, post-processing and --checkpoint are the first run's (--output_dir).
"""

import sys
import time

from t2t_repro.cli.common import (
    ArgumentParser, add_checkpoint_flag, add_ensemble_flag, add_settings_flags, add_usr_dir_flag, ctranslate2_jobs,
    ensemble_dirs, import_usr_dir, quiet_tensorflow, run_main, settings_from_flags, settings_values, show_info_logs,
)
from t2t_repro.decode_settings import DEFAULT_BATCH_TOKENS, DecodeSettings, SamplingSettings, check_batching
from t2t_repro.errors import UserError
from t2t_repro.serve.options import CTRANSLATE2, EngineSettings

# Flags with no effect on what --score_file and --sampling compute: refused there, so that none is ignored.
NOT_SCORING = ("beam_size", "nbest", "extra_length", "unfinished_compete", "sampling", "temperature", "seed",
               "ensemble", "jit_compile", "keep_finished")
NOT_SAMPLING = ("beam_size", "alpha", "unfinished_compete", "ensemble", "jit_compile", "keep_finished")


def build_parser():
    parser = ArgumentParser(
        prog="t2t-repro-decoder",
        description=__doc__.splitlines()[0],
        epilog="Output format: one line per input; with --nbest=N, N lines per input, each '<score>\\t<text>' (beam "
               "search: log-probability / length penalty; --sampling: log-probability). --score_file: one line per "
               "pair, '<log-probability>\\t<tokens with EOS>\\t<log-probability / length penalty>', and the "
               "perplexity on standard error. Unset decode settings take the problem's (or the CTranslate2 "
               "export's) defaults.",
    )
    add = parser.add_argument
    add("--output_dir", help="the training run's output_dir (required by the tensorflow engine)")
    add("--model_dir", help="ctranslate2 engine: a CTranslate2 export, a version directory or an export directory "
        "(its newest version); default OUTPUT_DIR/export_ctranslate2")
    add("--decode_from_file", help="source text, one sentence per line (UTF-8); without it, standard input is "
        "decoded line by line, each line answered at once on standard output")
    add("--decode_to_file", help="where to write the outputs of --decode_from_file (atomically)")
    add_checkpoint_flag(parser, "tensorflow engine: ")
    add_ensemble_flag(parser, "tensorflow engine: ")
    add_usr_dir_flag(parser)
    add_settings_flags(parser, EngineSettings)
    add_settings_flags(parser, DecodeSettings)
    add_settings_flags(parser, SamplingSettings)
    add("--score_file", help="target text line-aligned with --decode_from_file: score each pair instead of "
        "decoding (log-probability, tokens with EOS, beam score; tab-separated) into --decode_to_file or standard "
        "output, the perplexity to standard error; tensorflow engine")
    add("--batch_size", type=int, help="sentences per batch, instead of --batch_tokens")
    add("--batch_tokens", type=int, help="padded source tokens per batch, sentences of similar length together "
        f"(default {DEFAULT_BATCH_TOKENS}); short sentences go in larger batches")
    add("--jit_compile", action="store_true", default=None, help="tensorflow engine, beam search: compile the "
        "search loop with XLA, every step in the same shapes (for GPUs and TPUs; on a CPU it measured many times "
        "slower); scores may differ in the last digits")
    add("--keep_finished", action="store_true", default=None, help="tensorflow engine, beam search: search "
        "every sentence of a batch until the batch's last search ends, as versions before 2026-11-27 did, instead "
        "of dropping each sentence once done: the same outputs, slower, with scores bit for bit as then")
    add("--quiet", action="store_true", help="no progress bar")
    return parser


def _refuse(args, names, what):
    """UserError for the first of the flags `names` given (not None) that does not apply to `what`."""
    for name in names:
        if getattr(args, name) is not None:
            raise UserError(f"--{name} does not apply to {what}")


def _batching(args):
    return {"batch_size": args.batch_size, "batch_tokens": args.batch_tokens}


def _check(args, engine):
    """UserError for flags that do not go together, before any model is loaded."""
    check_batching(args.batch_size, args.batch_tokens)
    if args.score_file:
        if not args.decode_from_file:
            raise UserError("--score_file needs --decode_from_file, the source of each of its lines")
        _refuse(args, NOT_SCORING, "--score_file, which scores the given targets")
        if engine.engine == CTRANSLATE2:
            raise UserError("--score_file needs --engine=tensorflow: it scores as the project's beam search does, "
                            "with PAD removed from the softmax, where CTranslate2's scoring normalises over it")
    elif bool(args.decode_from_file) != bool(args.decode_to_file):
        raise UserError("--decode_from_file and --decode_to_file go together; without both, standard input is "
                        "decoded to standard output")
    if args.sampling:
        _refuse(args, NOT_SAMPLING, "--sampling, which draws outputs instead of searching for them")
    if engine.engine == CTRANSLATE2:
        if args.ensemble is not None:
            raise UserError("--ensemble is for the tensorflow engine: a CTranslate2 export holds one model")
        if args.jit_compile:
            raise UserError("--jit_compile is for the tensorflow engine: CTranslate2 runs its own compiled search")
        if args.keep_finished:
            raise UserError("--keep_finished is for the tensorflow engine: CTranslate2 runs its own search")
        if args.constrained_output:
            raise UserError("--constrained_output=true is for the tensorflow engine: CTranslate2's search has no "
                            "output constraint")
        if args.checkpoint:
            raise UserError("--checkpoint is for the tensorflow engine: a CTranslate2 export holds one checkpoint "
                            "(export another with t2t-repro-exporter --format=ctranslate2 --checkpoint=...)")
        if not (args.model_dir or args.output_dir):
            raise UserError("--engine=ctranslate2 needs --model_dir (a CTranslate2 export) or --output_dir")
    else:
        if args.model_dir:
            raise UserError("--model_dir is for --engine=ctranslate2; the tensorflow engine decodes with the run "
                            "in --output_dir")
        if not args.output_dir:
            raise UserError("the following arguments are required: --output_dir")


def _main(argv):
    args = build_parser().parse_args(argv)
    engine = settings_from_flags(args, EngineSettings)
    _check(args, engine)
    sampling = settings_from_flags(args, SamplingSettings)
    ensemble = ensemble_dirs(args.ensemble)
    decode_flags = settings_values(args, DecodeSettings)
    if engine.engine == CTRANSLATE2:
        jobs = ctranslate2_jobs()
    else:
        quiet_tensorflow()
        from t2t_repro.run import jobs
    show_info_logs()
    import_usr_dir(args.t2t_usr_dir)
    from t2t_repro.run import text_decoder

    # Every check that can refuse the command, before a model is loaded.
    if args.score_file:
        text_decoder.check_score_paths(args.decode_from_file, args.score_file, args.decode_to_file)
    elif args.decode_from_file:
        text_decoder.check_file_paths(args.decode_from_file, args.decode_to_file)
    if engine.engine != CTRANSLATE2:
        from t2t_repro.run.restore import check_decode_flags

        flags = decode_flags if args.score_file or not sampling.sampling else text_decoder.sampling_flags(decode_flags)
        check_decode_flags(args.output_dir, args.t2t_usr_dir, **flags)
    if args.score_file:
        scorer = jobs.run_scorer(args.output_dir, args.checkpoint, engine.serving_precision, args.t2t_usr_dir,
                                 **decode_flags)
        text_decoder.score_file(scorer, args.decode_from_file, args.score_file, args.decode_to_file,
                                progress=not args.quiet, **_batching(args))
        return 0
    if engine.engine == CTRANSLATE2:
        decoder = jobs.export_decoder(args.model_dir, args.output_dir, engine.threads, args.t2t_usr_dir,
                                      sampling=sampling, **decode_flags)
    else:
        decoder = jobs.run_decoder(args.output_dir, args.checkpoint, engine.serving_precision, args.t2t_usr_dir,
                                   ensemble, sampling=sampling, jit_compile=bool(args.jit_compile),
                                   keep_finished=bool(args.keep_finished), **decode_flags)
    if not args.decode_from_file:
        text_decoder.decode_interactive(decoder, sys.stdin.buffer, sys.stdout)
        return 0
    started = time.perf_counter()
    count = text_decoder.decode_file(decoder, args.decode_from_file, args.decode_to_file,
                                     progress=not args.quiet, **_batching(args))
    print(f"wrote {count} outputs to {args.decode_to_file} in {time.perf_counter() - started:.1f} s",
          file=sys.stderr)
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()

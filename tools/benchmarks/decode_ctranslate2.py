"""The decode suite's CTranslate2 engine: the suite's random-weight model exported with the project's own
CTranslate2 export (t2t_repro.serve.ctranslate2_spec) and decoded by ctranslate2.Translator.

Equal work with the TensorFlow search the suite times: the same source ids, the same beam, and outputs of
exactly --output_length tokens for every hypothesis (EOS is disabled until then by CTranslate2's
min_decoding_length, as the TensorFlow search disables it with an id no token has).
"""

import statistics
import tempfile

from benchmarks import measurement, progress
from benchmarks.timing import interleaved_times
from t2t_repro.errors import UserError
from t2t_repro.serve.options import QUANTIZATIONS


class SyntheticVocabulary:
    """Piece strings for ids with no vocabulary behind them: the special pieces, then "t<id>"."""

    _SPECIAL = ("<pad>", "</s>", "<unk>")

    def __init__(self, vocab_size):
        self.vocab_size = vocab_size

    def id_to_piece(self, token):
        return self._SPECIAL[token] if token < len(self._SPECIAL) else f"t{token}"


def build_ctranslate2_decode(model, inputs, args, work_dir):
    """(call, info): `call()` beam-decodes `inputs` (numpy ids [batch, src_len]) with CTranslate2 from `model`
    exported in args.quantization; info describes the engine for the config."""
    import ctranslate2

    from t2t_repro.data.vocabulary import Vocabularies
    from t2t_repro.serve.ctranslate2_spec import transformer_spec

    if args.quantization not in QUANTIZATIONS:
        raise UserError(f"--quantization={args.quantization}: one of {', '.join(QUANTIZATIONS)}")
    vocabulary = SyntheticVocabulary(model.vocab_size)
    progress(f"decode: exporting the model to CTranslate2 ({args.quantization})")
    spec = transformer_spec(model, Vocabularies.shared_one(vocabulary), max(args.src_len, args.output_length) + 1)
    spec.validate()
    spec.optimize(quantization=args.quantization)
    directory = tempfile.mkdtemp(prefix="ctranslate2-", dir=work_dir)
    spec.save(directory)
    translator = ctranslate2.Translator(directory, device="cpu", compute_type="default",
                                        intra_threads=args.ctranslate2_threads)
    sources = [[vocabulary.id_to_piece(int(token)) for token in row] for row in inputs]  # the same ids
    options = dict(beam_size=args.beam_size, num_hypotheses=1, max_decoding_length=args.output_length,
                   min_decoding_length=args.output_length, max_input_length=0, length_penalty=0.6)

    def call():
        return translator.translate_batch(sources, **options)

    lengths = {len(result.hypotheses[0]) for result in call()}
    if lengths != {args.output_length}:
        raise RuntimeError(f"CTranslate2 produced outputs of {sorted(lengths)} tokens, not {args.output_length}")
    return call, {"quantization": args.quantization, "compute_type": translator.compute_type,
                  "ctranslate2_version": ctranslate2.__version__,
                  "ctranslate2_threads": args.ctranslate2_threads or "default"}


TARGET_INT8_SPEEDUP = 1.7  # over the project's float32 TensorFlow search


def run_ctranslate2(args, model, inputs, tensorflow_call, config, warmup, repeats):
    """The CTranslate2 engine's output tokens per second, timed in turns with the TensorFlow cached search
    (`tensorflow_call`) as its peer when --peer=tensorflow."""
    with tempfile.TemporaryDirectory(prefix="t2t-repro-decode-bench-") as work_dir:
        call, info = build_ctranslate2_decode(model, inputs, args, work_dir)
        calls = {"ctranslate2": call}
        if args.peer == "tensorflow":
            calls["tensorflow"] = tensorflow_call
        progress(f"decode: {', '.join(calls)}: {warmup} warm-up and {repeats} timed batches each, in turns")
        seconds = {name: statistics.median(times) for name, times in interleaved_times(calls, warmup, repeats).items()}
    progress(f"decode: {', '.join(f'{n} {s * 1e3:.0f} ms' for n, s in seconds.items())} per batch")
    tokens = args.decode_batch * args.output_length
    config = {**config, **info, "engine": "ctranslate2", "batch_ms": seconds["ctranslate2"] * 1e3}
    peer = {}
    if "tensorflow" in seconds:
        ratio = seconds["tensorflow"] / seconds["ctranslate2"]
        peer = {"peer": "tensorflow", "peer_value": tokens / seconds["tensorflow"]}
        config.update(peer_batch_ms=seconds["tensorflow"] * 1e3, peer_precision=model.hparams.precision)
        if args.quantization.startswith("int8"):
            config.update(target=f">= {TARGET_INT8_SPEEDUP:g}", meets_target=ratio >= TARGET_INT8_SPEEDUP)
    return [measurement("decode_tokens_per_s_ctranslate2", tokens / seconds["ctranslate2"], "tokens/s", config,
                        **peer)]

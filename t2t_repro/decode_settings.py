"""DecodeSettings: the beam search settings of one decoding job, validated once; SamplingSettings: sampling
instead of searching.

Each problem has its own defaults (section 6.1 translation: beam 4, alpha 0.6, input length + 50; section 6.3
parsing: beam 21, alpha 0.3, input length + 300); a user's flags override them:

    settings = problem.decode_settings.override(beam_size=args.beam_size, max_input_length=hparams.max_length)

`override` ignores None (a flag that was not given), so the command lines pass their flags straight through.
"""

import dataclasses
import math

from t2t_repro.errors import UserError
from t2t_repro.settings import check_fields, check_interval, setting

# Padded source tokens per decoding batch (`t2t_repro.decode.decode_text.length_sorted_batches`), chosen by
# measurement (docs/decoding.md).
DEFAULT_BATCH_TOKENS = 1024


def check_batching(batch_size, batch_tokens):
    """UserError unless at most one of a batch size in lines and one in tokens is given, each at least 1."""
    if batch_size is not None and batch_tokens is not None:
        raise UserError("give --batch_size (sentences) or --batch_tokens (tokens) per batch, not both")
    for name, value in (("batch_size", batch_size), ("batch_tokens", batch_tokens)):
        if value is not None and value < 1:
            raise UserError(f"--{name}={value}: must be at least 1")


@dataclasses.dataclass(frozen=True)
class DecodeSettings:
    """Beam search settings; the defaults are the paper's translation settings (section 6.1)."""

    beam_size: int = setting(4, "beam width; 1 is greedy decoding")
    alpha: float = setting(0.6, "length penalty exponent: score = log P / ((5 + |Y|) / 6) ** alpha", minimum=0)
    extra_length: int = setting(50, "longest output = input length + this", minimum=0)
    max_input_length: int | None = setting(
        None, "longest source in tokens with EOS; longer ones are truncated (default: the run's max_length)",
        minimum=2,
    )
    nbest: int = setting(1, "hypotheses returned per input, best first (at most the beam size)")
    unfinished_compete: bool = setting(
        False, "rank hypotheses cut at the maximum length (no EOS) with those that ended with EOS, by score alone; "
        "by default, as tensor2tensor, cut ones are used only when no hypothesis ended with EOS"
    )
    constrained_output: bool = setting(
        True, "where the problem constrains its outputs (parsing), extend only hypotheses that can still become "
        "well formed (a tree with one tag per source word, balanced brackets); false: the model's output as it is "
        "(parsing repairs it onto the words afterwards)"
    )

    def __post_init__(self):
        check_fields(self, "decode setting")
        if self.nbest > self.beam_size:
            raise UserError(f"nbest={self.nbest} is larger than the beam size {self.beam_size}; raise beam_size")

    def override(self, **values):
        """A copy with the given values replaced; None values (flags not given) keep the current ones."""
        unknown = sorted(set(values) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise TypeError(f"unknown decode settings {', '.join(unknown)}")
        return dataclasses.replace(self, **{name: value for name, value in values.items() if value is not None})

    def to_dict(self):
        return dataclasses.asdict(self)

    def export_record(self):
        """The settings an export records as its decode settings: nbest only when it is more than one and
        constrained_output only when false, so that an export records what exports recorded before either
        existed, and one that does not name them reads back with their defaults."""
        return {name: value for name, value in self.to_dict().items() if (name, value) not in _RECORDED_WHEN_DEFAULT}

    def describe(self):
        """The settings in words, for logs: beam 4, alpha 0.6, max length input + 50."""
        unconstrained = "" if self.constrained_output else ", unconstrained"
        return f"beam {self.beam_size}, alpha {self.alpha}, max length input + {self.extra_length}{unconstrained}"


# Settings an export leaves out of its record at these values (`DecodeSettings.export_record`).
_RECORDED_WHEN_DEFAULT = {("nbest", 1), ("constrained_output", True)}

# Section 6.1.
TRANSLATION_DECODE_SETTINGS = DecodeSettings(beam_size=4, alpha=0.6, extra_length=50)
# Section 6.3.
PARSING_DECODE_SETTINGS = DecodeSettings(beam_size=21, alpha=0.3, extra_length=300)


TOP_K = "topk"
TOP_P = "topp"


@dataclasses.dataclass(frozen=True)
class SamplingSettings:
    """Ancestral sampling instead of beam search: each output token drawn from the model's distribution at
    `temperature`, restricted to its K most likely tokens (topk:K) or to the nucleus, the fewest most likely
    tokens whose probability reaches P (topp:P). `sampling` None: beam search, the paper's decoding."""

    sampling: str | None = setting(
        None, "sample instead of beam search: topk:K draws each token among the K most likely (topk:1 is greedy "
        "decoding), topp:P among the fewest most likely whose probability reaches P (nucleus, 0 < P <= 1); with "
        "--nbest=N, N samples per input, each scored by its log-probability under the model (both engines: at "
        "temperature 1, before top-k/top-p, not length-normalised)",
    )
    temperature: float = setting(1.0, "sampling: the logits are divided by it before the softmax (> 0; below 1 "
                                      "sharper, above 1 flatter)")
    seed: int = setting(0, "sampling: the random seed; the same command gives the same samples (tensorflow "
                           "engine: the same seed, model and sentence; ctranslate2: one random stream for the "
                           "command, so they also depend on the input lines, their order and the batch size)",
                        minimum=0)

    def __post_init__(self):
        check_fields(self, "sampling setting")
        check_interval(self, "sampling setting", ["temperature"], 0, low_open=True)
        if self.sampling is None:
            if (self.temperature, self.seed) != (1.0, 0):
                raise UserError("--temperature and --seed apply to --sampling only")
            return
        method, value = self.parsed
        if method == TOP_K and value < 1:
            raise UserError(f"--sampling={self.sampling}: K must be at least 1")
        if method == TOP_P and not 0 < value <= 1:
            raise UserError(f"--sampling={self.sampling}: P must be in (0, 1]")

    @property
    def parsed(self):
        """(TOP_K, K as int) or (TOP_P, P as float); UserError for a malformed value."""
        method, _, text = self.sampling.partition(":")
        kind = {TOP_K: int, TOP_P: float}.get(method.strip())
        try:
            value = kind(text.strip())
        except (TypeError, ValueError):
            value = None
        if value is None or (kind is float and not math.isfinite(value)):
            raise UserError(f"--sampling={self.sampling!r}: expected topk:K (an integer K >= 1) or topp:P "
                            "(0 < P <= 1)")
        return method.strip(), value

    def describe(self, settings):
        """The sampling in words with the samples per input and longest output of `settings` (DecodeSettings)."""
        samples = f", {settings.nbest} samples per input" if settings.nbest > 1 else ""
        return (f"sampling {self.sampling}, temperature {self.temperature}, seed {self.seed}{samples}, "
                f"max length input + {settings.extra_length}")

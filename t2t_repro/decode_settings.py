"""DecodeSettings: the beam search settings of one decoding job, validated once.

Each problem has its own defaults (section 6.1 translation: beam 4, alpha 0.6, input length + 50; section 6.3
parsing: beam 21, alpha 0.3, input length + 300); a user's flags override them:

    settings = problem.decode_settings.override(beam_size=args.beam_size, max_input_length=hparams.max_length)

`override` ignores None (a flag that was not given), so the command lines pass their flags straight through.
"""

import dataclasses

from t2t_repro.errors import UserError
from t2t_repro.settings import check_fields, setting


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
        """The settings an export records as its decode settings: nbest only when it is more than one, so
        that a 1-best export records what exports recorded before they could return n-best lists, and an
        export that does not name nbest reads back as 1-best."""
        return {name: value for name, value in self.to_dict().items() if name != "nbest" or value != 1}

    def describe(self):
        """The settings in words, for logs: beam 4, alpha 0.6, max length input + 50."""
        return f"beam {self.beam_size}, alpha {self.alpha}, max length input + {self.extra_length}"


# Section 6.1.
TRANSLATION_DECODE_SETTINGS = DecodeSettings(beam_size=4, alpha=0.6, extra_length=50)
# Section 6.3.
PARSING_DECODE_SETTINGS = DecodeSettings(beam_size=21, alpha=0.3, extra_length=300)

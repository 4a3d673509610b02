"""HParams: every setting the model, training and checkpoint averaging read, as one frozen dataclass.

Sets are functions registered in `t2t_repro.hparams` that return an HParams, usually derived from another set
with `dataclasses.replace`. Users change a set on the command line with `--hparams_overrides`:

    hparams = apply_overrides(get_hparams("transformer_base"), "num_layers=4,dropout=0.3,shared_embedding=false")

Each field is declared once, with its help (`t2t-repro-trainer --hparams_help` prints them). Decoding settings
(beam size, length penalty, extra length) belong to the Problem, as in the paper each task has its own
(section 6.1 translation, section 6.3 parsing).
"""

import dataclasses
import json

from t2t_repro.errors import UserError
from t2t_repro import settings
from t2t_repro.settings import check_fields, check_interval, setting

_DROPOUT = dict(minimum=0.0)
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
# Length buckets 5% apart: at the paper's 25,000-token batches about 90% of the positions are real tokens;
# tensor2tensor's 10% makes half as many batch shapes (which matters only where each shape is compiled: XLA)
# and pads about 2% more.
DEFAULT_BUCKET_GROWTH = 1.05


@dataclasses.dataclass(frozen=True)
class HParams:
    """The configuration of one Transformer experiment. Defaults are the paper's base model (Table 3, base)."""

    # Model (section 3).
    num_layers: int = setting(6, "N: layers in the encoder and in the decoder (section 3.1)")
    d_model: int = setting(512, "width of every sub-layer output and embedding (section 3.1)")
    d_ff: int = setting(2048, "inner width of the position-wise feed-forward network (section 3.3)")
    num_heads: int = setting(8, "h: attention heads (section 3.2.2)")
    d_k: int = setting(64, "query/key width per head (section 3.2.2)")
    d_v: int = setting(64, "value width per head (section 3.2.2)")
    attention_bias: bool = setting(
        False, "biases in the attention projections W^Q, W^K, W^V, W^O: equation 4 (section 3.2.2) and "
        "tensor2tensor have none; true is the Keras default, and reads checkpoints made before this option"
    )
    dropout: float = setting(0.1, "P_drop: residual dropout and dropout on embedding sums (section 5.4)", **_DROPOUT)
    attention_dropout: float = setting(0.0, "dropout on attention weights (not in the paper's sets)", **_DROPOUT)
    relu_dropout: float = setting(0.0, "dropout after the feed-forward ReLU (not in the paper's sets)", **_DROPOUT)
    shared_embedding: bool = setting(
        True, "one matrix for source and target embeddings and the pre-softmax projection (section 3.4)"
    )
    position_encoding: str = setting(
        "sinusoid", "sinusoid (section 3.5) or learned (Table 3 row E)", choices=("sinusoid", "learned")
    )
    max_position: int = setting(1024, "number of learned positions (used only with position_encoding=learned)")
    norm_placement: str = setting(
        "post", "post: LayerNorm(x + Sublayer(x)) as the paper (section 3.1); pre: x + Sublayer(LayerNorm(x))",
        choices=("post", "pre"),
    )
    layer_norm_epsilon: float = setting(1e-6, "epsilon of every layer normalization (unstated in the paper)")
    vocab_multiple: int = setting(
        1, "embedding rows rounded up to a multiple of this (8 suits tensor cores); the extra ids are never "
        "predicted and take no label-smoothing mass, so the loss and decoding are those of the real vocabulary"
    )

    # Numerics (the paper trained in float32 on P100s, section 5.2).
    precision: str = setting(
        "float32", "float32 (the paper), mixed_bfloat16 or mixed_float16 (float32 weights, softmaxes, layer-norm "
        "statistics and loss; mixed_float16 adds dynamic loss scaling)", choices=PRECISIONS,
    )
    tf32: bool = setting(
        True, "on Ampere and newer GPUs, let float32 matmuls run in TF32 (TensorFlow's default); false: strict "
        "float32 as on the paper's P100s"
    )

    # Training (section 5).
    label_smoothing: float = setting(0.1, "epsilon_ls (section 5.4)", **_DROPOUT)
    learning_rate_scale: float = setting(1.0, "factor on the paper's learning-rate formula (1.0 in the paper)")
    warmup_steps: int = setting(4000, "warmup_steps of the learning-rate formula (section 5.3)")
    adam_beta1: float = setting(0.9, "Adam beta1 (section 5.3)")
    adam_beta2: float = setting(0.98, "Adam beta2 (section 5.3)")
    adam_epsilon: float = setting(1e-9, "Adam epsilon (section 5.3)")
    train_steps: int = setting(100_000, "optimizer updates (section 5.2)")
    batch_tokens: int = setting(
        25_000, "tokens per batch on each side, padding included: ~25,000 source + 25,000 target (section 5.1)"
    )
    max_length: int = setting(256, "training pairs longer than this on either side (in subword tokens) are dropped")
    bucket_growth: float = setting(
        DEFAULT_BUCKET_GROWTH, "factor between the padded lengths of the length buckets (batching by approximate "
        "length, section 5.1): smaller pads less and makes more batch shapes; tensor2tensor's is 1.1"
    )
    checkpoint_average_count: int = setting(5, "last checkpoints averaged for evaluation: 5 base, 20 big (section 6.1)")

    def __post_init__(self):
        # Types, finiteness, choices, and integers at least 1 (counts and sizes) come with the fields.
        check_fields(self, "hparams")
        probabilities = ("dropout", "attention_dropout", "relu_dropout", "label_smoothing", "adam_beta1", "adam_beta2")
        check_interval(self, "hparams", probabilities, 0.0, 1.0)
        check_interval(self, "hparams", ("layer_norm_epsilon", "learning_rate_scale", "adam_epsilon"), 0.0,
                       low_open=True)
        check_interval(self, "hparams", ("max_length",), 2)  # one token and EOS
        check_interval(self, "hparams", ("bucket_growth",), 1.0, 2.0, low_open=True, high_open=False)
        if self.position_encoding == "learned" and self.max_position < self.max_length:
            raise UserError(f"hparams max_position={self.max_position} is below max_length={self.max_length}: "
                            "learned positions must cover the longest training pair")

    def to_dict(self):
        return dataclasses.asdict(self)

    def to_json(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, values):
        unknown = sorted(set(values) - set(field_names()))
        if unknown:
            raise UserError(f"unknown hparams {', '.join(unknown)}")
        return cls(**values)

    def differing_keys(self, other):
        """Names of the fields whose values differ between two HParams."""
        return settings.differing_keys(self, other)


def field_names():
    return [f.name for f in dataclasses.fields(HParams)]


def parse_overrides(text):
    """Parses "key=value,key=value" into a dict typed by the HParams fields."""
    return settings.parse_overrides(HParams, text, "hparams")


def apply_overrides(hparams, text):
    """Returns `hparams` with the overrides in `text` ("key=value,...") applied and validated."""
    return settings.apply_overrides(hparams, text, "hparams")

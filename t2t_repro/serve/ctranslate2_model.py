"""A CTranslate2 export loaded for decoding: its translator, vocabulary and decode settings, and a batch search
that scores and ranks as the project's own beam search does.

    model = CTranslate2Model("runs/wmt_ende/export_ctranslate2/1")
    settings = model.decode_settings(beam_size=4)        # the export's settings, flags on top
    search = model.search(settings)                      # a batch search of t2t_repro.decode.decode_text
    results = search([[4, 17, 9, EOS_ID]])               # per source: nbest (target ids, score), best first

How the results relate to `t2t_repro.decode.beam_search` (section 6.1), in float32:

- greedy search (beam 1) takes the same token at every step (PAD is never generated: it is suppressed before
  the softmax, as there), stops at EOS or at the same maximum length, and scores log P / lp(|Y|) with the
  GNMT penalty lp(|Y|) = ((5 + |Y|) / 6) ** alpha: the same outputs, and scores equal up to float rounding;
- beam search: CTranslate2 searches with its own rules and its own length penalty |Y| ** beta, which is not
  GNMT's; the hypotheses it finishes are rescored here with the GNMT penalty (log P recovered exactly from its
  score) and ranked as tensor2tensor ranks them (those ending in EOS before those cut at the maximum length,
  unless unfinished_compete). beta = alpha * n / (5 + n), n the source length, makes both penalties grow alike
  near the source length; it only decides which hypotheses CTranslate2 keeps when more than it returns end
  at once. What can differ is the search itself: CTranslate2 stops a sentence once beam_size x PATIENCE
  hypotheses have ended, where tensor2tensor goes on while an unfinished hypothesis could still win, and it
  ends hypotheses only from its beam_size best candidates of a step (tensor2tensor: 2 x beam_size). So a
  sentence's best output can differ when the two searches find different hypotheses: rarely (measured in
  README.md's serving section).

Sampling with the export is `t2t_repro.serve.ctranslate2_sampling`'s.

A sentence's maximum output length is its source length (EOS included) + extra_length, as section 6.1's
"input length + 50". A batch is searched at once up to the longest of its sentences' maxima; a sentence whose
hypotheses reached its own maximum is searched again with it (greedy: exactly as the project's search; beam:
but for the rare sentence whose search ended with its last hypotheses dropped by CTranslate2's ranking).
"""

import ctranslate2

from t2t_repro.data.vocabulary import Vocabularies, Vocabulary
from t2t_repro.decode.beam_search import length_penalty
from t2t_repro.decode_settings import DecodeSettings
from t2t_repro.errors import UserError, first_line
from t2t_repro.serve.export_files import CTRANSLATE2_SIDE_VOCABULARIES, CTRANSLATE2_VOCABULARY, read_export_metadata
from t2t_repro.serve.options import CTRANSLATE2
from t2t_repro.special_tokens import EOS_ID, PAD_ID

# CTranslate2's beam search ends a sentence once beam_size x PATIENCE hypotheses have ended (its "patience
# factor", Kasai et al. 2022); tensor2tensor's goes on while an unfinished hypothesis could still win.
PATIENCE = 2.0
_NO_HYPOTHESIS = ([], float("-inf"))  # an empty slot, as the project's beam search marks one


class CTranslate2Model:
    """A CTranslate2 export version (t2t-repro-exporter --format=ctranslate2) loaded on the CPU.

    Args:
        version_dir: the version directory (export_dir/<N>).
        threads: CPU threads per translation (0: CTranslate2's default).
    """

    def __init__(self, version_dir, threads=0):
        self.version_dir = version_dir
        self.metadata = read_export_metadata(version_dir)
        if self.metadata.get("format") != CTRANSLATE2:
            raise UserError(f"{version_dir} is not a CTranslate2 export of this project (no t2t_repro_export.json "
                            "with format ctranslate2): export one with t2t-repro-exporter --format=ctranslate2")
        try:
            self.translator = ctranslate2.Translator(version_dir, device="cpu", compute_type="default",
                                                     intra_threads=threads)
        except (RuntimeError, ValueError, OSError) as error:
            raise UserError(f"cannot load the CTranslate2 model in {version_dir}: {first_line(error)}") from None
        if self.metadata.get("shared_vocabulary", True):
            self.vocabularies = Vocabularies.shared_one(Vocabulary(f"{version_dir}/{CTRANSLATE2_VOCABULARY}"))
        else:
            self.vocabularies = Vocabularies(*(Vocabulary(f"{version_dir}/{CTRANSLATE2_SIDE_VOCABULARIES[side]}")
                                               for side in ("source", "target")))
        self.source_pieces, self.pieces = (
            [vocabulary.id_to_piece(token) for token in range(vocabulary.vocab_size)]
            for vocabulary in (self.vocabularies.source, self.vocabularies.target))
        self.piece_ids = {piece: token for token, piece in enumerate(self.pieces)}
        self.settings = DecodeSettings(**self.metadata["decode"])
        self.positions = self.metadata["positions"]
        self.outputs_stop_at_positions = self.metadata.get("outputs_stop_at_positions", False)
        self._seeded = False

    @property
    def quantization(self):
        return self.metadata.get("quantization")

    def decode_settings(self, **flags):
        """The export's decode settings with the given flags (None: not given) on top; UserError if they would
        read past the position table."""
        settings = self.settings.override(**flags)
        if settings.max_input_length > self.positions:
            raise UserError(f"max_input_length={settings.max_input_length}: this export reads sources of at most "
                            f"{self.positions} tokens")
        longest = settings.max_input_length + settings.extra_length
        if not self.outputs_stop_at_positions and longest > self.positions:
            raise UserError(f"max_input_length + extra_length = {longest}: this export's position table covers "
                            f"{self.positions} positions; export again with these settings")
        return settings

    def max_output_length(self, source_length, settings):
        """The longest output of a source of `source_length` tokens (EOS included) with `settings`."""
        longest = source_length + settings.extra_length
        return min(longest, self.positions) if self.outputs_stop_at_positions else longest

    def pieces_of(self, ids):
        """The tokens CTranslate2 reads for these source ids."""
        return [self.source_pieces[token] for token in ids]

    def ids_of(self, pieces):
        """The target ids of the tokens CTranslate2 wrote."""
        return [self.piece_ids[piece] for piece in pieces]

    def seed_random_stream(self, seed):
        """Seeds the random numbers this translator's sampling draws. CTranslate2 seeds a worker thread's
        generator from ctranslate2.set_random_seed at the thread's first draw, and never again: a second seed
        would be ignored, so it is refused (RuntimeError)."""
        if self._seeded:
            raise RuntimeError(f"the CTranslate2 model {self.version_dir} was seeded already: load it again")
        ctranslate2.set_random_seed(seed)
        self._seeded = True

    def greedy_options(self):
        """translate_batch's arguments of a greedy search (beam_size 1), but its maximum length: PAD suppressed,
        EOS returned, and the scores log P (CTranslate2 sums the log-probabilities when its penalty is 0)."""
        return dict(min_decoding_length=0, max_input_length=0, suppress_sequences=[[self.pieces[PAD_ID]]],
                    return_end_token=True, return_scores=True, beam_size=1, num_hypotheses=1, length_penalty=0.0)

    def _options(self, settings, source_length, max_length):
        greedy = dict(self.greedy_options(), max_decoding_length=max_length)
        if settings.beam_size == 1:
            return greedy
        patience_hypotheses = round(settings.beam_size * PATIENCE)
        beta = settings.alpha * source_length / (5.0 + source_length)
        return dict(greedy, beam_size=settings.beam_size, patience=PATIENCE, num_hypotheses=patience_hypotheses,
                    length_penalty=beta)

    def _translate(self, sources, max_length, settings):
        """CTranslate2's results for `sources` searched up to `max_length` tokens, each with its length penalty."""
        mean_length = sum(len(ids) for ids in sources) / len(sources)
        options = self._options(settings, mean_length, max_length)
        tokens = [self.pieces_of(ids) for ids in sources]
        return [(result, options["length_penalty"]) for result in self.translator.translate_batch(tokens, **options)]

    def _ranked(self, result, settings, beta, nbest):
        """The nbest hypotheses of one CTranslate2 result as (ids, GNMT score), ranked as tensor2tensor ranks."""
        ranked = []
        for pieces, score in zip(result.hypotheses, result.scores):
            ids = self.ids_of(pieces)
            log_prob = score * len(ids) ** beta if beta else score
            gnmt_score = log_prob / length_penalty(len(ids), settings.alpha)
            cut = not ids or ids[-1] != EOS_ID
            ranked.append((cut and not settings.unfinished_compete, -gnmt_score, ids))
        ranked.sort(key=lambda entry: entry[:2])
        best = [(ids, -negative_score) for _, negative_score, ids in ranked[:nbest]]
        return best + [_NO_HYPOTHESIS] * (nbest - len(best))

    def search(self, settings):
        """The batch search of `t2t_repro.decode.decode_text` with these settings (see `decode_settings`):
        sources are lists of ids ending in EOS, without PAD."""

        def run(sources):
            limits = [self.max_output_length(len(ids), settings) for ids in sources]
            results = self._translate(sources, max(limits), settings)
            # A sentence whose search reached its own maximum length is searched again with it, so that its
            # hypotheses are cut there (as in the project's search); the others ended before, as they would have.
            again = {}
            for index, ((result, _), limit) in enumerate(zip(results, limits)):
                if limit < max(limits) and max(map(len, result.hypotheses), default=0) >= limit:
                    again.setdefault(limit, []).append(index)
            for limit, indices in again.items():
                for index, result in zip(indices, self._translate([sources[i] for i in indices], limit, settings)):
                    results[index] = result
            return [self._ranked(result, settings, beta, settings.nbest) for result, beta in results]

        return run

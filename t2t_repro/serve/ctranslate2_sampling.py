"""Sampling with a CTranslate2 export (t2t-repro-decoder --engine=ctranslate2 --sampling=topk:K|topp:P
--temperature=T --seed=S --nbest=N): CTranslate2's own sampler in its greedy search (beam_size 1).

    model = CTranslate2Model("runs/wmt_ende/export_ctranslate2/1")
    settings = model.decode_settings(beam_size=3, nbest=3)          # nbest: the samples per input
    search = sampling_search(model, settings, SamplingSettings("topp:0.9", temperature=0.8, seed=3))
    results = search([[4, 17, 9, EOS_ID]])   # per source: nbest (target ids, log-probability), most likely first

What is drawn: CTranslate2 keeps the K most likely tokens (sampling_topk; 0, all of them, for topp), divides
their log-probabilities by the temperature (sampling_temperature), keeps the nucleus of that tempered
distribution (sampling_topp) and draws a token from it, PAD suppressed before the softmax as in the beam
search; the same distribution `t2t_repro.decode.sampling` draws from, by other random numbers. topk:1 takes the
most likely token at every step: the outputs of the greedy search (--beam_size=1).

Scores: with length_penalty 0 CTranslate2 returns each sample's sum of token log-probabilities taken before
the top-k, temperature and top-p: log P(Y | X) under the model at temperature 1, normalised over every token but
PAD, not length-normalised. That is the TensorFlow engine's score of a sample (and --score_file's), equal up to
float rounding.

Lengths: a sentence's maximum output length is the beam search's (`CTranslate2Model.max_output_length`).
CTranslate2 takes one maximum per call, so the sentences of a batch are sampled in groups of equal maximum: a
sample cut afterwards at its own maximum would lose its score.

Samples per input: each source is searched N times, one sample a row (CTranslate2's num_hypotheses > 1 is
refused for topk:1, which it decodes without drawing).

Randomness: unlike the TensorFlow engine, whose samples depend only on the seed, the model and the sentence,
CTranslate2 draws from one random stream per loaded translator (the generator of its worker thread, seeded
from ctranslate2.set_random_seed at its first draw). A sentence's samples therefore depend on the seed, the
model and everything this translator sampled before them: the input lines and their order, the batch size
(which sentences share a batch and in which order), and the CTranslate2 build and CPU that compute the
probabilities. The same command gives the same bytes; the same sentence on another line, in another batch or
after other lines of the interactive decoder gets other samples.
"""

from t2t_repro.decode_settings import TOP_P


def _sampling_options(sampling, vocab_size):
    """translate_batch's sampling arguments for `sampling` (a SamplingSettings that names a method)."""
    method, value = sampling.parsed
    if method == TOP_P:
        return dict(sampling_topk=0, sampling_topp=value, sampling_temperature=sampling.temperature)
    return dict(sampling_topk=min(value, vocab_size), sampling_topp=1.0, sampling_temperature=sampling.temperature)


def _most_likely_first(samples):
    """(ids, log-probability) samples sorted by log-probability, highest first; ties keep their order."""
    return sorted(samples, key=lambda sample: -sample[1])


def sampling_search(model, settings, sampling):
    """The batch search (`t2t_repro.decode.decode_text`) that samples settings.nbest outputs per source with
    `sampling` from `model` (a CTranslate2Model), each scored by its log-probability. Seeds the translator's
    random stream (`CTranslate2Model.seed_random_stream`): one sampling search per loaded model."""
    model.seed_random_stream(sampling.seed)
    options = dict(model.greedy_options(), **_sampling_options(sampling, len(model.pieces)))
    samples = settings.nbest

    def run(sources):
        limits = [model.max_output_length(len(ids), settings) for ids in sources]
        drawn = [None] * len(sources)
        for limit in sorted(set(limits)):
            indices = [index for index, own in enumerate(limits) if own == limit]
            rows = [model.pieces_of(sources[index]) for index in indices for _ in range(samples)]
            results = model.translator.translate_batch(rows, max_decoding_length=limit, **options)
            for position, index in enumerate(indices):
                per_source = results[position * samples : (position + 1) * samples]
                drawn[index] = _most_likely_first(
                    [(model.ids_of(result.hypotheses[0]), result.scores[0]) for result in per_source])
        return drawn

    return run

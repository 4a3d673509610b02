"""English sentences and their Penn Treebank trees from a seeded probabilistic grammar (the toy_* problems).

`toy_parsing` writes the trees as WSJ-layout .mrg files (`write_treebank`); `toy_ende`
(t2t_repro.data.toy.language) translates the same sentence structures into a German-like language. The grammar
has nested clauses (subordinate, "that" complement and relative clauses), prepositional phrases, noun compounds,
coordination of noun phrases and of clauses, yes/no questions, negation, five tenses and modals, agreement and
punctuation, over a vocabulary of a few thousand words: a core of real English words plus stems generated from
syllables (onset, vowel, coda), drawn with Zipf-like frequencies, so word pieces matter as in real text.

Every sentence has exactly one tree: nothing that could attach in two places is generated. Only "of" phrases
attach to nouns and every other prepositional phrase to the verb; a relative, complement or subordinate clause
is always the last part of the clause that holds it; only simple noun phrases are coordinated.

    grammar = Grammar(seed=1)
    tree = grammar.tree(grammar.sample(random.Random(0)))   # a t2t_repro.data.ptb_tree.Tree
    write_treebank("toy_wsj", seed=1)                        # toy_wsj/02/wsj_0200.mrg ... toy_wsj/23/...
"""

import dataclasses
import itertools
import os
import random

from t2t_repro.data.ptb_tree import Tree
from t2t_repro.data.toy.lexicon import ADVERBS, COORDINATORS, NUMERALS, PREPOSITIONS, PRONOUNS, SUBORDINATORS
from t2t_repro.data.toy.lexicon import Lexicon, build_lexicon

TENSES = ("present", "past", "perfect", "future", "can", "must")
_PREPOSITIONS, _ADVERBS, _NUMERALS = tuple(PREPOSITIONS), tuple(ADVERBS), tuple(NUMERALS)
_SUBORDINATORS, _COORDINATORS, _PRONOUN_KEYS = tuple(SUBORDINATORS), tuple(COORDINATORS), tuple(PRONOUNS)


@dataclasses.dataclass
class NounPhrase:
    """A noun phrase: a noun with its determiner and modifiers, a name, a pronoun, or two coordinated phrases."""

    kind: str  # "noun", "name", "pronoun" or "coordination"
    head: object  # a noun Word, a name, a PRONOUNS key, or the pair of NounPhrases joined by "and"
    plural: bool = False
    determiner: str = ""  # "the", "a", a numeral, a PRONOUNS key (possessive: "I" -> "my"), or "" (bare plural)
    adjectives: tuple = ()  # adjective Words
    modifier: object = None  # the first noun of a compound: "apple" in "the apple tree"
    of: object = None  # the NounPhrase of an "of" phrase
    relative: object = None  # a Clause with a gap, introduced by "that"

    @property
    def agreement(self):
        """Person and number: "1sg", "2", "3sg", "1pl" or "3pl"."""
        if self.kind == "pronoun":
            return PRONOUNS[self.head][3]
        return "3pl" if self.plural or self.kind == "coordination" else "3sg"


@dataclasses.dataclass
class Clause:
    """One clause; realisers put its parts in each language's order."""

    subject: object  # NounPhrase; None when the relative pronoun is the subject (gap "subject")
    verb: object  # a verb Word, or None for the copula ("is") with an adjective `predicate`
    tense: str  # one of TENSES ("can", "must": a modal with the infinitive)
    negated: bool = False
    obj: object = None  # direct object (dative in German for verbs of frame "dative")
    recipient: object = None  # "to" phrase of a ditransitive verb (dative in German)
    predicate: object = None  # adjective Word after the copula
    complement: object = None  # Clause after a verb of saying ("that ...")
    pps: tuple = ()  # ((preposition, NounPhrase), ...)
    adverb: str = ""
    front: str = ""  # what precedes the subject: "adverb", "pp" (the first of pps), "subordinate" or ""
    subordinate: object = None  # (subordinator, Clause)
    gap: str = ""  # relative clauses: "subject" or "object" is the relative pronoun
    question: bool = False


@dataclasses.dataclass
class Sentence:
    """A clause, or two clauses joined by a coordinator (", and", ", but", ", or")."""

    first: Clause
    coordinator: str = ""
    second: object = None


def _pick(rng, weights):
    """A key of `weights` (a dict key -> weight)."""
    return rng.choices(tuple(weights), tuple(weights.values()))[0]


class Grammar:
    """Samples sentences from the probabilistic grammar over a seeded lexicon, and builds their English trees."""

    def __init__(self, seed=1, lexicon=None):
        self.lexicon: Lexicon = lexicon if lexicon is not None else build_lexicon(seed)
        self._traces = 0  # trace indices (*T*-1, WHNP-1) given out in the tree being built

    # Sampling --------------------------------------------------------------------------------------------------

    def sample(self, rng):
        """One random Sentence."""
        roll = rng.random()
        if roll < 0.06:
            return Sentence(self.clause(rng, 0, "question"))
        if roll < 0.16:
            first = self.clause(rng, 0, "conjunct")
            return Sentence(first, rng.choice(_COORDINATORS), self.clause(rng, 0, "conjunct_last"))
        return Sentence(self.clause(rng, 0, "main"))

    def clause(self, rng, depth, kind, gap=""):
        """A Clause of `kind`: main, question, conjunct (first of two, closed at its end), conjunct_last,
        subordinate, complement or relative (with `gap` "subject" or "object")."""
        lex = self.lexicon
        frames = {"intransitive": 24, "transitive": 40, "dative": 5, "ditransitive": 7, "clausal": 8, "copula": 16}
        if kind in ("relative", "conjunct") or depth >= 2:
            frames.pop("clausal")
        if gap == "object":
            frames = {"transitive": 8, "dative": 1, "ditransitive": 1}
        frame = _pick(rng, frames)
        verb = None if frame == "copula" else lex.verb(rng, frame)
        tense = _pick(rng, {"present": 35, "past": 25, "perfect": 15, "future": 10, "can": 8, "must": 7})
        negated = kind != "question" and tense != "can" and rng.random() < 0.15
        subject = None if gap == "subject" else self.noun_phrase(rng, "subject", depth)
        clause = Clause(subject, verb, tense, negated, question=kind == "question", gap=gap)
        if frame in ("transitive", "dative", "ditransitive") and gap != "object":
            clause.obj = self.noun_phrase(rng, "object", depth, allow_relative=frame != "ditransitive")
        if frame == "ditransitive":
            clause.recipient = self.noun_phrase(rng, "object", depth, allow_relative=True)
        elif frame == "clausal":
            clause.complement = self.clause(rng, depth + 1, "complement")
        elif frame == "copula":
            clause.predicate = lex.adjective(rng)
        pp_count = _pick(rng, {0: 60, 1: 30, 2: 10}) if kind != "relative" else _pick(rng, {0: 75, 1: 25})
        clause.pps = tuple((rng.choice(_PREPOSITIONS), self.noun_phrase(rng, "pp", depth)) for _ in range(pp_count))
        if rng.random() < 0.2:
            clause.adverb = rng.choice(_ADVERBS)
        if kind in ("main", "conjunct_last") and depth == 0 and rng.random() < 0.2:
            front = kind == "main" and rng.random() < 0.35
            clause.subordinate = (rng.choice(_SUBORDINATORS), self.clause(rng, depth + 1, "subordinate"))
            clause.front = "subordinate" if front else ""
        if kind in ("main", "conjunct", "conjunct_last") and not clause.front:
            if clause.adverb and rng.random() < 0.35:
                clause.front = "adverb"
            elif clause.pps and rng.random() < 0.15 and not _starts_with_noun(subject):
                clause.front = "pp"  # not before "apple trees": "In the garden apple trees ..." reads two ways
        self._close_tail(clause, kind)
        return clause

    @staticmethod
    def _close_tail(clause, kind):
        """Keeps the string unambiguous: after an open part (a relative clause at the end of the last object,
        a complement clause) nothing may follow in the same clause, and a first conjunct ends closed (its
        relative clause could otherwise take in the ", and ..." that follows)."""
        last_np = clause.recipient or clause.obj
        if kind == "conjunct" and last_np is not None:
            last_np.relative = None
        if clause.complement is not None or (last_np is not None and last_np.relative is not None):
            clause.pps = clause.pps[:1] if clause.front == "pp" else ()
            if clause.front != "adverb":
                clause.adverb = ""
            if clause.front != "subordinate":
                clause.subordinate = None

    def noun_phrase(self, rng, role, depth, allow_relative=True):
        """A NounPhrase for `role`: subject, object, pp (object of a preposition) or of."""
        lex = self.lexicon
        kinds = {
            "subject": {"pronoun": 22, "name": 8, "coordination": 5, "noun": 65},
            "object": {"pronoun": 12, "name": 6, "coordination": 4, "noun": 78},
            "pp": {"pronoun": 5, "name": 6, "noun": 89},
            "of": {"name": 10, "noun": 90},
        }[role]
        kind = _pick(rng, kinds)
        if kind == "pronoun":
            return NounPhrase("pronoun", rng.choice(_PRONOUN_KEYS))
        if kind == "name":
            return NounPhrase("name", lex.name(rng))
        if kind == "coordination" and depth == 0:
            pair = (self.noun_phrase(rng, "pp", 2), self.noun_phrase(rng, "pp", 2))
            return NounPhrase("coordination", pair, plural=True)
        plural = rng.random() < 0.3
        if plural:
            determiner = _pick(rng, {"the": 45, "": 30, "numeral": 12, "possessive": 13})
        else:
            determiner = _pick(rng, {"the": 55, "a": 30, "possessive": 15})
        if determiner == "numeral":
            determiner = rng.choice(_NUMERALS)
        elif determiner == "possessive":
            determiner = rng.choice(_PRONOUN_KEYS)
        count = _pick(rng, {0: 62, 1: 30, 2: 8})
        adjectives = tuple(dict.fromkeys(lex.adjective(rng) for _ in range(count)))
        head = lex.noun(rng)
        phrase = NounPhrase("noun", head, plural, determiner, adjectives)
        if rng.random() < 0.1:
            modifier = lex.compound_modifier(rng)
            phrase.modifier = modifier if modifier is not head else None
        if role != "of" and depth < 2 and rng.random() < 0.08:
            phrase.of = self.noun_phrase(rng, "of", depth + 1)
        elif allow_relative and role in ("subject", "object") and depth < 2 and rng.random() < 0.1:
            gap = "subject" if rng.random() < 0.6 else "object"
            phrase.relative = self.clause(rng, depth + 1, "relative", gap)
        return phrase


    # English trees ---------------------------------------------------------------------------------------------

    def tree(self, sentence):
        """The Penn Treebank tree (a ptb_tree.Tree) of a Sentence, its first word capitalised. Like the
        Treebank's own trees it marks subjects with the function tag -SBJ and leaves a trace (-NONE- *T*-1)
        where a relative pronoun (WHNP-1) stands for the subject or object; `sentence_words` skips traces."""
        self._traces = 0
        if sentence.second is None:
            node = self.clause_tree(sentence.first)
            node.children.append(_leaf(".", "?" if sentence.first.question else "."))
        else:
            first, second = self.clause_tree(sentence.first), self.clause_tree(sentence.second)
            node = Tree("S", [first, _leaf(",", ","), _leaf("CC", sentence.coordinator), second, _leaf(".", ".")])
        first_word = node
        while not first_word.is_preterminal():
            first_word = first_word.children[0]
        first_word.children[0] = first_word.children[0][:1].upper() + first_word.children[0][1:]
        return node

    def clause_tree(self, clause, antecedent=None):
        """An S node (SQ for a question, SBAR for a relative clause, which agrees with `antecedent`)."""
        subject = clause.subject
        chain = _verb_chain(clause, subject.agreement if subject is not None else antecedent.agreement)
        rest = []
        if clause.obj is not None:
            rest.append(self.np_tree(clause.obj, "object"))
        if clause.recipient is not None:
            rest.append(Tree("PP", [_leaf("TO", "to"), self.np_tree(clause.recipient, "object")]))
        if clause.predicate is not None:
            rest.append(Tree("ADJP", [_leaf("JJ", clause.predicate.forms[0])]))
        if clause.complement is not None:
            rest.append(Tree("SBAR", [_leaf("IN", "that"), self.clause_tree(clause.complement)]))
        pps = [Tree("PP", [_leaf("IN", p), self.np_tree(phrase, "object")]) for p, phrase in clause.pps]
        front = [pps.pop(0)] if clause.front == "pp" else []
        rest.extend(pps)
        if clause.adverb:
            (front if clause.front == "adverb" else rest).append(Tree("ADVP", [_leaf("RB", clause.adverb)]))
        if clause.subordinate is not None:
            word, inner = clause.subordinate
            sbar = Tree("SBAR", [_leaf("IN", word), self.clause_tree(inner)])
            if clause.front == "subordinate":
                front.extend([sbar, _leaf(",", ",")])
            else:
                rest.append(sbar)
        if clause.gap:
            self._traces += 1
            index = self._traces
            trace = Tree("NP-SBJ" if clause.gap == "subject" else "NP", [_leaf("-NONE-", f"*T*-{index}")])
            if clause.gap == "object":
                rest.insert(0, trace)
            subject_node = [trace] if clause.gap == "subject" else [self.np_tree(subject, "subject")]
        else:
            subject_node = [self.np_tree(subject, "subject")]
        if clause.question:
            first = chain.pop(0)
            return Tree("SQ", [first] + subject_node + ([_verb_phrase(chain, rest)] if chain else rest))
        node = Tree("S", front + subject_node + [_verb_phrase(chain, rest)])
        if clause.gap:
            return Tree("SBAR", [Tree(f"WHNP-{index}", [_leaf("WDT", "that")]), node])
        return node

    def np_tree(self, phrase, case):
        """An NP node (NP-SBJ for a subject); `case` "subject" or "object" selects the pronoun form."""
        node = self._np_tree(phrase, case)
        if case == "subject":
            node.label = "NP-SBJ"
        return node

    def _np_tree(self, phrase, case):
        if phrase.kind == "pronoun":
            return Tree("NP", [_leaf("PRP", PRONOUNS[phrase.head][0 if case == "subject" else 1])])
        if phrase.kind == "name":
            return Tree("NP", [_leaf("NNP", phrase.head)])
        if phrase.kind == "coordination":
            left, right = (self._np_tree(p, case) for p in phrase.head)
            return Tree("NP", [left, _leaf("CC", "and"), right])
        children = []
        if phrase.determiner in PRONOUNS:
            children.append(_leaf("PRP$", PRONOUNS[phrase.determiner][2]))
        elif phrase.determiner in NUMERALS:
            children.append(_leaf("CD", phrase.determiner))
        elif phrase.determiner:
            children.append(_leaf("DT", phrase.determiner))
        children.extend(_leaf("JJ", adjective.forms[0]) for adjective in phrase.adjectives)
        if phrase.modifier is not None:
            children.append(_leaf("NN", phrase.modifier.forms[0]))
        children.append(_leaf("NNS", phrase.head.forms[1]) if phrase.plural else _leaf("NN", phrase.head.forms[0]))
        if phrase.determiner == "a" and children[1].children[0][0] in "aeiou":
            children[0] = _leaf("DT", "an")  # "an old house"
        node = Tree("NP", children)
        if phrase.of is not None:
            return Tree("NP", [node, Tree("PP", [_leaf("IN", "of"), self.np_tree(phrase.of, "object")])])
        if phrase.relative is not None:
            return Tree("NP", [node, self.clause_tree(phrase.relative, antecedent=phrase)])
        return node


def _starts_with_noun(phrase):
    """True for a phrase whose first word is a noun (a bare plural, maybe a compound), which could continue
    the noun phrase before it."""
    if phrase is not None and phrase.kind == "coordination":
        return _starts_with_noun(phrase.head[0])
    return phrase is not None and phrase.kind == "noun" and not phrase.determiner and not phrase.adjectives


def sentence_words(tree):
    """The words of a tree as they are written, without the traces of empty elements."""
    return [word for tag, word in tree.preterminals() if tag != "-NONE-"]


def _leaf(tag, word):
    return Tree.preterminal(tag, word)


def _verb_chain(clause, agreement):
    """The verb group's preterminals, auxiliaries first: (VBZ does) (RB not) (VB see)."""
    verb, tense = clause.verb, clause.tense
    third, singular = agreement == "3sg", agreement in ("1sg", "3sg")
    if tense == "perfect":
        chain = [("VBZ", "has") if third else ("VBP", "have"), ("VBN", verb.forms[3] if verb else "been")]
    elif tense in ("future", "can", "must"):
        chain = [("MD", "will" if tense == "future" else tense), ("VB", verb.forms[0] if verb else "be")]
    elif verb is None:
        if tense == "past":
            chain = [("VBD", "was" if singular else "were")]
        else:
            chain = [("VBZ", "is") if third else ("VBP", "am" if agreement == "1sg" else "are")]
    elif clause.negated or clause.question:
        support = ("VBD", "did") if tense == "past" else ("VBZ", "does") if third else ("VBP", "do")
        chain = [support, ("VB", verb.forms[0])]
    elif tense == "past":
        chain = [("VBD", verb.forms[2])]
    else:
        chain = [("VBZ", verb.forms[1]) if third else ("VBP", verb.forms[0])]
    if clause.negated:
        chain.insert(1, ("RB", "not"))
    return [_leaf(tag, word) for tag, word in chain]


def _verb_phrase(chain, rest):
    """Nests a verb group PTB-style: (VP (VBZ has) (RB not) (VP (VBN seen) (NP ...)))."""
    node = Tree("VP", [chain[-1]] + rest)
    auxiliaries = chain[:-1]
    while auxiliaries:
        if len(auxiliaries) >= 2 and auxiliaries[-1].label == "RB":
            node = Tree("VP", auxiliaries[-2:] + [node])
            auxiliaries = auxiliaries[:-2]
        else:
            node = Tree("VP", [auxiliaries.pop()] + [node])
    return node


def iter_sentences(grammar, rng, count, seen, min_words=3, max_words=50):
    """Yields `count` (Sentence, tree) pairs whose sentences have min_words..max_words tokens (punctuation
    included) and are not in `seen`, a set of sentences (space-joined tokens) that grows by the ones yielded."""
    produced = 0
    while produced < count:
        sentence = grammar.sample(rng)
        tree = grammar.tree(sentence)
        words = sentence_words(tree)
        text = " ".join(words)
        if min_words <= len(words) <= max_words and text not in seen:
            seen.add(text)
            produced += 1
            yield sentence, tree


# The Treebank's WSJ layout: sections 02-21 train, 22 dev, 23 test (section 6.3 trains on WSJ, tunes on 22).
WSJ_SECTIONS = {"train": tuple(range(2, 22)), "dev": (22,), "test": (23,)}
_FILES_PER_SECTION = 100  # wsj_SS00.mrg .. wsj_SS99.mrg


def write_treebank(directory, seed=1, num_train=40_000, num_dev=1_700, num_test=2_400):
    """Writes seeded trees as `.mrg` files in the WSJ layout, `directory/SS/wsj_SSNN.mrg`, each tree wrapped as
    `( (S ...) )`; returns the directory. Sentences are distinct: no dev or test sentence is also in train.
    (problems/toy.py builds it in a temporary directory renamed into place, and reuses it.)"""
    directory = os.fspath(directory)
    grammar = Grammar(seed)
    seen = set()
    for split, count in (("train", num_train), ("dev", num_dev), ("test", num_test)):
        sentences = iter_sentences(grammar, random.Random(f"toy-treebank-{seed}-{split}"), count, seen)
        sections = WSJ_SECTIONS[split]
        for index, section in enumerate(sections):
            share = count // len(sections) + (index < count % len(sections))
            trees = [tree for _, tree in itertools.islice(sentences, share)]
            _write_section(os.path.join(directory, f"{section:02d}"), section, trees)
    return directory


def _write_section(section_dir, section, trees):
    os.makedirs(section_dir, exist_ok=True)
    per_file = max(1, -(-len(trees) // _FILES_PER_SECTION))
    for number, start in enumerate(range(0, len(trees), per_file)):
        path = os.path.join(section_dir, f"wsj_{section:02d}{number:02d}.mrg")
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(f"( {tree.to_ptb()} )\n\n" for tree in trees[start:start + per_file])


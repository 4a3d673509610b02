"""A synthetic English-to-German-like language pair, generated from a seed (the toy_ende problem's corpus).

The English side comes from the probabilistic grammar of `t2t_repro.data.toy.grammar`; this module realises the
same sentence structures in German, with what makes English-German translation hard:

- word order: verb-second main clauses ("Today the dog sees the man." -> "Heute sieht der Hund den Mann."),
  verb-final subordinate and relative clauses ("because the dog sees the man" -> "weil der Hund den Mann
  sieht"), the participle or infinitive at the end ("has seen" -> "hat ... gesehen"), the recipient before the
  object ("gives the book to the man" -> "gibt dem Mann das Buch"), verb-first questions;
- agreement and inflection: articles by gender and case (nominative, accusative, dative, genitive, and the
  prepositions' cases), adjective endings (strong, weak, mixed), verb person and number, plural nouns with
  their dative -n, relative pronouns by gender and case, "kein" for negated indefinites, "im"/"vom"/"beim";
- compounds: "apple tree" -> "Apfelbaum" (with linking -s-/-n-), loanword modifiers hyphenated
  ("software developer" -> "Software-Entwickler");
- punctuation: commas around German subordinate and relative clauses, capitalised German nouns.

The translation is a function of the English sentence: nothing in it needs knowledge the source does not hold.

    write_toy_corpus("toy_text", seed=1)   # toy_text/{train,dev,test}.{en,de}
"""

import os
import random

from t2t_repro.data.toy.grammar import Grammar, iter_sentences, sentence_words
from t2t_repro.data.toy.lexicon import (
    ADVERBS, COORDINATORS, NAMES, NUMERALS, PREPOSITIONS, PRONOUNS, SUBORDINATORS, build_lexicon)

_CASES = {"nom": 0, "acc": 1, "dat": 2, "gen": 3}
_GENDERS = {"m": 0, "f": 1, "n": 2}  # plural: 3
# Rows: nominative, accusative, dative, genitive; columns: masculine, feminine, neuter, plural.
_DEFINITE = (("der", "die", "das", "die"), ("den", "die", "das", "die"), ("dem", "der", "dem", "den"),
             ("des", "der", "des", "der"))
_EIN_ENDINGS = (("", "e", "", "e"), ("en", "e", "", "e"), ("em", "er", "em", "en"), ("es", "er", "es", "er"))
_WEAK = (("e", "e", "e", "en"), ("en", "e", "e", "en"), ("en",) * 4, ("en",) * 4)  # after der, die, das
_MIXED = (("er", "e", "es", "en"), ("en", "e", "es", "en"), ("en",) * 4, ("en",) * 4)  # after ein, kein, mein
_STRONG = (("er", "e", "es", "e"), ("en", "e", "es", "e"), ("em", "er", "em", "en"), ("en", "er", "en", "er"))
_RELATIVE = _DEFINITE[:2] + (("dem", "der", "dem", "denen"),)
_CONTRACTIONS = {("in", "dem"): "im", ("von", "dem"): "vom", ("bei", "dem"): "beim"}
# Finite forms (1st singular, 3rd singular, plural) of auxiliaries and modals, present and past.
_AUXILIARIES = {
    "haben": (("habe", "hat", "haben"), ("hatte", "hatte", "hatten")),
    "sein": (("bin", "ist", "sind"), ("war", "war", "waren")),
    "werden": (("werde", "wird", "werden"),),
    "can": (("kann", "kann", "können"),),
    "must": (("muss", "muss", "müssen"),),
}
_PERSONS = {"1sg": 0, "3sg": 1}  # every other agreement takes the plural forms ("Sie" included)
_PUNCTUATION = {",", ".", "?"}


def detokenize(tokens):
    """Running text from tokens: "Der Hund , der schläft ." -> "Der Hund, der schläft."."""
    return " ".join(tokens).replace(" ,", ",").replace(" .", ".").replace(" ?", "?")


class GermanRealiser:
    """Realises the grammar's Sentences in German (every Word carries its German forms)."""

    def sentence(self, sentence):
        """The German text of a Sentence."""
        if sentence.second is None:
            question = sentence.first.question
            tokens = self.clause(sentence.first, "question" if question else "main") + ["?" if question else "."]
        else:
            comma = [","] if sentence.coordinator == "but" else []
            tokens = (self.clause(sentence.first, "main") + comma + [COORDINATORS[sentence.coordinator]]
                      + self.clause(sentence.second, "main") + ["."])
        kept = [t for i, t in enumerate(tokens) if not (t == "," and (i == 0 or tokens[i + 1] in _PUNCTUATION))]
        kept[0] = kept[0][:1].upper() + kept[0][1:]
        return detokenize(kept)

    def clause(self, clause, kind, antecedent=None, conjunction=""):
        """Tokens of a clause of `kind`: main (verb second), question (verb first), subordinate (verb last,
        after `conjunction`) or relative (verb last, after the relative pronoun agreeing with `antecedent`)."""
        subject = clause.subject
        person = _PERSONS.get((subject or antecedent).agreement, 2)
        finite, nonfinite = self._verb_group(clause, person)
        negate_object = clause.negated and clause.obj is not None and _is_indefinite(clause.obj)
        objects = []
        if clause.recipient is not None:
            objects.append(self.noun_phrase(clause.recipient, "dat"))
        if clause.obj is not None:
            case = "dat" if clause.verb.frame == "dative" else "acc"
            obj = self.noun_phrase(clause.obj, case, negate=negate_object)
            objects.insert(0 if clause.obj.kind == "pronoun" else len(objects), obj)  # "es dem Mann"
        middle = [token for phrase in objects for token in phrase]
        if clause.adverb and clause.front != "adverb":
            middle.append(ADVERBS[clause.adverb])
        if clause.negated and not negate_object:
            middle.append("nicht")
        pps = [self.prepositional_phrase(p, phrase) for p, phrase in clause.pps]
        front = pps.pop(0) if clause.front == "pp" else []
        for pp in pps:
            middle += pp
        if clause.predicate is not None:
            middle.append(clause.predicate.german[0])
        tail = []
        if clause.complement is not None:
            tail = [","] + self.clause(clause.complement, "subordinate", conjunction="dass") + [","]
        if clause.subordinate is not None:
            word, inner = clause.subordinate
            german = "als" if word == "when" and inner.tense == "past" else SUBORDINATORS[word]
            sub = self.clause(inner, "subordinate", conjunction=german)
            if clause.front == "subordinate":
                front = sub + [","]
            else:
                tail = [","] + sub + [","]
        subject_tokens = self.noun_phrase(subject, "nom") if subject is not None else []
        if kind == "main":
            if clause.front == "adverb":
                front = [ADVERBS[clause.adverb]]
            if not front:
                front, subject_tokens = subject_tokens, []
            return front + [finite] + subject_tokens + middle + nonfinite + tail
        if kind == "question":
            return [finite] + subject_tokens + middle + nonfinite + tail
        if kind == "subordinate":
            return [conjunction] + subject_tokens + middle + nonfinite + [finite] + tail
        gap_case = "nom" if clause.gap == "subject" else "dat" if clause.verb.frame == "dative" else "acc"
        pronoun = _RELATIVE[_CASES[gap_case]][_column(antecedent, self._noun(antecedent)[2])]
        return [pronoun] + subject_tokens + middle + nonfinite + [finite]

    def _verb_group(self, clause, person):
        """(finite verb, [participle or infinitive])."""
        verb, tense = clause.verb, clause.tense
        if verb is None:  # the copula "sein"
            infinitive, participle, auxiliary, tenses = "sein", "gewesen", "sein", _AUXILIARIES["sein"]
        else:
            infinitive, first, third, past, past_plural, participle, auxiliary = verb.german
            tenses = ((first, third, infinitive), (past, past, past_plural))
        if tense == "present":
            return tenses[0][person], []
        if tense == "past":
            return tenses[1][person], []
        if tense == "perfect":
            return _AUXILIARIES[auxiliary][0][person], [participle]
        return _AUXILIARIES["werden" if tense == "future" else tense][0][person], [infinitive]

    def _noun(self, phrase):
        """(singular, plural, gender) of a noun phrase's head, compounds joined: Apfelbaum, Software-Entwickler."""
        singular, plural, gender = phrase.head.german
        modifier = phrase.modifier
        if modifier is None:
            return singular, plural, gender
        first = modifier.german[0]
        if modifier.loan:
            return f"{first}-{singular}", f"{first}-{plural}", gender
        link = "s" if first.endswith("ung") else "n" if first.endswith("e") and modifier.german[2] == "f" else ""
        return first + link + singular[0].lower() + singular[1:], first + link + plural[0].lower() + plural[1:], gender

    def noun_phrase(self, phrase, case, negate=False):
        """Tokens of a NounPhrase in `case` (nom, acc, dat, gen); `negate` turns an indefinite into "kein"."""
        if phrase.kind == "pronoun":
            return [PRONOUNS[phrase.head][4 + _CASES[case]]]
        if phrase.kind == "name":
            return [phrase.head]
        if phrase.kind == "coordination":
            left, right = phrase.head
            return self.noun_phrase(left, case) + ["und"] + self.noun_phrase(right, case)
        singular, plural, gender = self._noun(phrase)
        row, column = _CASES[case], _column(phrase, gender)
        determiner = phrase.determiner
        if determiner == "the":
            tokens, endings = [_DEFINITE[row][column]], _WEAK
        elif determiner == "a" or (negate and not determiner):
            tokens, endings = [("kein" if negate else "ein") + _EIN_ENDINGS[row][column]], _MIXED
        elif determiner in PRONOUNS:
            tokens, endings = [PRONOUNS[determiner][7] + _EIN_ENDINGS[row][column]], _MIXED
        else:
            tokens, endings = [NUMERALS[determiner]] if determiner else [], _STRONG
        ending = endings[row][column]
        for adjective in phrase.adjectives:
            base = adjective.german[0]
            tokens.append(base + (ending[1:] if base.endswith("e") else ending))
        tokens.append(_inflect_noun(singular, plural, phrase.plural, case, gender, phrase.head.loan))
        if phrase.of is not None:
            of = phrase.of
            if of.kind == "noun" and of.determiner and of.determiner not in NUMERALS:
                tokens += self.noun_phrase(of, "gen")
            else:
                tokens += ["von"] + self.noun_phrase(of, "dat")
        if phrase.relative is not None:
            tokens += [","] + self.clause(phrase.relative, "relative", antecedent=phrase) + [","]
        return tokens

    def prepositional_phrase(self, preposition, phrase):
        german, case = PREPOSITIONS[preposition]
        tokens = [german] + self.noun_phrase(phrase, case)
        contraction = _CONTRACTIONS.get((tokens[0], tokens[1])) if phrase.determiner == "the" else None
        return [contraction] + tokens[2:] if contraction else tokens


def _column(phrase, gender):
    return 3 if phrase.plural or phrase.kind == "coordination" else _GENDERS[gender]


def _is_indefinite(phrase):
    """"a dog" and bare plurals ("dogs") become "kein Hund", "keine Hunde" under negation."""
    return phrase.kind == "noun" and phrase.determiner in ("a", "")


def _inflect_noun(singular, plural, is_plural, case, gender, loan):
    """The noun's form in `case`: genitive singular -s/-es of masculine and neuter nouns, dative plural -n."""
    if is_plural:
        return plural + "n" if case == "dat" and not plural.endswith(("n", "s")) else plural
    if case == "gen" and gender != "f":
        short = loan or singular.endswith(("a", "e", "i", "o", "u", "er", "el", "en", "chen"))
        return singular + ("s" if short else "es")
    return singular


def word_by_word_dictionary(seed=1):
    """English word form -> one German form, for every word of the lexicon of `seed`: nouns by number, verbs
    by form (3rd singular -> 3rd singular, past -> past), articles and pronouns in the nominative, function
    words by their usual translation; do-support ("does", "did") maps to "" (dropped)."""
    lexicon = build_lexicon(seed)
    table = {"the": "der", "a": "ein", "an": "ein", "of": "von", "to": "zu", "that": "dass", "not": "nicht",
             "is": "ist", "am": "bin", "are": "sind", "was": "war", "were": "waren", "be": "sein", "been": "gewesen",
             "has": "hat", "have": "haben", "will": "wird", "can": "kann", "must": "muss",
             "do": "", "does": "", "did": ""}
    table.update((p, german) for p, (german, _) in PREPOSITIONS.items())
    for words in (ADVERBS, NUMERALS, SUBORDINATORS, COORDINATORS):
        table.update(words)
    for subject, obj, possessive, _, nominative, accusative, _, stem in PRONOUNS.values():
        table.update({subject.lower(): nominative, obj: accusative, possessive: stem})
    table["her"] = "ihr"
    table.update((name, name) for name in NAMES)
    for word in lexicon.words():
        if word.category == "noun":
            table[word.forms[0]] = word.german[0]
            table[word.forms[1]] = word.german[1] if word.german[1] != "-" else word.german[0]
        elif word.category == "verb":
            infinitive, _, third, past, _, participle, _ = word.german
            table.update({word.forms[3]: participle, word.forms[2]: past})
            table.update({word.forms[0]: infinitive, word.forms[1]: third})
        else:
            table[word.forms[0]] = word.german[0]
    return table


def write_toy_corpus(directory, seed=1, num_train=100_000, num_dev=2_000, num_test=2_000, min_words=3, max_words=50):
    """Writes the parallel text files `{train,dev,test}.{en,de}` (one sentence per line) of `seed` into
    `directory` and returns it. English sentences have min_words..max_words tokens (punctuation included) and
    are all distinct: no dev or test source is also in train. (problems/toy.py builds the directory in a
    temporary one renamed into place, and reuses it.)"""
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    grammar = Grammar(lexicon=build_lexicon(seed))
    german = GermanRealiser()
    seen = set()
    for split, count in (("train", num_train), ("dev", num_dev), ("test", num_test)):
        rng = random.Random(f"toy-corpus-{seed}-{split}")
        with open(os.path.join(directory, f"{split}.en"), "w", encoding="utf-8") as english_file, \
                open(os.path.join(directory, f"{split}.de"), "w", encoding="utf-8") as german_file:
            for sentence, tree in iter_sentences(grammar, rng, count, seen, min_words, max_words):
                english_file.write(detokenize(sentence_words(tree)) + "\n")
                german_file.write(german.sentence(sentence) + "\n")
    return directory

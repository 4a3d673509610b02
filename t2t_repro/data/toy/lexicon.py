"""The bilingual lexicon of the toy language pair (toy_ende, toy_parsing): English words and their German forms.

A core of real words (with their real German genders, plurals and strong verbs) is extended by generated stems,
so the vocabulary holds a few thousand words and word pieces matter. A generated English stem is one to three
syllables (onset, vowel, coda); its German counterpart is spelled syllable by syllable through seeded sound
correspondences (as English and German cognates correspond, "apple" / "Apfel"), and a noun or adjective takes
a German suffix chosen by the stem's last letter (as -ung, -chen and -lich do in German), which fixes the
noun's gender and plural class. Frequencies are Zipf-like: the core words are the most frequent.

    lexicon = build_lexicon(seed=1)
    lexicon.nouns[0]                        # Word("noun", ("dog", "dogs"), ("Hund", "Hunde", "m"))
    lexicon.noun(random.Random(0)).german   # ("Zägüdril", "Zägüdrile", "m"), a generated noun
"""

import bisect
import dataclasses
import itertools
import random

# Function words: English -> German (and, for prepositions, the case they govern).
PREPOSITIONS = {
    "in": ("in", "dat"), "on": ("auf", "dat"), "under": ("unter", "dat"), "behind": ("hinter", "dat"),
    "with": ("mit", "dat"), "from": ("von", "dat"), "near": ("bei", "dat"), "for": ("für", "acc"),
    "without": ("ohne", "acc"), "through": ("durch", "acc"), "against": ("gegen", "acc"),
}
ADVERBS = {
    "today": "heute", "yesterday": "gestern", "tomorrow": "morgen", "often": "oft", "now": "jetzt",
    "always": "immer", "here": "hier", "there": "dort", "again": "wieder", "soon": "bald",
}
NUMERALS = {
    "two": "zwei", "three": "drei", "four": "vier", "five": "fünf", "six": "sechs", "seven": "sieben",
    "eight": "acht", "nine": "neun", "ten": "zehn", "twelve": "zwölf",
}
SUBORDINATORS = {  # "when" with a past-tense clause is "als" (the realiser decides)
    "because": "weil", "although": "obwohl", "when": "wenn", "if": "wenn", "before": "bevor", "while": "während",
}
COORDINATORS = {"and": "und", "but": "aber", "or": "oder"}
# English subject, object, possessive, agreement; German nominative, accusative, dative, possessive stem.
PRONOUNS = {
    "I": ("I", "me", "my", "1sg", "ich", "mich", "mir", "mein"),
    "you": ("you", "you", "your", "2", "Sie", "Sie", "Ihnen", "Ihr"),
    "he": ("he", "him", "his", "3sg", "er", "ihn", "ihm", "sein"),
    "she": ("she", "her", "her", "3sg", "sie", "sie", "ihr", "ihr"),
    "it": ("it", "it", "its", "3sg", "es", "es", "ihm", "sein"),
    "we": ("we", "us", "our", "1pl", "wir", "uns", "uns", "unser"),
    "they": ("they", "them", "their", "3pl", "sie", "sie", "ihnen", "ihr"),
}
NAMES = "Anna Maria Peter Thomas Laura Paul Lisa Jonas Sarah Felix Emma Lukas Julia Max Sophie David".split()

# Core nouns: English singular[/plural], German singular, plural, gender. "+" marks a loanword.
_CORE_NOUNS = """
dog Hund Hunde m|cat Katze Katzen f|man/men Mann Männer m|woman/women Frau Frauen f|child/children Kind Kinder n
house Haus Häuser n|book Buch Bücher n|tree Baum Bäume m|apple Apfel Äpfel m|city/cities Stadt Städte f
car Auto Autos n|teacher Lehrer Lehrer m|friend Freund Freunde m|door Tür Türen f|table Tisch Tische m
school Schule Schulen f|garden Garten Gärten m|window Fenster Fenster n|letter Brief Briefe m
bird Vogel Vögel m|horse Pferd Pferde n|flower Blume Blumen f|river Fluss Flüsse m|street Straße Straßen f
bread Brot Brote n|king König Könige m|queen Königin Königinnen f|village Dorf Dörfer n|mountain Berg Berge m
doctor Arzt Ärzte m|game Spiel Spiele n|picture Bild Bilder n|hat Hut Hüte m|box/boxes Kiste Kisten f
developer Entwickler Entwickler m|+computer Computer Computer m|+team Team Teams n|+manager Manager Manager m
+hotel Hotel Hotels n|+radio/radios Radio Radios n|+laptop Laptop Laptops m|+app App Apps f|+video/videos Video Videos n
+robot Roboter Roboter m|+camera Kamera Kameras f"""
# Loanwords that only ever modify a compound head ("software developer" -> "Software-Entwickler").
_MODIFIER_ONLY = "+software Software - f|+internet Internet - n"
# Core verbs: English base[/past/participle], German infinitive, 3rd singular, past, participle, auxiliary, frame.
_CORE_VERBS = """
see/saw/seen          sehen     sieht     sah        gesehen     haben transitive
find/found/found      finden    findet    fand       gefunden    haben transitive
eat/ate/eaten         essen     isst      aß         gegessen    haben transitive
write/wrote/written   schreiben schreibt  schrieb    geschrieben haben transitive
buy/bought/bought     kaufen    kauft     kaufte     gekauft     haben transitive
love                  lieben    liebt     liebte     geliebt     haben transitive
build/built/built     bauen     baut      baute      gebaut      haben transitive
open                  öffnen    öffnet    öffnete    geöffnet    haben transitive
visit                 besuchen  besucht   besuchte   besucht     haben transitive
hear/heard/heard      hören     hört      hörte      gehört      haben transitive
catch/caught/caught   fangen    fängt     fing       gefangen    haben transitive
take/took/taken       nehmen    nimmt     nahm       genommen    haben transitive
carry                 tragen    trägt     trug       getragen    haben transitive
paint                 malen     malt      malte      gemalt      haben transitive
need                  brauchen  braucht   brauchte   gebraucht   haben transitive
help                  helfen    hilft     half       geholfen    haben dative
follow                folgen    folgt     folgte     gefolgt     sein  dative
thank                 danken    dankt     dankte     gedankt     haben dative
give/gave/given       geben     gibt      gab        gegeben     haben ditransitive
show/showed/shown     zeigen    zeigt     zeigte     gezeigt     haben ditransitive
send/sent/sent        schicken  schickt   schickte   geschickt   haben ditransitive
bring/brought/brought bringen   bringt    brachte    gebracht    haben ditransitive
sell/sold/sold        verkaufen verkauft  verkaufte  verkauft    haben ditransitive
sleep/slept/slept     schlafen  schläft   schlief    geschlafen  haben intransitive
laugh                 lachen    lacht     lachte     gelacht     haben intransitive
go/went/gone          gehen     geht      ging       gegangen    sein  intransitive
come/came/come        kommen    kommt     kam        gekommen    sein  intransitive
run/ran/run           laufen    läuft     lief       gelaufen    sein  intransitive
work                  arbeiten  arbeitet  arbeitete  gearbeitet  haben intransitive
play                  spielen   spielt    spielte    gespielt    haben intransitive
wait                  warten    wartet    wartete    gewartet    haben intransitive
swim/swam/swum        schwimmen schwimmt  schwamm    geschwommen sein  intransitive
sing/sang/sung        singen    singt     sang       gesungen    haben intransitive
dance                 tanzen    tanzt     tanzte     getanzt     haben intransitive
say/said/said         sagen     sagt      sagte      gesagt      haben clausal
believe               glauben   glaubt    glaubte    geglaubt    haben clausal
hope                  hoffen    hofft     hoffte     gehofft     haben clausal
think/thought/thought denken    denkt     dachte     gedacht     haben clausal
claim                 behaupten behauptet behauptete behauptet   haben clausal"""
_CORE_ADJECTIVES = """big groß|small klein|old alt|new neu|good gut|bad schlecht|red rot|young jung|happy glücklich
long lang|short kurz|beautiful schön|green grün|black schwarz|white weiß|rich reich|poor arm|fast schnell
cold kalt|warm warm"""

# Sound correspondences of generated stems: the i-th English segment is spelled as a seeded German one.
_EN_ONSETS = "b bl br c cl cr d dr f fl fr g gl gr h j k l m n p pl pr qu r s sc sh sl sm sn sp st str t th tr tw v w"
_DE_ONSETS = "b bl br d dr f fl fr g gl gr h k kl kn kr l m n p pf pl pr r s sch schl schm schn schr schw sp spr st " \
             "str t tr w z zw"
_EN_VOWELS, _DE_VOWELS = "a e i o u ai ea ee oo ou", "a e i o u ä ö ü ei au"
_EN_CODAS = "b ck d f g k l ll m n nd ng nk p r rn rt sh st t x"
_DE_CODAS = "b ch ck d f g l ll m n nd ng nk p r rn rt sch st tz lz"
# German noun classes of generated nouns: (suffix, plural ending, gender); adjective suffixes.
_NOUN_CLASSES = (("", "e", "m"), ("er", "", "m"), ("ung", "en", "f"), ("e", "n", "f"), ("chen", "", "n"),
                 ("", "er", "n"))
_ADJECTIVE_SUFFIXES = ("", "ig", "lich", "isch")
_GENERATED = {"noun": 1100, "verb": 280, "adjective": 220}
_VERB_FRAMES = {"transitive": 60, "intransitive": 30, "ditransitive": 5, "dative": 5}
# Generated stems that would spell (or contain) a rude word in either language are drawn again.
_RUDE_PARTS = ("shit", "fuck", "cunt", "cock", "twat", "wank", "slut", "piss", "dick", "rape", "porn", "nazi",
               "fick", "fotz", "arsch", "scheiß", "scheiss", "hure", "wichs", "nutte", "kack")
_RUDE_WORDS = {"tit", "tits", "fag", "crap", "damn", "hell", "ass", "arse", "anal", "sex", "poo", "pee", "kot"}
_ZIPF_OFFSET = 10  # weight of rank r is 1 / (r + offset): a flattened head keeps the rarest words learnable


@dataclasses.dataclass(frozen=True)
class Word:
    """A content word: its English forms and German forms."""

    category: str  # "noun", "verb" or "adjective"
    forms: tuple  # noun: (singular, plural); verb: (base, 3rd singular, past, participle); adjective: (base,)
    german: tuple  # noun: (singular, plural, gender); adjective: (base,);
    # verb: (infinitive, 1st singular, 3rd singular, past singular, past plural, participle, auxiliary)
    frame: str = ""  # verbs: "intransitive", "transitive", "dative", "ditransitive" or "clausal"
    loan: bool = False  # nouns: a loanword, joined to the head of a German compound with a hyphen


def english_suffixed(stem, suffix):
    """English spelling of stem + "s" (plural, 3rd singular) or + "ed" (past): boxes, carries, hoped."""
    if suffix == "s":
        if stem.endswith(("s", "x", "sh", "ch", "z", "o")):
            return stem + "es"
        return stem[:-1] + "ies" if stem.endswith("y") and stem[-2:-1] not in "aeiou" else stem + "s"
    if stem.endswith("e"):
        return stem + "d"
    return stem[:-1] + "ied" if stem.endswith("y") and stem[-2:-1] not in "aeiou" else stem + "ed"


def german_past_plural(past):
    """sah -> sahen, kaufte -> kauften."""
    return past + ("n" if past.endswith("e") else "en")


def _rows(table):
    """The whitespace-separated fields of each row of a table (rows end at "|" or a line end)."""
    return [row.split() for row in table.replace("\n", "|").split("|") if row.strip()]


def _core_words():
    nouns, modifiers, verbs, adjectives = [], [], [], []
    for rows, out in ((_CORE_NOUNS, nouns), (_MODIFIER_ONLY, modifiers)):
        for english, singular, plural, gender in _rows(rows):
            loan = english.startswith("+")
            english = english.lstrip("+")
            base, _, english_plural = english.partition("/")
            forms = (base, english_plural or english_suffixed(base, "s"))
            out.append(Word("noun", forms, (singular, plural, gender), loan=loan))
    for english, infinitive, third, past, participle, auxiliary, frame in _rows(_CORE_VERBS):
        base, *irregular = english.split("/")
        english_past, english_participle = irregular or [english_suffixed(base, "ed")] * 2
        forms = (base, english_suffixed(base, "s"), english_past, english_participle)
        german = (infinitive, infinitive[:-2] + "e", third, past, german_past_plural(past), participle, auxiliary)
        verbs.append(Word("verb", forms, german, frame=frame))
    adjectives = [Word("adjective", (english,), (german,)) for english, german in _rows(_CORE_ADJECTIVES)]
    return nouns, modifiers, verbs, adjectives


class _StemMaker:
    """Generates English stems and their German spellings through seeded sound correspondences."""

    def __init__(self, rng):
        self.rng = rng
        self.maps = {}
        for name, english, german in (("onset", _EN_ONSETS, _DE_ONSETS), ("vowel", _EN_VOWELS, _DE_VOWELS),
                                      ("coda", _EN_CODAS, _DE_CODAS)):
            english, german = english.split(), german.split()
            rng.shuffle(german)
            self.maps[name] = dict(zip(english, german))
        self.onsets, self.vowels = tuple(self.maps["onset"]), tuple(self.maps["vowel"])
        self.final_codas = tuple(self.maps["coda"])  # a consonant: verb stems end in one
        self.codas = ("",) + self.final_codas
        self.maps["coda"][""] = ""
        letters = "abcdefghijklmnopqrstuvwxyz"
        self.noun_class = {letter: rng.choice(_NOUN_CLASSES) for letter in letters}
        self.adjective_suffix = {letter: rng.choice(_ADJECTIVE_SUFFIXES) for letter in letters}

    def stem(self, syllables, final_coda):
        """(English stem, German stem); `final_coda` forces a consonant at the end (verbs)."""
        rng, maps = self.rng, self.maps
        english, german = [], []
        for index in range(syllables):
            onset, vowel = rng.choice(self.onsets), rng.choice(self.vowels)
            last = index == syllables - 1
            coda = rng.choice(self.final_codas if last and final_coda else self.codas)
            if not last and rng.random() < 0.6:
                coda = ""
            english.append(onset + vowel + coda)
            german.append(maps["onset"][onset] + maps["vowel"][vowel] + maps["coda"][coda])
        return "".join(english), "".join(german)

    def word(self, category, frame):
        """A generated Word of `category`."""
        syllables = self.rng.choices((1, 2, 3), (45, 45, 10) if category == "noun" else (60, 35, 5))[0]
        english, german = self.stem(syllables, final_coda=category == "verb")
        if category == "noun":
            suffix, plural_ending, gender = self.noun_class[english[-1]]
            singular = german.capitalize() + suffix
            return Word("noun", (english, english_suffixed(english, "s")), (singular, singular + plural_ending, gender))
        if category == "adjective":
            return Word("adjective", (english,), (german + self.adjective_suffix[english[-1]],))
        dental = german.endswith(("t", "d"))
        ending = "et" if dental else "t"
        past = german + ("ete" if dental else "te")
        past_english = english_suffixed(english, "ed")
        forms = (english, english_suffixed(english, "s"), past_english, past_english)
        return Word("verb", forms, (german + "en", german + "e", german + ending, past, german_past_plural(past),
                                    "ge" + german + ending, "haben"), frame=frame)


def _function_words():
    english = set(PREPOSITIONS) | set(ADVERBS) | set(NUMERALS) | set(SUBORDINATORS) | set(COORDINATORS)
    english |= {form.lower() for row in PRONOUNS.values() for form in row[:3]}
    english |= set("the a an of to that not do does did is am are was were be been has have will can must".split())
    german = {form.lower() for row in PRONOUNS.values() for form in row[4:]} | {g for g, _ in PREPOSITIONS.values()}
    german |= set(ADVERBS.values()) | set(NUMERALS.values()) | set(SUBORDINATORS.values())
    german |= set("der die das den dem des ein eine einen einem einer eines kein nicht und aber oder dass als".split())
    german |= set("haben hat habe sein ist bin sind war waren werden wird werde gewesen".split())
    return english, german


def _german_forms(word):
    """The German word forms of `word` that must not belong to any other word (lower case)."""
    forms = word.german[:2] if word.category == "noun" else word.german[:6]
    return {form.lower() for form in forms if form != "-"}


def _rude(forms):
    return any(form in _RUDE_WORDS or any(part in form for part in _RUDE_PARTS) for form in forms)


class _Zipf:
    """Draws items with weight 1 / (rank + _ZIPF_OFFSET)."""

    def __init__(self, items):
        self.items = tuple(items)
        self.cumulative = list(itertools.accumulate(1.0 / (rank + _ZIPF_OFFSET) for rank in range(len(self.items))))

    def __call__(self, rng):
        return self.items[bisect.bisect(self.cumulative, rng.random() * self.cumulative[-1])]


class Lexicon:
    """The words of one seed, with Zipf-like samplers by category."""

    def __init__(self, nouns, modifiers, verbs, adjectives):
        self.nouns, self.modifiers, self.verbs, self.adjectives = nouns, modifiers, verbs, adjectives
        self._nouns, self._adjectives = _Zipf(nouns), _Zipf(adjectives)
        self._verbs = {frame: _Zipf(v for v in verbs if v.frame == frame) for frame in {v.frame for v in verbs}}
        self._loans = tuple(n for n in nouns + modifiers if n.loan)

    def noun(self, rng):
        return self._nouns(rng)

    def verb(self, rng, frame):
        return self._verbs[frame](rng)

    def adjective(self, rng):
        return self._adjectives(rng)

    def name(self, rng):
        return rng.choice(NAMES)

    def compound_modifier(self, rng):
        """The first noun of a compound: a loanword a third of the time (hyphenated in German), else any noun."""
        return rng.choice(self._loans) if rng.random() < 0.35 else self._nouns(rng)

    def words(self):
        return self.nouns + self.modifiers + self.verbs + self.adjectives


def build_lexicon(seed=1):
    """The lexicon of `seed`: the core words first (most frequent), then the generated ones, every English and
    every German form distinct."""
    rng = random.Random(f"toy-lexicon-{seed}")
    nouns, modifiers, verbs, adjectives = _core_words()
    taken_english, taken_german = _function_words()
    for word in nouns + modifiers + verbs + adjectives:
        taken_english.update(word.forms)
        taken_german.update(_german_forms(word))
    taken_english.update(name.lower() for name in NAMES)
    maker = _StemMaker(rng)
    for category, out in (("noun", nouns), ("verb", verbs), ("adjective", adjectives)):
        generated = 0
        while generated < _GENERATED[category]:
            frame = rng.choices(tuple(_VERB_FRAMES), tuple(_VERB_FRAMES.values()))[0] if category == "verb" else ""
            word = maker.word(category, frame)
            english = set(word.forms)
            german = _german_forms(word)
            if len(word.forms[0]) < 3 or english & taken_english or german & taken_german or _rude(english | german):
                continue
            taken_english |= english
            taken_german |= german
            out.append(word)
            generated += 1
    return Lexicon(nouns, modifiers, verbs, adjectives)

"""The toy language generator behind the embedded toy_ende and toy_parsing problems (problems/toy.py).

- lexicon: the bilingual English / German-like word list, a real core extended by seeded generated stems;
- grammar: seeded probabilistic English sentences and their Penn Treebank trees (toy_parsing's treebank);
- language: the same sentences realised in German, word order and inflection included (toy_ende's corpus).

Everything it writes is a function of its seed alone.
"""

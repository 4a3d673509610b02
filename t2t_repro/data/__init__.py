"""Data: the Problem base class, vocabularies, TFRecord I/O, token-budget batching, PTB trees."""

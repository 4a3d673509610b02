"""Decoding: cached beam search, sampling, scoring given targets, and decoding text files."""

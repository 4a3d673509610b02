"""Decoding: cached beam search and decoding text files."""

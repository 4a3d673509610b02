"""Serving: SavedModel export with the tokenizer in the graph, and a TF Serving-compatible REST server."""

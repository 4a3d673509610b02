"""Evaluation: the paper's BLEU (sacreBLEU and tokenized) and EVALB-style parsing F1."""

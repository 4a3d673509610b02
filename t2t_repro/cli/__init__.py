"""Console scripts: one thin module per `t2t-repro-*` command."""

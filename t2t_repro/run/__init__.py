"""The run layer: everything about one run directory, between the command lines and the jobs below.

- `layout`: the files of an output_dir, hparams.json / run.json, the checkpoint to evaluate by default;
- `config`: RunConfig, what a training run is started with;
- `restore`: a trained run rebuilt from its output_dir;
- `training`: a training run from data to report; `dev_evaluation`: dev loss, perplexity and BLEU/F1;
- `end_of_run`: average, decode and score the test split, export, report;
- `jobs`: what the other command-line tools do with a run (average, decode a file, export, attention maps).
"""

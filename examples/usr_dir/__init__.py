"""An example user directory: `--t2t_usr_dir=examples/usr_dir` registers the problem and the hparams set below.

    t2t-repro-trainer --t2t_usr_dir=examples/usr_dir --problem=translate_en_es_local \
        --hparams=transformer_en_es_small --manual_dir=M --data_dir=D --output_dir=O

Importing this package must register everything: it imports its modules explicitly (relative imports, as the
directory is imported as a package of its own), and an error there stops every tool with one line naming the
file and line.
"""

from . import my_hparams, my_problems  # noqa: F401

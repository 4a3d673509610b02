"""What every console script shares: quiet TensorFlow start-up and one-line errors for user mistakes."""

import os
import sys


def quiet_tensorflow():
    """Hides TensorFlow's C++ start-up chatter unless the user asked for it."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def run_main(main, argv=None):
    """Runs `main(argv)`; a UserError (or bad flags) ends in one line on stderr and exit status 2."""
    from t2t_repro.errors import UserError

    try:
        return main(argv)
    except UserError as error:
        prog = os.path.basename(sys.argv[0]) or "t2t-repro"
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130

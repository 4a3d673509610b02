"""Hiding the informational lines SentencePiece's C++ code prints whenever a tokenizer is created.

    with sentencepiece_info_hidden():
        loaded = tf.saved_model.load(version_dir)   # no "normalizer.cc(51) LOG(INFO) ..." on stderr

The copy of SentencePiece inside tensorflow-text has no log-level setting (`sentencepiece.set_min_log_level`
sets only the Python package's own copy), so its lines are filtered out of file descriptor 2; warnings and
errors still reach stderr.
"""

import contextlib
import os
import re
import sys
import tempfile

# E.g. "normalizer.cc(51) LOG(INFO) precompiled_charsmap is empty. use identity normalization."
_SENTENCEPIECE_INFO = re.compile(rb"^[\w.]+\.cc\(\d+\) LOG\(INFO\) [^\n]*\n?", re.MULTILINE)


@contextlib.contextmanager
def sentencepiece_info_hidden():
    """Runs the block with file descriptor 2 sent to a temporary file, then writes back to it all that was
    written there except SentencePiece's informational lines."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as captured:
            os.dup2(captured.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                captured.seek(0)
                rest = _SENTENCEPIECE_INFO.sub(b"", captured.read())
                while rest:
                    rest = rest[os.write(2, rest):]
    finally:
        os.close(saved)

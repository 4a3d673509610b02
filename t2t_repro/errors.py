"""The one exception type for mistakes a user can make (bad flag, unknown name, missing data, bad file).

Command-line tools turn it into a one-line message and a non-zero exit instead of a traceback.
"""


class UserError(Exception):
    """An error caused by the user's input; its message says what is wrong and how to fix it."""


def first_line(error, empty=None):
    """The first line of an exception's message that has a word in it (TensorFlow's may go on for many lines,
    sacreBLEU's and MeCab's start with blank or dashed ones; a SyntaxError's without its position), or `empty`
    (by default the exception's type name) when it has none."""
    text = str(error.msg if isinstance(error, SyntaxError) and error.msg else error)
    return next((line.strip() for line in text.splitlines() if any(c.isalnum() for c in line)),
                empty or type(error).__name__)

"""The one exception type for mistakes a user can make (bad flag, unknown name, missing data, bad file).

Command-line tools turn it into a one-line message and a non-zero exit instead of a traceback.
"""


class UserError(Exception):
    """An error caused by the user's input; its message says what is wrong and how to fix it."""

"""Interactive decoding, as tensor2tensor's --decode_interactive: each line read is answered as soon as it is.

    count = decode_interactively(sys.stdin.buffer, sys.stdout, search, vocabularies, settings, problem.postprocess)

Lines are read one at a time from a binary stream (standard input's buffer), decoded exactly as a file's
lines are (`t2t_repro.decode.decode_text`: stripped, truncated past max_input_length with a warning, an empty
line answered with an empty line; a line that is not UTF-8 ends the session with a UserError naming it, as
a file's would) and each answer is written and flushed before the next line is read: one line per input, or with nbest N, N lines "<score>\\t<text>".
"""

from t2t_repro.data.parallel_files import line_text
from t2t_repro.decode.decode_text import output_lines, search_texts_nbest, single_line


def decode_interactively(input_stream, output_stream, search, vocabularies, settings, postprocess=None):
    """Answers every line of `input_stream` (binary, read line by line) on `output_stream` (text) as it comes,
    with a batch search (`t2t_repro.decode.decode_text.tensorflow_search`, say); returns the lines answered."""
    count = 0
    for raw in iter(input_stream.readline, b""):
        count += 1
        text = line_text(raw, f"standard input:{count}")
        results = search_texts_nbest([text], search, vocabularies, settings, postprocess, batch_size=1,
                                     progress=False)
        output_stream.write("".join(single_line(line) + "\n" for line in output_lines(results, settings.nbest)))
        output_stream.flush()
    return count

"""The official WMT test sets as they are distributed: SGML files of `<seg id="N">...</seg>` lines.

    newstest2014-deen-src.en.sgm                  newstest2014-deen-ref.de.sgm
    <srcset setid="newstest2014" srclang="any">   <refset setid="newstest2014" srclang="any" trglang="de">
    <doc sysid="ref" docid="1012-bbc" ...>        <doc sysid="ref" docid="1012-bbc" ...>
    <seg id="1">Gutach: Noise &amp; Co.</seg>    <seg id="1">Gutach: Lärm &amp; Co.</seg>

Each `<seg>` line is one sentence, in file order; its text has the XML escapes of the WMT tools undone
(`&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;` and numeric references such as `&#39;` or `&#x2019;`; nothing
else, so a stray "AT&T" stays as it is). The other lines (set, document and paragraph tags) only say which
document a segment belongs to. A source and a reference file align when they hold the same documents and
segment ids in the same order.
"""

import re

from t2t_repro.errors import UserError

_SEG = re.compile(r"\s*<seg\b[^>]*?\bid\s*=\s*\"?([^\">\s]*)\"?[^>]*>(.*)</seg>\s*", re.IGNORECASE | re.DOTALL)
_DOC = re.compile(r"\s*<doc\b[^>]*?\bdocid\s*=\s*\"([^\"]*)\"", re.IGNORECASE)
_ENTITY = re.compile(r"&(amp|lt|gt|quot|apos|#[0-9]+|#[xX][0-9a-fA-F]+);")
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}


def unescape(text):
    """`text` with the XML escapes undone: the five named entities and numeric character references."""

    def character(match):
        name = match.group(1)
        if name in _NAMED:
            return _NAMED[name]
        code = int(name[2:], 16) if name[1] in "xX" else int(name[1:])
        try:
            return chr(code)
        except (ValueError, OverflowError):
            return match.group(0)  # not a character: left as written

    return _ENTITY.sub(character, text)


def read_segments(lines, path):
    """(document id, segment id, text) of every `<seg>` line of an SGML file's `lines`, in order; `path` names
    the file in errors. A file without any segment is a UserError."""
    document = ""
    segments = []
    for number, line in enumerate(lines, 1):
        doc = _DOC.match(line)
        if doc:
            document = doc.group(1)
            continue
        seg = _SEG.fullmatch(line)
        if seg:
            segments.append((document, seg.group(1), unescape(seg.group(2))))
        elif line.lstrip().lower().startswith("<seg"):
            raise UserError(f'{path}:{number}: a <seg> line must hold one whole segment, <seg id="N">text</seg>; '
                            f"found {line.strip()[:60]!r}")
    if not segments:
        raise UserError(f'{path} holds no <seg id="N">...</seg> line: not a WMT SGML file')
    return segments


def aligned_texts(source_segments, target_segments, source_path, target_path):
    """The (source, target) texts of two SGML files' segments, which must name the same documents and segments
    in the same order."""
    if len(source_segments) != len(target_segments):
        raise UserError(f"{source_path} has {len(source_segments)} segments and {target_path} "
                        f"{len(target_segments)}; a source and its reference must align")
    for (source_doc, source_id, _), (target_doc, target_id, _) in zip(source_segments, target_segments):
        if (source_doc, source_id) != (target_doc, target_id):
            raise UserError(f"{source_path} and {target_path} do not align: document {source_doc!r} segment "
                            f"{source_id} faces document {target_doc!r} segment {target_id}")
    return [(source[2], target[2]) for source, target in zip(source_segments, target_segments)]

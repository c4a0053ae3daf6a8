"""Reading Rust source the way the `scripts/check-*` checks need it: the
text with comments and literals blanked, so that braces, `fn` and `use`
inside them do not count, and with test-only code blanked. Every function
keeps newlines where they were, so positions still give line numbers.
"""

import re


def strip_comments_and_literals(text):
    """`text` with comments, strings and char literals blanked (newlines
    kept), so that braces and `use` inside them do not count."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
            continue
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        raw = re.match(r'b?r(#*)"', text[i:i + 260]) if c in "br" else None
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find('"' + raw.group(1), i + raw.end())
            j = n if end < 0 else end + 1 + len(raw.group(1))
            out.append('""' + re.sub(r"[^\n]", " ", text[i:j])[2:])
            i = j
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 1:j]))
            i = j + 1
            continue
        if c == "'":
            # A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'])'", text[i:i + 12])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out)


def matching_brace(text, open_at):
    """The position of the `}` that closes the `{` at `open_at` (the end
    of `text` if none does)."""
    depth = 0
    for j in range(open_at, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


def blank(text, start, end):
    """`text` with `text[start:end]` turned to spaces, newlines kept."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def drop_test_code(text):
    """Blanks every item under `#[cfg(test)]`: up to its first `;` or the
    end of its first braced block, whichever comes first."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]", text)
        if not m:
            return text
        j = m.end()
        while j < len(text) and text[j] not in ";{":
            j += 1
        end = j + 1 if j >= len(text) or text[j] == ";" else matching_brace(text, j) + 1
        text = blank(text, m.start(), end)

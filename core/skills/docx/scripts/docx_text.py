#!/usr/bin/env python3
"""Print the text of a Word .docx with python-docx: paragraphs and tables in document order.

Usage: python3 docx_text.py IN.docx [--styles]

Paragraphs print as lines (with --styles prefixed by "[<style name>] "), tables as rows of
cells separated by " | ". Headers, footers, comments and tracked changes are not printed.
Exit status: 0 read, 2 bad arguments or unreadable file, 3 a required Python package is missing.
"""

import argparse
import sys

PROG = "docx_text.py"

try:
    from docx import Document
    from docx.table import Table
    from docx.text.paragraph import Paragraph
except ImportError:
    sys.stderr.write(
        f"{PROG}: error: the Python package 'python-docx' (imported as docx) is not installed. "
        'Declare it in the environment\'s packages (config.packages.pip: ["python-docx"]) and '
        "start a new session.\n"
    )
    sys.exit(3)


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="Print a .docx's text.")
    ap.add_argument("path")
    ap.add_argument("--styles", action="store_true", help="prefix paragraphs with their style")
    args = ap.parse_args()
    try:
        doc = Document(args.path)
    except Exception as e:
        sys.stderr.write(f"{PROG}: error: cannot open {args.path} as a .docx: {e}\n")
        sys.exit(2)
    # python-docx >= 1.0 iterates paragraphs and tables in order; older ones: paragraphs, then tables
    items = (
        doc.iter_inner_content()
        if hasattr(doc, "iter_inner_content")
        else [*doc.paragraphs, *doc.tables]
    )
    for item in items:
        if isinstance(item, Paragraph):
            prefix = f"[{item.style.name}] " if args.styles and item.style is not None else ""
            print(prefix + item.text)
        elif isinstance(item, Table):
            for row in item.rows:
                print(" | ".join(cell.text for cell in row.cells))


if __name__ == "__main__":
    main()

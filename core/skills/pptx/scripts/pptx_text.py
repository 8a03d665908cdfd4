#!/usr/bin/env python3
"""Print the text of a PowerPoint .pptx with python-pptx, slide by slide.

Usage: python3 pptx_text.py IN.pptx [--notes]

Prints "--- slide N (<layout name>) ---", then the text of every shape (titles, bullets with
their indent level, table rows as cells separated by " | ", "[picture]" for images); --notes
adds the speaker notes.
Exit status: 0 read, 2 bad arguments or unreadable file, 3 a required Python package is missing.
"""

import argparse
import sys

PROG = "pptx_text.py"

try:
    from pptx import Presentation
except ImportError:
    sys.stderr.write(
        f"{PROG}: error: the Python package 'python-pptx' (imported as pptx) is not installed. "
        'Declare it in the environment\'s packages (config.packages.pip: ["python-pptx"]) and '
        "start a new session.\n"
    )
    sys.exit(3)


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="Print a .pptx's text.")
    ap.add_argument("path")
    ap.add_argument("--notes", action="store_true", help="include speaker notes")
    args = ap.parse_args()
    try:
        prs = Presentation(args.path)
    except Exception as e:
        sys.stderr.write(f"{PROG}: error: cannot open {args.path} as a .pptx: {e}\n")
        sys.exit(2)
    for n, slide in enumerate(prs.slides, start=1):
        print(f"--- slide {n} ({slide.slide_layout.name}) ---")
        for shape in slide.shapes:
            if shape.has_text_frame:
                for p in shape.text_frame.paragraphs:
                    if p.text:
                        print("  " * p.level + p.text)
            elif getattr(shape, "has_table", False) and shape.has_table:
                for row in shape.table.rows:
                    print(" | ".join(cell.text for cell in row.cells))
            elif shape.shape_type == 13:  # MSO_SHAPE_TYPE.PICTURE
                print("[picture]")
        if args.notes and slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame.text
            if notes:
                print(f"[notes] {notes}")


if __name__ == "__main__":
    main()

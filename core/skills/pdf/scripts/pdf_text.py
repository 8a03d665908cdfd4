#!/usr/bin/env python3
"""Extract the text of a PDF with pypdf (to read an input, or to check a generated file).

Usage: python3 pdf_text.py IN.pdf [--pages 1-3,5] [--info]

Prints each page as "--- page N ---" followed by its text. --info prints the page count and the
metadata (title, author, ...) first. Scanned PDFs (images only) have no text to extract.
Exit status: 0 read, 2 bad arguments or unreadable file, 3 a required Python package is missing.
"""

import argparse
import sys

PROG = "pdf_text.py"

try:
    from pypdf import PdfReader
except ImportError:
    sys.stderr.write(
        f"{PROG}: error: the Python package 'pypdf' is not installed. Declare it in the "
        'environment\'s packages (config.packages.pip: ["pypdf"]) and start a new session.\n'
    )
    sys.exit(3)


def parse_pages(spec, count):
    """'1-3,5' -> [0, 1, 2, 4] (1-based, inclusive)."""
    pages = []
    for part in spec.split(","):
        part = part.strip()
        try:
            if "-" in part:
                a, b = part.split("-", 1)
                lo, hi = int(a), int(b) if b else count
            else:
                lo = hi = int(part)
        except ValueError:
            raise ValueError(f"--pages: {part!r} is not a page or a range like 2-4")
        if lo < 1 or hi > count or lo > hi:
            raise ValueError(f"--pages: {part!r} is outside 1-{count}")
        pages.extend(range(lo - 1, hi))
    return pages


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="Extract a PDF's text.")
    ap.add_argument("path")
    ap.add_argument("--pages", help="1-based pages, e.g. 1-3,5 (default: all)")
    ap.add_argument("--info", action="store_true", help="print page count and metadata first")
    args = ap.parse_args()
    try:
        reader = PdfReader(args.path)
        count = len(reader.pages)
    except Exception as e:
        sys.stderr.write(f"{PROG}: error: cannot open {args.path} as a PDF: {e}\n")
        sys.exit(2)
    try:
        pages = parse_pages(args.pages, count) if args.pages else range(count)
    except ValueError as e:
        sys.stderr.write(f"{PROG}: error: {e}\n")
        sys.exit(2)
    if args.info:
        print(f"pages: {count}")
        for k, v in (reader.metadata or {}).items():
            print(f"{str(k).lstrip('/').lower()}: {v}")
    for i in pages:
        print(f"--- page {i + 1} ---")
        print(reader.pages[i].extract_text() or "")


if __name__ == "__main__":
    main()

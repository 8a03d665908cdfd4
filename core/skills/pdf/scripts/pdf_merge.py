#!/usr/bin/env python3
"""Merge PDFs, or pick, reorder and rotate pages, with pypdf.

Usage: python3 pdf_merge.py OUT.pdf IN.pdf[:PAGES] [IN2.pdf[:PAGES] ...] [--rotate 90]

PAGES is 1-based: "a.pdf:1-3" (pages 1 to 3), "a.pdf:5,2" (page 5 then 2), "a.pdf:4-" (4 to the
end). Without PAGES every page is taken. --rotate turns every output page clockwise by 90, 180
or 270 degrees. Split a file by running this once per part: pdf_merge.py part1.pdf in.pdf:1-2
Exit status: 0 written, 2 bad arguments or unreadable file, 3 a required Python package is missing.
"""

import argparse
import os
import sys

PROG = "pdf_merge.py"

try:
    from pypdf import PdfReader, PdfWriter
except ImportError:
    sys.stderr.write(
        f"{PROG}: error: the Python package 'pypdf' is not installed. Declare it in the "
        'environment\'s packages (config.packages.pip: ["pypdf"]) and start a new session.\n'
    )
    sys.exit(3)


def fail(msg):
    sys.stderr.write(f"{PROG}: error: {msg}\n")
    sys.exit(2)


def page_list(spec, count, src):
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
            fail(f"{src}: {part!r} is not a page or a range like 2-4")
        if lo < 1 or hi > count or lo > hi:
            fail(f"{src}: pages {part!r} are outside 1-{count}")
        pages.extend(range(lo - 1, hi))
    return pages


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="Merge PDFs / select pages.")
    ap.add_argument("out")
    ap.add_argument("inputs", nargs="+", help="IN.pdf or IN.pdf:PAGES")
    ap.add_argument("--rotate", type=int, choices=[90, 180, 270])
    args = ap.parse_args()
    if not args.out.lower().endswith(".pdf"):
        fail("OUT must end in .pdf")
    writer = PdfWriter()
    for src in args.inputs:
        path, pages = src, None
        if ":" in src and not os.path.exists(src):
            path, pages = src.rsplit(":", 1)
        try:
            reader = PdfReader(path)
            count = len(reader.pages)
        except Exception as e:
            fail(f"cannot open {path} as a PDF: {e}")
        for i in page_list(pages, count, src) if pages else range(count):
            page = writer.add_page(reader.pages[i])
            if args.rotate:
                page.rotate(args.rotate)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "wb") as f:
        writer.write(f)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes, {len(writer.pages)} page(s))")


if __name__ == "__main__":
    main()

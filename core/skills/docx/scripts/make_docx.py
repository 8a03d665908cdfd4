#!/usr/bin/env python3
"""Build a Word .docx document from a JSON spec with python-docx.

Usage: python3 make_docx.py SPEC.json OUT.docx      (SPEC may be '-' for stdin)

Spec:
{
  "title": "Project plan",                 # Title style paragraph + document core property
  "author": "PMO",                         # core property (optional)
  "blocks": [
    {"type": "heading", "text": "Goals", "level": 1},            # level 1-4
    {"type": "paragraph", "text": "Plain paragraph."},
    {"type": "paragraph", "runs": [{"text": "Bold ", "bold": true},
                                   {"text": "italic", "italic": true},
                                   {"text": " normal"}], "align": "center"},  # left|center|right|justify
    {"type": "bullets", "items": ["one", "two"]},                # "numbered": true for 1. 2. 3.
    {"type": "table", "rows": [["Task", "Owner"], ["Design", "Ana"]], "header": true},
    {"type": "image", "path": "/mnt/session/outputs/chart.png", "width_inches": 5},
    {"type": "page_break"}
  ]
}
Exit status: 0 written, 2 bad spec or arguments, 3 a required Python package is missing.
"""

import argparse
import json
import os
import sys

PROG = "make_docx.py"

try:
    from docx import Document
    from docx.enum.text import WD_ALIGN_PARAGRAPH
    from docx.shared import Inches
except ImportError:
    sys.stderr.write(
        f"{PROG}: error: the Python package 'python-docx' (imported as docx) is not installed. "
        'Declare it in the environment\'s packages (config.packages.pip: ["python-docx"]) and '
        "start a new session.\n"
    )
    sys.exit(3)


class SpecError(Exception):
    pass


ALIGN = {
    "left": WD_ALIGN_PARAGRAPH.LEFT,
    "center": WD_ALIGN_PARAGRAPH.CENTER,
    "right": WD_ALIGN_PARAGRAPH.RIGHT,
    "justify": WD_ALIGN_PARAGRAPH.JUSTIFY,
}


def load_spec(path):
    try:
        if path == "-":
            return json.load(sys.stdin)
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise SpecError(f"spec file not found: {path}")
    except json.JSONDecodeError as e:
        raise SpecError(f"spec is not valid JSON: {e}")


def text(v, where):
    if not isinstance(v, (str, int, float)):
        raise SpecError(f"{where}: must be a string")
    return str(v)


def add_runs(par, b, where):
    if "runs" in b:
        if not isinstance(b["runs"], list):
            raise SpecError(f"{where}.runs: a list of {{text, bold?, italic?, underline?}}")
        for j, r in enumerate(b["runs"]):
            if not isinstance(r, dict):
                raise SpecError(f"{where}.runs[{j}]: must be an object with 'text'")
            run = par.add_run(text(r.get("text"), f"{where}.runs[{j}].text"))
            run.bold = bool(r.get("bold")) or None
            run.italic = bool(r.get("italic")) or None
            run.underline = bool(r.get("underline")) or None
    elif "text" in b:
        par.add_run(text(b["text"], f"{where}.text"))
    else:
        raise SpecError(f"{where}: needs 'text' or 'runs'")
    if "align" in b:
        if b["align"] not in ALIGN:
            raise SpecError(f"{where}.align: one of {', '.join(ALIGN)}")
        par.alignment = ALIGN[b["align"]]


def build(spec):
    if not isinstance(spec, dict):
        raise SpecError("spec: must be a JSON object")
    blocks = spec.get("blocks", [])
    if not isinstance(blocks, list):
        raise SpecError("spec.blocks: must be a list")
    doc = Document()
    if spec.get("title"):
        doc.add_heading(text(spec["title"], "spec.title"), level=0)
        doc.core_properties.title = str(spec["title"])
    if spec.get("author"):
        doc.core_properties.author = str(spec["author"])
    for i, b in enumerate(blocks):
        where = f"spec.blocks[{i}]"
        if not isinstance(b, dict) or "type" not in b:
            raise SpecError(f"{where}: must be an object with a 'type'")
        t = b["type"]
        if t == "heading":
            level = b.get("level", 1)
            if level not in (1, 2, 3, 4):
                raise SpecError(f"{where}.level: 1 to 4")
            doc.add_heading(text(b.get("text"), f"{where}.text"), level=level)
        elif t == "paragraph":
            add_runs(doc.add_paragraph(), b, where)
        elif t == "bullets":
            items = b.get("items")
            if not isinstance(items, list) or not items:
                raise SpecError(f"{where}.items: a non-empty list of strings")
            style = "List Number" if b.get("numbered") else "List Bullet"
            for j, it in enumerate(items):
                doc.add_paragraph(text(it, f"{where}.items[{j}]"), style=style)
        elif t == "table":
            rows = b.get("rows")
            if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
                raise SpecError(f"{where}.rows: a non-empty list of rows (lists of cells)")
            width = max(len(r) for r in rows)
            table = doc.add_table(rows=len(rows), cols=width)
            table.style = "Table Grid"
            for r, row in enumerate(rows):
                for c, v in enumerate(row):
                    cell = table.cell(r, c)
                    cell.text = "" if v is None else str(v)
                    if r == 0 and b.get("header", True):
                        for run in cell.paragraphs[0].runs:
                            run.bold = True
        elif t == "image":
            path = b.get("path")
            if not isinstance(path, str) or not os.path.exists(path):
                raise SpecError(f"{where}.path: no such image file: {path}")
            try:
                doc.add_picture(path, width=Inches(float(b.get("width_inches", 5))))
            except Exception as e:
                raise SpecError(f"{where}.path: cannot read image {path}: {e}")
        elif t == "page_break":
            doc.add_page_break()
        else:
            raise SpecError(
                f"{where}.type: unknown {t!r} (heading, paragraph, bullets, table, image, page_break)"
            )
    return doc, len(blocks)


def main():
    ap = argparse.ArgumentParser(
        prog=PROG, description="Build a .docx from a JSON spec (see the docstring)."
    )
    ap.add_argument("spec", help="JSON spec file, or - for stdin")
    ap.add_argument("out", help="output .docx path, e.g. /mnt/session/outputs/plan.docx")
    args = ap.parse_args()
    if not args.out.lower().endswith(".docx"):
        ap.error("OUT must end in .docx")
    try:
        doc, n = build(load_spec(args.spec))
    except SpecError as e:
        sys.stderr.write(f"{PROG}: error: {e}\n")
        sys.exit(2)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    doc.save(args.out)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes, {n} block(s))")


if __name__ == "__main__":
    main()

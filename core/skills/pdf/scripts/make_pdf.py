#!/usr/bin/env python3
"""Build a PDF document from a JSON spec with reportlab (platypus: text flows onto new pages).

Usage: python3 make_pdf.py SPEC.json OUT.pdf      (SPEC may be '-' for stdin)

Spec:
{
  "title": "Quarterly report",          # first heading and the PDF's metadata title
  "author": "Finance",                  # metadata (optional)
  "page_size": "A4",                    # "A4" (default) | "letter"; "landscape": true rotates
  "font": "/path/to/font.ttf",          # optional TTF for text outside Latin-1 (DejaVu Sans is
                                        #   used automatically when installed and needed)
  "blocks": [
    {"type": "heading", "text": "Summary", "level": 1},       # level 1-3
    {"type": "paragraph", "text": "Plain text; & < > are safe."},
    {"type": "paragraph", "text": "<b>bold</b> and <i>italic</i>", "markup": true},
    {"type": "bullets", "items": ["one", "two"]},               # "numbered": true for 1. 2. 3.
    {"type": "table", "rows": [["Region", "Total"], ["North", 255]], "header": true,
     "col_widths": [200, 100]},                                  # points (optional)
    {"type": "image", "path": "/mnt/session/outputs/chart.png", "width": 400},
    {"type": "spacer", "height": 12},
    {"type": "page_break"}
  ]
}
"paragraphs": ["...", "..."] and "table": [[...]] at the top level are accepted as shorthands
(appended after "blocks").
Exit status: 0 written, 2 bad spec or arguments, 3 a required Python package is missing.
"""

import argparse
import json
import os
import sys
from xml.sax.saxutils import escape

PROG = "make_pdf.py"

try:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4, landscape, letter
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.lib.units import inch
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.platypus import (
        Image,
        ListFlowable,
        ListItem,
        PageBreak,
        Paragraph,
        SimpleDocTemplate,
        Spacer,
        Table,
        TableStyle,
    )
except ImportError:
    sys.stderr.write(
        f"{PROG}: error: the Python package 'reportlab' is not installed. Declare it in the "
        'environment\'s packages (config.packages.pip: ["reportlab"]) and start a new session.\n'
    )
    sys.exit(3)

DEJAVU = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
]


class SpecError(Exception):
    pass


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


def all_text(spec):
    """Every string in the spec (to decide whether a Unicode font is needed)."""
    if isinstance(spec, str):
        yield spec
    elif isinstance(spec, dict):
        for v in spec.values():
            yield from all_text(v)
    elif isinstance(spec, list):
        for v in spec:
            yield from all_text(v)


def needs_unicode(spec):
    for s in all_text(spec):
        try:
            s.encode("cp1252")
        except UnicodeEncodeError:
            return True
    return False


def pick_font(spec):
    """(regular, bold) font names; registers a TTF when asked for or needed."""
    path = spec.get("font")
    if not path and needs_unicode(spec):
        path = next((p for p in DEJAVU if os.path.exists(p)), None)
        if not path:
            sys.stderr.write(
                f"{PROG}: warning: text outside Latin-1 and no Unicode font found; "
                'set "font" to a .ttf path or some characters will not render\n'
            )
    if not path:
        return "Helvetica", "Helvetica-Bold"
    if not os.path.exists(path):
        raise SpecError(f"spec.font: no such file: {path}")
    try:
        pdfmetrics.registerFont(TTFont("SpecFont", path))
    except Exception as e:
        raise SpecError(f"spec.font: cannot load {path}: {e}")
    bold_path = path.replace(".ttf", "-Bold.ttf")
    if bold_path != path and os.path.exists(bold_path):
        pdfmetrics.registerFont(TTFont("SpecFont-Bold", bold_path))
        return "SpecFont", "SpecFont-Bold"
    return "SpecFont", "SpecFont"


def text_of(block, where, key="text"):
    if key not in block:
        raise SpecError(f"{where}.{key}: required")
    v = block[key]
    if not isinstance(v, (str, int, float)):
        raise SpecError(f"{where}.{key}: must be a string")
    s = str(v)
    return s if block.get("markup") else escape(s).replace("\n", "<br/>")


def para(markup, style, where):
    """A Paragraph; reportlab parses its markup here, so bad markup names its block."""
    try:
        return Paragraph(markup, style)
    except ValueError as e:
        msg = str(e).strip().splitlines()[-1]
        raise SpecError(f'{where}: invalid markup ({msg}); close every tag or drop "markup"')


def build(spec, out):
    if not isinstance(spec, dict):
        raise SpecError("spec: must be a JSON object")
    blocks = spec.get("blocks", [])
    if not isinstance(blocks, list):
        raise SpecError("spec.blocks: must be a list")
    blocks = list(blocks)
    for p in spec.get("paragraphs") or []:
        blocks.append({"type": "paragraph", "text": p})
    if spec.get("table"):
        blocks.append({"type": "table", "rows": spec["table"], "header": True})
    regular, bold = pick_font(spec)
    ss = getSampleStyleSheet()
    body = ParagraphStyle(
        "body", parent=ss["BodyText"], fontName=regular, fontSize=10.5, leading=14
    )
    cell = ParagraphStyle("cell", parent=body, fontSize=9.5, leading=12)
    head_cell = ParagraphStyle("headcell", parent=cell, fontName=bold)
    heads = {n: ParagraphStyle(f"h{n}", parent=ss[f"Heading{n}"], fontName=bold) for n in (1, 2, 3)}
    title_style = ParagraphStyle("title", parent=ss["Title"], fontName=bold)

    story = []
    if spec.get("title"):
        story.append(Paragraph(escape(str(spec["title"])), title_style))
    for i, b in enumerate(blocks):
        where = f"spec.blocks[{i}]"
        if not isinstance(b, dict) or "type" not in b:
            raise SpecError(f"{where}: must be an object with a 'type'")
        t = b["type"]
        if t == "heading":
            level = b.get("level", 1)
            if level not in (1, 2, 3):
                raise SpecError(f"{where}.level: 1, 2 or 3")
            story.append(para(text_of(b, where), heads[level], where))
        elif t == "paragraph":
            story.append(para(text_of(b, where), body, where))
        elif t == "bullets":
            items = b.get("items")
            if not isinstance(items, list) or not items:
                raise SpecError(f"{where}.items: a non-empty list of strings")
            paras = [
                ListItem(
                    para(
                        text_of({"text": it, "markup": b.get("markup")}, f"{where}.items[{j}]"),
                        body,
                        f"{where}.items[{j}]",
                    )
                )
                for j, it in enumerate(items)
            ]
            story.append(
                ListFlowable(
                    paras,
                    bulletType="1" if b.get("numbered") else "bullet",
                    start=None if b.get("numbered") else "\u2022",
                    bulletFontName=regular,
                )
            )
        elif t == "table":
            rows = b.get("rows")
            if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
                raise SpecError(f"{where}.rows: a non-empty list of rows (lists of cells)")
            header = b.get("header", True)
            width = max(len(r) for r in rows)
            data = [
                [
                    Paragraph(
                        escape("" if c is None else str(c)),
                        head_cell if (header and r == 0) else cell,
                    )
                    for c in row
                ]
                + [""] * (width - len(row))
                for r, row in enumerate(rows)
            ]
            cw = b.get("col_widths")
            if cw is not None and (not isinstance(cw, list) or len(cw) != width):
                raise SpecError(f"{where}.col_widths: a list of {width} widths in points")
            table = Table(data, colWidths=cw, repeatRows=1 if header else 0, hAlign="LEFT")
            style = [
                ("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ]
            if header:
                style.append(("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#D9E1F2")))
            table.setStyle(TableStyle(style))
            story.append(table)
            story.append(Spacer(1, 8))
        elif t == "image":
            path = b.get("path")
            if not isinstance(path, str) or not os.path.exists(path):
                raise SpecError(f"{where}.path: no such image file: {path}")
            try:
                ImageReader(
                    path
                ).getSize()  # reads the file now: a bad image fails here, not in build
                img = Image(path)
            except Exception as e:
                raise SpecError(
                    f"{where}.path: cannot read image {path}: {str(e).strip().splitlines()[-1]}"
                )
            w = float(b.get("width", min(img.imageWidth, 6 * inch)))
            img.drawHeight = img.imageHeight * w / img.imageWidth
            img.drawWidth = w
            story.append(img)
        elif t == "spacer":
            story.append(Spacer(1, float(b.get("height", 12))))
        elif t == "page_break":
            story.append(PageBreak())
        else:
            raise SpecError(
                f"{where}.type: unknown {t!r} (heading, paragraph, bullets, table, image, spacer, page_break)"
            )
    if not story:
        raise SpecError("spec: nothing to write (give a title or blocks)")
    size = {"a4": A4, "letter": letter}.get(str(spec.get("page_size", "A4")).lower())
    if size is None:
        raise SpecError("spec.page_size: 'A4' or 'letter'")
    if spec.get("landscape"):
        size = landscape(size)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    doc = SimpleDocTemplate(
        out,
        pagesize=size,
        title=str(spec.get("title", "")),
        author=str(spec.get("author", "")),
        leftMargin=0.8 * inch,
        rightMargin=0.8 * inch,
        topMargin=0.8 * inch,
        bottomMargin=0.8 * inch,
    )
    doc.build(story)
    return doc.page


def main():
    ap = argparse.ArgumentParser(
        prog=PROG, description="Build a PDF from a JSON spec (see the docstring)."
    )
    ap.add_argument("spec", help="JSON spec file, or - for stdin")
    ap.add_argument("out", help="output .pdf path, e.g. /mnt/session/outputs/report.pdf")
    args = ap.parse_args()
    if not args.out.lower().endswith(".pdf"):
        ap.error("OUT must end in .pdf")
    try:
        pages = build(load_spec(args.spec), args.out)
    except SpecError as e:
        sys.stderr.write(f"{PROG}: error: {e}\n")
        sys.exit(2)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes, {pages} page(s))")


if __name__ == "__main__":
    main()

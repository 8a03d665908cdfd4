#!/usr/bin/env python3
"""Build a PowerPoint .pptx deck from a JSON spec with python-pptx (default 16:9 template).

Usage: python3 make_pptx.py SPEC.json OUT.pptx      (SPEC may be '-' for stdin)

Spec:
{
  "slides": [
    {"layout": "title", "title": "Q3 review", "subtitle": "Finance, 2026"},
    {"layout": "bullets", "title": "Highlights",
     "bullets": ["Revenue +12%", {"text": "EMEA +20%", "level": 1}, "Costs flat"],
     "notes": "Speaker notes for this slide"},
    {"layout": "table", "title": "By region", "rows": [["Region", "Total"], ["North", 255]]},
    {"layout": "image", "title": "Trend", "image": "/mnt/session/outputs/chart.png"},
    {"layout": "section", "title": "Appendix"},
    {"layout": "blank"}
  ],
  "widescreen": true                      # 16:9 (default); false for 4:3
}
Exit status: 0 written, 2 bad spec or arguments, 3 a required Python package is missing.
"""

import argparse
import json
import os
import sys

PROG = "make_pptx.py"

try:
    from pptx import Presentation
    from pptx.util import Emu, Inches, Pt
except ImportError:
    sys.stderr.write(
        f"{PROG}: error: the Python package 'python-pptx' (imported as pptx) is not installed. "
        'Declare it in the environment\'s packages (config.packages.pip: ["python-pptx"]) and '
        "start a new session.\n"
    )
    sys.exit(3)

# layouts of python-pptx's default template
LAYOUT = {"title": 0, "bullets": 1, "section": 2, "title_only": 5, "blank": 6}


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


def text(v, where):
    if not isinstance(v, (str, int, float)):
        raise SpecError(f"{where}: must be a string")
    return str(v)


def content_box(prs, slide):
    """Left, top, width, height below the title."""
    left = Inches(0.5)
    top = Inches(1.5)
    return left, top, Emu(prs.slide_width - 2 * left), Emu(prs.slide_height - top - Inches(0.5))


def build(spec):
    if not isinstance(spec, dict) or not isinstance(spec.get("slides"), list) or not spec["slides"]:
        raise SpecError("spec.slides: must be a non-empty list of slides")
    prs = Presentation()
    if spec.get("widescreen", True):
        prs.slide_width, prs.slide_height = Inches(13.333), Inches(7.5)
    for i, s in enumerate(spec["slides"]):
        where = f"spec.slides[{i}]"
        if not isinstance(s, dict):
            raise SpecError(f"{where}: must be an object")
        kind = s.get("layout", "bullets")
        if kind in ("table", "image"):
            layout = prs.slide_layouts[LAYOUT["title_only"]]
        elif kind in LAYOUT:
            layout = prs.slide_layouts[LAYOUT[kind]]
        else:
            raise SpecError(
                f"{where}.layout: one of title, bullets, table, image, section, title_only, blank"
            )
        slide = prs.slides.add_slide(layout)
        if slide.shapes.title is not None:
            if "title" in s:
                slide.shapes.title.text = text(s["title"], f"{where}.title")
        if kind == "title" and "subtitle" in s:
            slide.placeholders[1].text = text(s["subtitle"], f"{where}.subtitle")
        if kind == "bullets":
            items = s.get("bullets", [])
            if not isinstance(items, list):
                raise SpecError(f"{where}.bullets: a list of strings or {{text, level}}")
            body = slide.placeholders[1]
            body.width = Emu(prs.slide_width - 2 * body.left)
            tf = body.text_frame
            for j, it in enumerate(items):
                level = 0
                if isinstance(it, dict):
                    level = it.get("level", 0)
                    if level not in (0, 1, 2, 3, 4):
                        raise SpecError(f"{where}.bullets[{j}].level: 0 to 4")
                    it = it.get("text")
                para = tf.paragraphs[0] if j == 0 else tf.add_paragraph()
                para.text = text(it, f"{where}.bullets[{j}]")
                para.level = level
        elif kind == "table":
            rows = s.get("rows")
            if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
                raise SpecError(f"{where}.rows: a non-empty list of rows (lists of cells)")
            width = max(len(r) for r in rows)
            left, top, w, h = content_box(prs, slide)
            shape = slide.shapes.add_table(
                len(rows), width, left, top, w, Emu(min(h, Inches(0.4) * len(rows)))
            )
            for r, row in enumerate(rows):
                for c in range(width):
                    v = row[c] if c < len(row) else ""
                    cell = shape.table.cell(r, c)
                    cell.text = "" if v is None else str(v)
                    for p in cell.text_frame.paragraphs:
                        for run in p.runs:
                            run.font.size = Pt(14)
        elif kind == "image":
            path = s.get("image")
            if not isinstance(path, str) or not os.path.exists(path):
                raise SpecError(f"{where}.image: no such image file: {path}")
            left, top, w, h = content_box(prs, slide)
            try:
                pic = slide.shapes.add_picture(path, left, top, height=h)
            except Exception as e:
                raise SpecError(f"{where}.image: cannot read image {path}: {e}")
            if pic.width > w:  # too wide: fit the width instead, keeping the aspect ratio
                ratio = w / pic.width
                pic.width, pic.height = int(w), int(pic.height * ratio)
            pic.left = int((prs.slide_width - pic.width) / 2)
        if "notes" in s:
            slide.notes_slide.notes_text_frame.text = text(s["notes"], f"{where}.notes")
    return prs


def main():
    ap = argparse.ArgumentParser(
        prog=PROG, description="Build a .pptx from a JSON spec (see the docstring)."
    )
    ap.add_argument("spec", help="JSON spec file, or - for stdin")
    ap.add_argument("out", help="output .pptx path, e.g. /mnt/session/outputs/deck.pptx")
    args = ap.parse_args()
    if not args.out.lower().endswith(".pptx"):
        ap.error("OUT must end in .pptx")
    try:
        prs = build(load_spec(args.spec))
    except SpecError as e:
        sys.stderr.write(f"{PROG}: error: {e}\n")
        sys.exit(2)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    prs.save(args.out)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes, {len(prs.slides)} slide(s))")


if __name__ == "__main__":
    main()
